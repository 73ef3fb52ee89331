// ConvPlanBook: see Note [convolution plan books] in conv_plan_book.h.
#include "framework/ops/conv_plan_book.h"

#include <cstdio>

#include "framework/core/error.h"
#include "framework/core/fnv1a.h"

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
                      ": the choices do not carry over; time them again with --cudnn-benchmark --conv-plans "
                      "and a new file"));
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
    for (int64_t v : {int64_t(k.dir), k.n, k.h, k.w, k.c, k.k, k.r, k.stride, k.pad, int64_t(k.dtype),
                      int64_t(c.legacy_algo), int64_t(c.candidate), c.engine})
      f.u64(uint64_t(v));
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(f.h));
  return buf;
}

}  // namespace tr
