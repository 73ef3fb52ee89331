// --conv-plans FILE: see conv_plans_file.h and Note [convolution plan books].
#include "harness/lib/cli/conv_plans_file.h"

#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>

#include <nlohmann/json.hpp>

#include "framework/comm/world.h"
#include "framework/core/error.h"
#include "harness/lib/report/atomic_file.h"

namespace tr {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

constexpr const char* kFormat = "tr-conv-plans";
constexpr int kVersion = 1;
// A candidate's position is below ConvPlanCache's kEngineCandidates (8) when
// timed; a file may name any engine_candidate up to this.
constexpr int64_t kMaxCandidate = 63;
constexpr double kMaxMs = 1e6;  // a convolution's time per execution, ms

// Reads one JSON object strictly; every error names the file and where in it.
class Reader {
 public:
  Reader(const json& obj, const std::string& file, std::string where)
      : obj_(obj), file_(file), where_(std::move(where)) {
    if (!obj_.is_object()) fail("must be an object");
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw UserError(cat(file_, ": ", where_.empty() ? "" : where_ + ": ", what));
  }
  // Refuses fields not named here (a misspelt field would otherwise be ignored).
  void only(std::initializer_list<const char*> names) const {
    for (const auto& [k, v] : obj_.items()) {
      bool known = false;
      for (const char* n : names) known = known || k == n;
      if (!known) fail(cat("unknown field \"", k, "\""));
    }
  }
  const json& at(const char* name) const {
    auto it = obj_.find(name);
    if (it == obj_.end()) fail(cat("\"", name, "\" is missing"));
    return *it;
  }
  int64_t integer(const char* name, int64_t lo, int64_t hi) const {
    const json& v = at(name);
    if (v.is_number_integer()) {
      const int64_t x = v.get<int64_t>();
      if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX)) fail(cat("\"", name, "\" is too large"));
      if (x >= lo && x <= hi) return x;
    }
    fail(cat("\"", name, "\" must be an integer in [", lo, ", ", hi, "], got ", v.dump()));
  }
  double real(const char* name, double lo, double hi) const {
    const json& v = at(name);
    if (v.is_number() && v.get<double>() >= lo && v.get<double>() <= hi) return v.get<double>();
    fail(cat("\"", name, "\" must be a number in [", lo, ", ", hi, "], got ", v.dump()));
  }
  std::string text(const char* name) const {
    const json& v = at(name);
    if (!v.is_string()) fail(cat("\"", name, "\" must be a string, got ", v.dump()));
    return v.get<std::string>();
  }
  bool boolean(const char* name) const {
    const json& v = at(name);
    if (!v.is_boolean()) fail(cat("\"", name, "\" must be true or false, got ", v.dump()));
    return v.get<bool>();
  }

 private:
  const json& obj_;
  const std::string& file_;
  std::string where_;
};

ConvPlanPlace read_place(const Reader& r) {
  r.only({"device", "compute_capability", "cudnn_version", "deterministic"});
  ConvPlanPlace p;
  p.device = r.text("device");
  if (p.device.empty()) r.fail("\"device\" is empty");
  const std::string cc = r.text("compute_capability");
  std::istringstream in(cc);
  char dot = 0;
  if (!(in >> p.cc_major >> dot >> p.cc_minor) || dot != '.' || !in.eof() || p.cc_major < 1 || p.cc_major > 99 ||
      p.cc_minor < 0 || p.cc_minor > 9 || cc.find_first_not_of("0123456789.") != std::string::npos)
    r.fail(cat("\"compute_capability\" must read like \"9.0\", got \"", cc, "\""));
  p.cudnn_version = r.integer("cudnn_version", 1, INT32_MAX);
  p.deterministic = r.boolean("deterministic");
  return p;
}

void read_plan(const Reader& r, ConvPlanBook& book) {
  r.only({"dir", "dtype", "n", "h", "w", "c", "k", "r", "stride", "pad", "legacy_algo", "candidate", "engine", "ms",
          "legacy_ms"});
  ConvKey key;
  const std::string dir = r.text("dir");
  const std::optional<ConvDir> d = parse_conv_dir(dir);
  if (!d) r.fail(cat("\"dir\" must be fwd, bwd_data or bwd_filter, got \"", dir, "\""));
  key.dir = *d;
  const std::string dtype = r.text("dtype");
  if (dtype == "f16") {
    key.dtype = DType::F16;
  } else if (dtype == "bf16") {
    key.dtype = DType::BF16;
  } else if (dtype == "f32") {
    key.dtype = DType::F32;
  } else {
    r.fail(cat("\"dtype\" must be f16, bf16 or f32 (what cuDNN runs), got \"", dtype, "\""));
  }
  key.n = r.integer("n", 1, INT32_MAX);
  key.h = r.integer("h", 1, INT32_MAX);
  key.w = r.integer("w", 1, INT32_MAX);
  key.c = r.integer("c", 1, INT32_MAX);
  key.k = r.integer("k", 1, INT32_MAX);
  key.r = r.integer("r", 1, 64);
  key.stride = r.integer("stride", 1, 64);
  key.pad = r.integer("pad", 0, key.r - 1);
  if (key.h + 2 * key.pad < key.r || key.w + 2 * key.pad < key.r)
    r.fail(cat("the ", key.r, "x", key.r, " window is larger than the padded ", key.h, "x", key.w, " input"));
  ConvPlanChoice c;
  c.legacy_algo = int(r.integer("legacy_algo", 0, 1000));
  c.candidate = int(r.integer("candidate", -1, kMaxCandidate));
  c.engine = r.integer("engine", -1, INT32_MAX);
  if ((c.candidate < 0) != (c.engine < 0))
    r.fail("\"candidate\" and \"engine\" must both be -1 (the legacy plan) or both name the engine");
  c.time_ms = float(r.real("ms", -1.0, kMaxMs));
  c.legacy_ms = float(r.real("legacy_ms", -1.0, kMaxMs));
  if ((c.time_ms < 0 || c.legacy_ms < 0) && (c.time_ms != -1.f || c.legacy_ms != -1.f))
    r.fail("\"ms\" and \"legacy_ms\" must both be times (>= 0) or both be -1 (not timed)");
  book.add_loaded(key, c);
}

std::string read_text(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) throw UserError(cat("--conv-plans ", path, ": not a regular file"));
  std::ifstream f(path, std::ios::binary);
  if (!f) throw UserError(cat("--conv-plans ", path, ": cannot open (", std::strerror(errno), ")"));
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace

std::string conv_plans_json(const ConvPlanBook& book) {
  ojson j;
  j["format"] = kFormat;
  j["version"] = kVersion;
  if (const std::optional<ConvPlanPlace> p = book.place()) {
    j["place"] = {{"device", p->device},
                  {"compute_capability", cat(p->cc_major, ".", p->cc_minor)},
                  {"cudnn_version", p->cudnn_version},
                  {"deterministic", p->deterministic}};
  } else {
    j["place"] = nullptr;
  }
  j["plans"] = ojson::array();
  for (const auto& [k, c] : book.entries()) {
    ojson e;
    e["dir"] = std::string(conv_dir_name(k.dir));
    e["dtype"] = std::string(dtype_name(k.dtype));
    for (auto [name, v] : {std::pair{"n", k.n},
                           {"h", k.h},
                           {"w", k.w},
                           {"c", k.c},
                           {"k", k.k},
                           {"r", k.r},
                           {"stride", k.stride},
                           {"pad", k.pad}})
      e[name] = v;
    e["legacy_algo"] = c.legacy_algo;
    e["candidate"] = c.candidate;
    e["engine"] = c.engine;
    e["ms"] = c.time_ms;
    e["legacy_ms"] = c.legacy_ms;
    j["plans"].push_back(std::move(e));
  }
  return j.dump(1) + "\n";
}

void read_conv_plans_json(std::string_view text, ConvPlanBook& book) {
  const std::string& file = book.source();
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw UserError(cat(file, ": not a --conv-plans file (not JSON: ", e.what(), ")"));
  }
  const Reader top(j, file, "");
  top.only({"format", "version", "place", "plans"});
  if (top.text("format") != kFormat) top.fail(cat("\"format\" must be \"", kFormat, "\""));
  const int64_t version = top.integer("version", 0, INT32_MAX);
  if (version != kVersion) top.fail(cat("version ", version, " is not the version this build reads (", kVersion, ")"));
  const json& plans = top.at("plans");
  if (!plans.is_array()) top.fail("\"plans\" must be an array");
  const json& place = top.at("place");
  if (place.is_null()) {
    if (!plans.empty()) top.fail("plans without a \"place\" (the GPU and cuDNN they were timed on)");
  } else {
    book.bind(read_place(Reader(place, file, "place")));
  }
  for (size_t i = 0; i < plans.size(); ++i) read_plan(Reader(plans[i], file, cat("plans[", i, "]")), book);
  book.mark_saved();
}

std::shared_ptr<ConvPlanBook> open_conv_plans(const std::string& file, bool benchmark, Backend backend) {
  if (backend != Backend::Cuda) {
    TR_USER_CHECK(file.empty(), "--conv-plans is for --device cuda (the CPU has no cuDNN)");
    return nullptr;
  }
  if (file.empty()) return std::make_shared<ConvPlanBook>(benchmark ? ConvPlanUse::Record : ConvPlanUse::Observe);
  std::error_code ec;
  const bool exists = std::filesystem::exists(file, ec);
  TR_USER_CHECK(exists || benchmark, "--conv-plans ", file,
                ": no such file; time the plans into it first with --cudnn-benchmark --conv-plans ", file);
  auto book = std::make_shared<ConvPlanBook>(benchmark ? ConvPlanUse::Record : ConvPlanUse::Replay, file);
  if (exists) read_conv_plans_json(read_text(file), *book);
  // Before the timing, not after it. Unlike a report's, this check lists no
  // inputs: the file is read and rewritten by design (Note [output paths]),
  // its plans the start of the book that is saved back with the new ones.
  if (benchmark) check_writable(file);
  return book;
}

std::string conv_plans_summary(const ConvPlanBook& book) {
  std::string how;
  switch (book.use()) {
    case ConvPlanUse::Observe: how = "the heuristic's"; break;
    case ConvPlanUse::Record:
      how = book.source().empty() ? std::string("timed") : cat("timed into ", book.source());
      break;
    case ConvPlanUse::Replay: how = cat("replayed from ", book.source()); break;
  }
  if (!book.source().empty()) how += cat(" (", book.size(), " in the file)");
  const std::string digest = book.digest();
  return cat("convolution plans: ", how, ", ", book.used(), " shape(s) on cuDNN",
             digest.empty() ? std::string() : cat(", digest ", digest));
}

void save_conv_plans(ConvPlanBook* book, const World* world) {
  if (book == nullptr || book->source().empty() || book->unsaved() == 0) return;
  if (world != nullptr && world->process() != 0) return;
  write_file_atomically(book->source(), conv_plans_json(*book));
  book->mark_saved();
}

}  // namespace tr
