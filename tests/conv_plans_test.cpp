// Convolution plan books and their files (Note [convolution plan books],
// framework/ops/conv_plans/conv_plan_book.h; harness/lib/cli/conv_plans_file.h): which choice
// a book keeps, what its digest covers, where it refuses to be used, and how
// strictly the file is read. The GPU side (a replayed file runs the timed
// plans): ConvPlansGpu.* in ops_conv_gpu_test.cpp and TrBenchCli.ConvPlansFile*.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "framework/ops/conv_plans/conv_plan_book.h"
#include "harness/lib/cli/conv_plans_file.h"
#include "tests/thread_world.h"

namespace tr {
namespace {

ConvKey key(ConvDir dir, int64_t n, int64_t c, int64_t k) {
  ConvKey x;
  x.dir = dir;
  x.n = n;
  x.h = x.w = 14;
  x.c = c;
  x.k = k;
  x.r = 3;
  x.stride = 1;
  x.pad = 1;
  x.dtype = DType::F16;
  return x;
}

ConvPlanChoice legacy(int algo) {
  ConvPlanChoice c;
  c.legacy_algo = algo;
  return c;
}
ConvPlanChoice engine(int algo, int candidate, int64_t id, float ms, float legacy_ms) {
  ConvPlanChoice c;
  c.legacy_algo = algo;
  c.candidate = candidate;
  c.engine = id;
  c.time_ms = ms;
  c.legacy_ms = legacy_ms;
  return c;
}

ConvPlanPlace h200() { return ConvPlanPlace{"NVIDIA H200", 9, 0, 91900, true}; }

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "tr_conv_plans_" + std::to_string(getpid()) + "_" + name;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// A book as a file would hold it: bound to the H200, two keys, one of them timed to an engine.
void fill(ConvPlanBook& b) {
  b.bind(h200());
  b.record(key(ConvDir::Fwd, 256, 64, 64), legacy(1));
  b.record(key(ConvDir::BwdData, 256, 64, 128), engine(1, 3, 67, 0.0114f, 0.0172f));
}

TEST(ConvPlanBook, TheFirstRecordedChoiceIsKept) {
  ConvPlanBook b(ConvPlanUse::Record);
  const ConvKey k = key(ConvDir::Fwd, 64, 32, 64);
  EXPECT_FALSE(b.find(k).has_value());
  EXPECT_EQ(b.digest(), "") << "nothing used yet";
  const ConvPlanChoice first = engine(1, 2, 57, 0.01f, 0.02f);
  EXPECT_TRUE(b.record(k, first).same_plan(first));
  // A second rank that timed otherwise gets the first rank's choice.
  const ConvPlanChoice kept = b.record(k, legacy(1));
  EXPECT_TRUE(kept.same_plan(first));
  EXPECT_EQ(kept.engine, 57);
  ASSERT_TRUE(b.find(k).has_value());
  EXPECT_TRUE(b.find(k)->same_plan(first));
  EXPECT_EQ(b.size(), 1u);
  EXPECT_EQ(b.unsaved(), 1u);
  b.mark_saved();
  EXPECT_EQ(b.unsaved(), 0u);
}

TEST(ConvPlanBook, TheDigestNamesTheUsedPlansNotTheirTimes) {
  ConvPlanBook a(ConvPlanUse::Record), b(ConvPlanUse::Record);
  const ConvKey k1 = key(ConvDir::Fwd, 64, 32, 64), k2 = key(ConvDir::BwdFilter, 64, 32, 64);
  a.record(k1, engine(1, 2, 57, 0.010f, 0.020f));
  b.record(k1, engine(1, 2, 57, 0.011f, 0.019f));  // timed again, same plan
  EXPECT_EQ(a.digest().size(), 16u);
  EXPECT_EQ(a.digest(), b.digest());
  // Another plan for the same key is another digest.
  ConvPlanBook c(ConvPlanUse::Record);
  c.record(k1, legacy(1));
  EXPECT_NE(a.digest(), c.digest());
  // An entry loaded but not used does not count; once found, it does.
  ConvPlanBook d(ConvPlanUse::Replay, "plans.json");
  d.add_loaded(k1, engine(1, 2, 57, 0.010f, 0.020f));
  d.add_loaded(k2, legacy(0));
  EXPECT_EQ(d.digest(), "");
  EXPECT_TRUE(d.find(k1).has_value());
  EXPECT_EQ(d.digest(), a.digest());
  EXPECT_EQ(d.used(), 1u);
  EXPECT_TRUE(d.find(k2).has_value());
  EXPECT_NE(d.digest(), a.digest());
  EXPECT_THROW(d.add_loaded(k2, legacy(0)), UserError);
}

// Reports keep digests: one made by an older build must name the same plans.
TEST(ConvPlanBook, TheDigestIsStableAcrossBuilds) {
  ConvPlanBook b(ConvPlanUse::Record);
  fill(b);
  EXPECT_EQ(b.digest(), "e78748439af0b076");
}

TEST(ConvPlanBook, RefusesAnotherPlaceWhereItDecides) {
  for (ConvPlanUse use : {ConvPlanUse::Record, ConvPlanUse::Replay}) {
    ConvPlanBook b(use, "plans.json");
    b.bind(h200());
    b.bind(h200());  // the same place again
    ConvPlanPlace other = h200();
    other.cudnn_version = 91000;
    try {
      b.bind(other);
      ADD_FAILURE() << "another cuDNN was accepted in " << conv_plan_use_name(use);
    } catch (const UserError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("plans.json were timed on NVIDIA H200 (compute capability 9.0), cuDNN 91900, deterministic"),
                std::string::npos)
          << m;
      EXPECT_NE(m.find("this run is on NVIDIA H200 (compute capability 9.0), cuDNN 91000"), std::string::npos) << m;
    }
    ConvPlanPlace nondet = h200();
    nondet.deterministic = false;
    EXPECT_THROW(b.bind(nondet), UserError) << "a non-deterministic run must not replay deterministic choices";
  }
  // Observing the heuristic decides nothing, so another place is no error.
  ConvPlanBook o(ConvPlanUse::Observe);
  o.bind(h200());
  ConvPlanPlace other = h200();
  other.device = "NVIDIA A100-SXM4-80GB";
  EXPECT_NO_THROW(o.bind(other));
  EXPECT_EQ(o.place()->device, "NVIDIA H200");
  EXPECT_FALSE(o.decides());
}

TEST(ConvPlanBook, PackedBooksCarryThePlaceAndTheChoices) {
  ConvPlanBook first(ConvPlanUse::Record);
  fill(first);
  const std::string packed = first.pack();
  ConvPlanBook other(ConvPlanUse::Record, "local.json");
  // A choice of its own for one of the keys (a local file): the first process's wins.
  other.add_loaded(key(ConvDir::Fwd, 256, 64, 64), engine(1, 5, 99, 0.01f, 0.02f));
  other.adopt(packed);
  EXPECT_EQ(other.place(), h200());
  const auto a = first.entries(), b = other.entries();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].first, b[i].first);
    EXPECT_TRUE(a[i].second.same_plan(b[i].second)) << a[i].first.str();
    EXPECT_EQ(a[i].second.time_ms, b[i].second.time_ms);
  }
  EXPECT_EQ(other.used(), 0u) << "adopted, not yet used";
  // Another GPU cannot take the first process's choices.
  ConvPlanBook elsewhere(ConvPlanUse::Record);
  ConvPlanPlace a100 = h200();
  a100.device = "NVIDIA A100-SXM4-80GB";
  elsewhere.bind(a100);
  EXPECT_THROW(elsewhere.adopt(packed), UserError);
  // A cut message is an internal error, not a silent half book.
  ConvPlanBook cut(ConvPlanUse::Record);
  EXPECT_THROW(cut.adopt(packed.substr(0, packed.size() - 3)), Error);
}

// Three processes (threads of a ThreadWorld) time one key differently; the
// first prepares first and every other ends with its choice.
TEST(ConvPlanBook, EveryProcessTakesTheFirstProcessPlans) {
  constexpr int kProcesses = 3;
  auto hub = std::make_shared<testing::ThreadWorldHub>(kProcesses);
  const ConvKey k = key(ConvDir::BwdFilter, 128, 64, 64);
  std::mutex mu;
  std::vector<std::string> order;
  std::vector<int> kept(kProcesses, -2);
  std::vector<std::thread> threads;
  for (int p = 0; p < kProcesses; ++p)
    threads.emplace_back([&, p] {
      testing::ThreadWorld world(hub, p);
      ConvPlanBook book(ConvPlanUse::Record);
      share_first_process_plans(book, world, std::chrono::milliseconds(20000), [&] {
        {
          std::lock_guard<std::mutex> lock(mu);
          order.push_back(cat("prepare ", p));
        }
        // What a cache does: the book's choice, else its own timing (here: candidate p).
        book.bind(h200());
        if (!book.find(k)) book.record(k, engine(1, p, 60 + p, 0.01f * float(p + 1), 0.05f));
        kept[size_t(p)] = book.find(k)->candidate;
      });
    });
  for (auto& t : threads) t.join();
  ASSERT_EQ(order.size(), size_t(kProcesses));
  EXPECT_EQ(order[0], "prepare 0") << "the first process times before the others take its plans";
  for (int p = 0; p < kProcesses; ++p) EXPECT_EQ(kept[size_t(p)], 0) << "process " << p;
}

TEST(ConvPlansFile, RoundTripsToTheSameText) {
  ConvPlanBook a(ConvPlanUse::Record, "a.json");
  fill(a);
  const std::string text = conv_plans_json(a);
  ConvPlanBook b(ConvPlanUse::Replay, "a.json");
  read_conv_plans_json(text, b);
  EXPECT_EQ(conv_plans_json(b), text);
  EXPECT_EQ(b.place(), a.place());
  ASSERT_EQ(b.entries().size(), 2u);
  const auto ea = a.entries(), eb = b.entries();
  for (size_t i = 0; i < ea.size(); ++i) {
    EXPECT_EQ(ea[i].first, eb[i].first);
    EXPECT_TRUE(ea[i].second.same_plan(eb[i].second));
    EXPECT_EQ(ea[i].second.time_ms, eb[i].second.time_ms);
    EXPECT_EQ(ea[i].second.legacy_ms, eb[i].second.legacy_ms);
  }
  EXPECT_EQ(b.unsaved(), 0u) << "what was read is what the file holds";
  // The file names what a reader needs: the place and each key's plan.
  const auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["format"], "tr-conv-plans");
  EXPECT_EQ(j["place"]["compute_capability"], "9.0");
  EXPECT_EQ(j["plans"][1]["dir"], "bwd_data");
  EXPECT_EQ(j["plans"][1]["engine"], 67);
  // An empty book has no place yet, and reads back.
  ConvPlanBook e(ConvPlanUse::Record, "e.json"), f(ConvPlanUse::Record, "e.json");
  read_conv_plans_json(conv_plans_json(e), f);
  EXPECT_EQ(f.size(), 0u);
  EXPECT_FALSE(f.place().has_value());
}

// Each bad file: one UserError that names the file and what is wrong.
TEST(ConvPlansFile, ReadsStrictly) {
  ConvPlanBook good(ConvPlanUse::Record, "p.json");
  fill(good);
  const nlohmann::json base = nlohmann::json::parse(conv_plans_json(good));
  struct Bad {
    std::function<void(nlohmann::json&)> edit;
    std::string says;
  };
  const std::vector<Bad> bad = {
      {[](auto& j) { j["format"] = "tr-bench"; }, "\"format\" must be \"tr-conv-plans\""},
      {[](auto& j) { j["version"] = 2; }, "version 2 is not the version this build reads (1)"},
      {[](auto& j) { j["extra"] = 1; }, "unknown field \"extra\""},
      {[](auto& j) { j.erase("plans"); }, "\"plans\" is missing"},
      {[](auto& j) { j["plans"] = 3; }, "\"plans\" must be an array"},
      {[](auto& j) { j["place"] = nullptr; }, "plans without a \"place\""},
      {[](auto& j) { j["place"]["compute_capability"] = "9"; }, "place: \"compute_capability\" must read like"},
      {[](auto& j) { j["place"]["compute_capability"] = "9.0x"; }, "\"compute_capability\" must read like"},
      {[](auto& j) { j["place"]["device"] = ""; }, "place: \"device\" is empty"},
      {[](auto& j) { j["place"]["deterministic"] = 1; }, "\"deterministic\" must be true or false"},
      {[](auto& j) { j["place"]["cudnn_version"] = -5; }, "\"cudnn_version\" must be an integer in"},
      {[](auto& j) { j["plans"][0]["dir"] = "sideways"; }, "plans[0]: \"dir\" must be fwd, bwd_data or bwd_filter"},
      {[](auto& j) { j["plans"][0]["dtype"] = "f64"; }, "plans[0]: \"dtype\" must be f16, bf16 or f32"},
      {[](auto& j) { j["plans"][0]["n"] = 0; }, "plans[0]: \"n\" must be an integer in [1, "},
      {[](auto& j) { j["plans"][0]["n"] = 2.5; }, "\"n\" must be an integer"},
      {[](auto& j) { j["plans"][0]["c"] = "64"; }, "\"c\" must be an integer"},
      {[](auto& j) { j["plans"][0]["pad"] = 3; }, "plans[0]: \"pad\" must be an integer in [0, 2]"},
      {[](auto& j) { j["plans"][0]["h"] = 1, j["plans"][0]["pad"] = 0; }, "window is larger than the padded 1x14"},
      {[](auto& j) { j["plans"][0]["stride"] = 18446744073709551615ull; }, "\"stride\" is too large"},
      {[](auto& j) { j["plans"][0]["typo"] = 1; }, "plans[0]: unknown field \"typo\""},
      {[](auto& j) { j["plans"][0].erase("legacy_algo"); }, "plans[0]: \"legacy_algo\" is missing"},
      {[](auto& j) { j["plans"][0]["candidate"] = 2; }, "\"candidate\" and \"engine\" must both be -1"},
      {[](auto& j) { j["plans"][1]["candidate"] = 64; }, "plans[1]: \"candidate\" must be an integer in [-1, 63]"},
      {[](auto& j) { j["plans"][1]["legacy_ms"] = -1; }, "\"ms\" and \"legacy_ms\" must both be times"},
      {[](auto& j) { j["plans"][0]["ms"] = -0.5, j["plans"][0]["legacy_ms"] = -0.5; }, "must both be times"},
      {[](auto& j) { j["plans"][1]["ms"] = 1e300; }, "plans[1]: \"ms\" must be a number in [-1, 1e+06]"},
      {[](auto& j) { j["plans"][1] = j["plans"][0]; }, "is listed twice"},
      {[](auto& j) { j["plans"][0] = 7; }, "plans[0]: must be an object"},
      {[](auto& j) { j = nlohmann::json::array(); }, "p.json: must be an object"},
  };
  for (const Bad& b : bad) {
    nlohmann::json j = base;
    b.edit(j);
    ConvPlanBook book(ConvPlanUse::Replay, "p.json");
    try {
      read_conv_plans_json(j.dump(), book);
      ADD_FAILURE() << "accepted: " << j.dump();
    } catch (const UserError& e) {
      const std::string m = e.what();
      EXPECT_EQ(m.rfind("p.json: ", 0), 0u) << m;
      EXPECT_NE(m.find(b.says), std::string::npos) << "expected '" << b.says << "' in: " << m;
    }
  }
  ConvPlanBook book(ConvPlanUse::Replay, "p.json");
  try {
    read_conv_plans_json("{\"format\": ", book);
    ADD_FAILURE() << "accepted a cut file";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("p.json: not a --conv-plans file (not JSON"), std::string::npos) << e.what();
  }
}

TEST(ConvPlansFile, SummaryNamesHowThePlansWereChosen) {
  ConvPlanBook heuristic(ConvPlanUse::Observe);
  heuristic.record(key(ConvDir::Fwd, 8, 16, 16), legacy(1));
  const std::string h = conv_plans_summary(heuristic);
  EXPECT_EQ(h.rfind("convolution plans: the heuristic's, 1 shape(s) on cuDNN, digest ", 0), 0u) << h;
  ConvPlanBook replay(ConvPlanUse::Replay, "p.json");
  fill(replay);
  const std::string r = conv_plans_summary(replay);
  EXPECT_EQ(r,
            "convolution plans: replayed from p.json (2 in the file), 2 shape(s) on cuDNN, digest " + replay.digest());
  ConvPlanBook timed(ConvPlanUse::Record);
  EXPECT_EQ(conv_plans_summary(timed), "convolution plans: timed, 0 shape(s) on cuDNN");
}

TEST(ConvPlansFile, OpensTheBookTheFlagsAskFor) {
  // The CPU has no convolution plans.
  EXPECT_EQ(open_conv_plans("", true, Backend::Cpu), nullptr);
  EXPECT_THROW(open_conv_plans("p.json", false, Backend::Cpu), UserError);
  // Without a file: the heuristic's plans observed, or timed ones recorded.
  EXPECT_EQ(open_conv_plans("", false, Backend::Cuda)->use(), ConvPlanUse::Observe);
  EXPECT_EQ(open_conv_plans("", true, Backend::Cuda)->use(), ConvPlanUse::Record);
  // A file to replay must exist; one to record into need not, but must be writable.
  const std::string path = temp_path("open.json");
  std::filesystem::remove(path);
  try {
    open_conv_plans(path, false, Backend::Cuda);
    ADD_FAILURE() << "replayed a missing file";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("no such file; time the plans into it first with --cudnn-benchmark"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(open_conv_plans("/nonexistent-dir/p.json", true, Backend::Cuda), UserError);
  auto rec = open_conv_plans(path, true, Backend::Cuda);
  EXPECT_EQ(rec->use(), ConvPlanUse::Record);
  EXPECT_EQ(rec->source(), path);
  EXPECT_FALSE(std::filesystem::exists(path)) << "nothing is written before something is timed";
  // Saved only by the first process, and only when something new was recorded.
  fill(*rec);
  auto hub = std::make_shared<testing::ThreadWorldHub>(2);
  const testing::ThreadWorld second(hub, 1), first(hub, 0);
  save_conv_plans(rec.get(), &second);
  EXPECT_FALSE(std::filesystem::exists(path));
  save_conv_plans(rec.get(), &first);
  ASSERT_TRUE(std::filesystem::exists(path));
  EXPECT_EQ(rec->unsaved(), 0u);
  EXPECT_EQ(slurp(path), conv_plans_json(*rec));
  std::filesystem::remove(path);
  save_conv_plans(rec.get(), nullptr);
  EXPECT_FALSE(std::filesystem::exists(path)) << "rewritten with nothing new";
  save_conv_plans(rec.get(), &first);
  // Replay reads it back; recording into an existing file starts from it.
  std::ofstream(path) << conv_plans_json(*rec);
  auto replay = open_conv_plans(path, false, Backend::Cuda);
  EXPECT_EQ(replay->use(), ConvPlanUse::Replay);
  EXPECT_EQ(replay->size(), 2u);
  EXPECT_EQ(replay->place(), h200());
  auto more = open_conv_plans(path, true, Backend::Cuda);
  EXPECT_EQ(more->use(), ConvPlanUse::Record);
  EXPECT_EQ(more->size(), 2u);
  // A directory or a broken file is the user's to fix.
  EXPECT_THROW(open_conv_plans(::testing::TempDir(), false, Backend::Cuda), UserError);
  std::ofstream(path) << "not json";
  EXPECT_THROW(open_conv_plans(path, false, Backend::Cuda), UserError);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace tr
