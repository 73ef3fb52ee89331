// ConvPlanBook: see Note [convolution plan books] in conv_plan_book.h.
#include "framework/ops/conv_plans/conv_plan_book.h"

#include <cstdio>
#include <cstring>

#include "framework/comm/world.h"
#include "framework/core/error.h"
#include "framework/core/fnv1a.h"
#include "framework/core/setting.h"

namespace tr {

std::string ConvPlanChoice::str() const {
  std::string s = candidate >= 0 ? cat("engine candidate ", candidate, " (cuDNN engine ", engine, ")")
                                 : cat("legacy algorithm ", legacy_algo);
  if (time_ms >= 0) s += cat(", ", time_ms, " ms (legacy plan ", legacy_ms, " ms)");
  return s;
}

std::string ConvPlanPlace::str() const {
  return cat(device, " (compute capability ", cc_major, ".", cc_minor, "), cuDNN ", cudnn_version, ", ",
             deterministic ? "deterministic" : "non-deterministic", " algorithms");
}

std::string_view conv_plan_use_name(ConvPlanUse u) {
  switch (u) {
    case ConvPlanUse::Observe: return "observe";
    case ConvPlanUse::Record: return "record";
    case ConvPlanUse::Replay: return "replay";
  }
  return "?";
}

ConvPlanBook::ConvPlanBook(ConvPlanUse use, std::string source) : use_(use), source_(std::move(source)) {}

void ConvPlanBook::bind(const ConvPlanPlace& here) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!place_) {
    place_ = here;
    return;
  }
  if (*place_ == here || !decides()) return;
  throw UserError(cat(source_.empty() ? std::string("the convolution plans") : source_, " were timed on ",
                      place_->str(), ", but this run is on ", here.str(),
                      ": the choices do not carry over; time them again with ", setting("conv_plans"),
                      " and a new file"));
}

std::optional<ConvPlanPlace> ConvPlanBook::place() const {
  std::lock_guard<std::mutex> lock(mu_);
  return place_;
}

std::optional<ConvPlanChoice> ConvPlanBook::find(const ConvKey& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = choices_.find(key);
  if (it == choices_.end()) return std::nullopt;
  used_.insert(key);
  return it->second;
}

ConvPlanChoice ConvPlanBook::record(const ConvKey& key, const ConvPlanChoice& choice) {
  std::lock_guard<std::mutex> lock(mu_);
  used_.insert(key);
  auto [it, inserted] = choices_.emplace(key, choice);
  if (inserted) ++unsaved_;
  return it->second;
}

void ConvPlanBook::add_loaded(const ConvKey& key, const ConvPlanChoice& choice) {
  std::lock_guard<std::mutex> lock(mu_);
  TR_USER_CHECK(choices_.emplace(key, choice).second, source_, ": ", key.str(), " is listed twice");
}

namespace {

// Fixed-width fields, least significant byte first (Fnv1a's order).
void put(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(char((v >> (8 * i)) & 0xff));
}
struct Unpacker {
  const std::string& in;
  size_t at = 0;
  uint64_t get(int bytes) {
    TR_CHECK(at + size_t(bytes) <= in.size(), "ConvPlanBook::adopt: ", in.size(), " bytes end early");
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= uint64_t(uint8_t(in[at + size_t(i)])) << (8 * i);
    at += size_t(bytes);
    return v;
  }
};
uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

}  // namespace

std::string ConvPlanBook::pack() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  put(out, place_ ? 1 : 0, 1);
  if (place_) {
    put(out, place_->device.size(), 4);
    out += place_->device;
    put(out, uint64_t(place_->cc_major), 4);
    put(out, uint64_t(place_->cc_minor), 4);
    put(out, uint64_t(place_->cudnn_version), 8);
    put(out, place_->deterministic ? 1 : 0, 1);
  }
  put(out, choices_.size(), 8);
  for (const auto& [k, c] : choices_) {
    for (int64_t v : k.ints()) put(out, uint64_t(v), 8);
    for (int64_t v : {int64_t(c.legacy_algo), int64_t(c.candidate), c.engine}) put(out, uint64_t(v), 8);
    put(out, float_bits(c.time_ms), 4);
    put(out, float_bits(c.legacy_ms), 4);
  }
  return out;
}

void ConvPlanBook::adopt(const std::string& packed) {
  Unpacker u{packed};
  if (u.get(1)) {
    ConvPlanPlace p;
    const size_t n = size_t(u.get(4));
    TR_CHECK(u.at + n <= packed.size(), "ConvPlanBook::adopt: a device name past the end");
    p.device = packed.substr(u.at, n);
    u.at += n;
    p.cc_major = int(u.get(4));
    p.cc_minor = int(u.get(4));
    p.cudnn_version = int64_t(u.get(8));
    p.deterministic = u.get(1) != 0;
    bind(p);
  }
  const uint64_t count = u.get(8);
  std::lock_guard<std::mutex> lock(mu_);
  for (uint64_t i = 0; i < count; ++i) {
    std::array<int64_t, 10> ints;
    for (int64_t& v : ints) v = int64_t(u.get(8));
    const ConvKey k = ConvKey::from_ints(ints);
    ConvPlanChoice c;
    c.legacy_algo = int(int64_t(u.get(8)));
    c.candidate = int(int64_t(u.get(8)));
    c.engine = int64_t(u.get(8));
    c.time_ms = bits_float(uint32_t(u.get(4)));
    c.legacy_ms = bits_float(uint32_t(u.get(4)));
    choices_.insert_or_assign(k, c);  // the first process's choice wins over one read from a local file
  }
  TR_CHECK(u.at == packed.size(), "ConvPlanBook::adopt: ", packed.size() - u.at, " bytes left over");
}

void share_first_process_plans(ConvPlanBook& book, World& world, std::chrono::milliseconds timeout,
                               const std::function<void()>& prepare) {
  const bool first = world.process() == 0;
  if (first) prepare();
  std::string packed = first ? book.pack() : std::string();
  uint64_t bytes = packed.size();
  world.broadcast(&bytes, sizeof bytes, 0, "the first process's convolution plans (size)", timeout);
  packed.resize(size_t(bytes));
  world.broadcast(packed.data(), packed.size(), 0, "the first process's convolution plans", timeout);
  if (first) return;
  book.adopt(packed);
  prepare();
}

std::vector<std::pair<ConvKey, ConvPlanChoice>> ConvPlanBook::entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {choices_.begin(), choices_.end()};
}

size_t ConvPlanBook::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return choices_.size();
}

size_t ConvPlanBook::used() const {
  std::lock_guard<std::mutex> lock(mu_);
  return used_.size();
}

size_t ConvPlanBook::unsaved() const {
  std::lock_guard<std::mutex> lock(mu_);
  return unsaved_;
}

void ConvPlanBook::mark_saved() {
  std::lock_guard<std::mutex> lock(mu_);
  unsaved_ = 0;
}

std::string ConvPlanBook::digest() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (used_.empty()) return "";
  Fnv1a f;
  for (const ConvKey& k : used_) {
    const ConvPlanChoice& c = choices_.at(k);
    for (int64_t v : k.ints()) f.u64(uint64_t(v));
    for (int64_t v : {int64_t(c.legacy_algo), int64_t(c.candidate), c.engine}) f.u64(uint64_t(v));
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(f.h));
  return buf;
}

}  // namespace tr
