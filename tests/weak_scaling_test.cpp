// Weak-scaling efficiency (harness/lib/bench/weak_scaling.h): N-rank cases against
// the 1-rank case with the same per-rank batch, from a report built by hand.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "harness/lib/bench/weak_scaling.h"

namespace tr::bench {
namespace {

BenchCase make(const std::string& mode, int ranks, int64_t batch, double sps) {
  BenchCase c;
  c.model = "cnn";
  c.mode = mode;
  c.variant = "train_base";
  c.ranks = ranks;
  c.batch = batch;
  c.counters["samples_per_second"] = sps;
  return c;
}

TEST(WeakScaling, EfficiencyAgainstTheOneRankCaseWithTheSameBatchPerRank) {
  BenchReport r;
  r.context.device_kind = "cuda";
  r.cases = {make("full-capture", 1, 256, 1000), make("full-capture", 2, 512, 1900),
             make("full-capture", 4, 1024, 3000), make("full-capture", 2, 256, 1500),  // 128 per rank: no partner
             make("eager", 2, 512, 900)};                                              // no 1-rank eager case
  add_weak_scaling(r);
  EXPECT_DOUBLE_EQ(r.cases[0].counters.at("weak_scaling_efficiency"), 1.0);
  EXPECT_DOUBLE_EQ(r.cases[1].counters.at("weak_scaling_efficiency"), 0.95);
  EXPECT_DOUBLE_EQ(r.cases[2].counters.at("weak_scaling_efficiency"), 0.75);
  EXPECT_EQ(r.cases[3].counters.count("weak_scaling_efficiency"), 0u);
  EXPECT_EQ(r.cases[4].counters.count("weak_scaling_efficiency"), 0u);

  char buf[4096] = {};
  std::FILE* f = fmemopen(buf, sizeof buf - 1, "w");
  ASSERT_NE(f, nullptr);
  print_weak_scaling(r, f);
  std::fclose(f);
  const std::string table(buf);
  EXPECT_NE(table.find("weak scaling efficiency"), std::string::npos) << table;
  EXPECT_NE(table.find("0.950"), std::string::npos) << table;
  EXPECT_NE(table.find("0.750"), std::string::npos) << table;
}

TEST(WeakScaling, NothingWithoutAOneRankPartner) {
  BenchReport r;
  r.cases = {make("full-capture", 2, 512, 1900), make("full-capture", 1, 64, 500)};
  add_weak_scaling(r);
  for (const auto& c : r.cases) EXPECT_EQ(c.counters.count("weak_scaling_efficiency"), 0u);
  char buf[256] = {};
  std::FILE* f = fmemopen(buf, sizeof buf - 1, "w");
  ASSERT_NE(f, nullptr);
  print_weak_scaling(r, f);
  std::fclose(f);
  EXPECT_STREQ(buf, "");
}

}  // namespace
}  // namespace tr::bench
