// Specification of the list flags (harness/lib/cli/cli_args.h, list_items and
// check_distinct) and of tr-bench's lists read through them
// (harness/lib/bench/bench_options.h): a list names each case once, so an empty item
// or a repeat is one UserError naming the flag and the item, given before any
// case runs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "framework/core/error.h"
#include "harness/lib/bench/bench_options.h"
#include "harness/lib/cli/cli_args.h"

namespace tr {
namespace {

using Items = std::vector<std::string>;

// The UserError message of f; a failure when it throws none.
template <typename F>
std::string user_error_of(F f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no UserError";
  return "";
}

TEST(CliArgsTest, ListItemsSplitsAtCommas) {
  EXPECT_EQ(list_items("--batch", "8"), Items{"8"});
  EXPECT_EQ(list_items("--batch", "8,16,32"), (Items{"8", "16", "32"}));
  EXPECT_EQ(list_items("--model", "cnn,mlp"), (Items{"cnn", "mlp"}));
}

TEST(CliArgsTest, ListItemsRefusesAnEmptyItemAnywhere) {
  EXPECT_EQ(user_error_of([] { list_items("--batch", "8,"); }), "--batch: empty item in '8,'");
  EXPECT_EQ(user_error_of([] { list_items("--batch", ",8"); }), "--batch: empty item in ',8'");
  EXPECT_EQ(user_error_of([] { list_items("--batch", "8,,16"); }), "--batch: empty item in '8,,16'");
  EXPECT_EQ(user_error_of([] { list_items("--batch", ","); }), "--batch: empty item in ','");
  EXPECT_EQ(user_error_of([] { list_items("--batch", ""); }), "--batch: empty item in ''");
}

TEST(CliArgsTest, ListItemsRefusesARepeat) {
  EXPECT_EQ(user_error_of([] { list_items("--batch", "8,8"); }), "--batch: 8 is given twice");
  EXPECT_EQ(user_error_of([] { list_items("--model", "mlp,cnn,mlp"); }), "--model: mlp is given twice");
}

TEST(CliArgsTest, CheckDistinctNamesTheFirstRepeatAndItsReason) {
  check_distinct("--mode", {"eager", "full-capture"});
  EXPECT_EQ(user_error_of([] { check_distinct("--batch", {"8", "16", "16", "8"}); }), "--batch: 16 is given twice");
  EXPECT_EQ(user_error_of([] {
              check_distinct("--mode", {"eager", "eager"}, " (all includes it)");
            }),
            "--mode: eager is given twice (all includes it)");
}

// parse_bench_options over `args` (after "tr-bench --device cpu").
bench::BenchOptions bench_options(std::vector<std::string> args) {
  args.insert(args.begin(), {"tr-bench", "--device", "cpu"});
  std::vector<char*> argv;
  for (std::string& s : args) argv.push_back(s.data());
  return bench::parse_bench_options(int(argv.size()), argv.data());
}

TEST(CliArgsTest, BenchListsKeepTheirOrder) {
  const bench::BenchOptions o = bench_options({"--mode", "full,eager", "--model", "mlp,cnn", "--batch", "32,8",
                                               "--ranks", "2,1", "--variants", "val_last,train_base"});
  EXPECT_EQ(o.modes, (std::vector<ExecMode>{ExecMode::FullCapture, ExecMode::Eager}));
  EXPECT_EQ(o.models, (Items{"mlp", "cnn"}));
  EXPECT_EQ(o.batches, (std::vector<int64_t>{32, 8}));
  EXPECT_EQ(o.ranks, (std::vector<int>{2, 1}));
  EXPECT_EQ(o.variants, (std::vector<Variant>{Variant::ValLast, Variant::TrainBase}));
  EXPECT_EQ(bench_options({"--mode", "all"}).modes,
            (std::vector<ExecMode>{ExecMode::Eager, ExecMode::PartialCapture, ExecMode::FullCapture}));
}

// Every list flag of tr-bench, with a repeat spelled alike, spelled apart
// (a number with a leading zero, a mode's short name, a mode inside `all`),
// and with an empty item.
TEST(CliArgsTest, BenchListsRefuseRepeatsAndEmptyItems) {
  const auto refused = [](std::vector<std::string> args) { return user_error_of([&] { bench_options(args); }); };
  EXPECT_EQ(refused({"--batch", "8,8"}), "--batch: 8 is given twice");
  EXPECT_EQ(refused({"--batch", "8,08"}), "--batch: 8 is given twice");
  EXPECT_EQ(refused({"--batch", "8,"}), "--batch: empty item in '8,'");
  EXPECT_EQ(refused({"--batch-per-gpu", "4,16,4"}), "--batch-per-gpu: 4 is given twice");
  EXPECT_EQ(refused({"--batch-per-gpu", ",4"}), "--batch-per-gpu: empty item in ',4'");
  EXPECT_EQ(refused({"--ranks", "1,2,1"}), "--ranks: 1 is given twice");
  EXPECT_EQ(refused({"--ranks", "1,,2"}), "--ranks: empty item in '1,,2'");
  EXPECT_EQ(refused({"--model", "mlp,mlp"}), "--model: mlp is given twice");
  EXPECT_EQ(refused({"--model", "mlp,"}), "--model: empty item in 'mlp,'");
  EXPECT_EQ(refused({"--mode", "eager,eager"}), "--mode: eager is given twice");
  EXPECT_EQ(refused({"--mode", "partial,partial-capture"}), "--mode: partial-capture is given twice");
  EXPECT_EQ(refused({"--mode", "all,eager"}), "--mode: eager is given twice (all includes it)");
  EXPECT_EQ(refused({"--mode", "all,all"}), "--mode: all is given twice");
  EXPECT_EQ(refused({"--mode", ",eager"}), "--mode: empty item in ',eager'");
  EXPECT_EQ(refused({"--variants", "val_last,val_last"}), "--variants: val_last is given twice");
  EXPECT_EQ(refused({"--variants", "val_last,"}), "--variants: empty item in 'val_last,'");
}

}  // namespace
}  // namespace tr
