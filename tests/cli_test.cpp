// The command-line tools: every bad input gets one clear line on stderr and
// exit code 2; --help exits 0.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "harness/lib/cli/conv_plans_file.h"
#include "harness/lib/report/gate.h"
#include "harness/lib/report/json_report.h"
#include "tests/gpu_test_util.h"
#include "tests/tool_run.h"

namespace {

using Result = tr::testing::ToolResult;

Result run(const std::string& args) { return tr::testing::run_tool(args); }

void expect_user_error(const std::string& args, const std::string& needle) {
  tr::testing::expect_tool_user_error(args, needle);
}

TEST(TrTrainCli, HelpExitsZero) {
  const Result r = run("tr-train --help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("--model"), std::string::npos);
}

TEST(TrTrainCli, BadFlagsAndValues) {
  expect_user_error("tr-train --bogus", "unknown flag --bogus");
  expect_user_error("tr-train --model resnet9", "unknown model 'resnet9'");
  expect_user_error("tr-train --epochs zero", "--epochs expects an integer");
  expect_user_error("tr-train --bn-sync none", "unknown BN sync 'none'");
  expect_user_error("tr-train --epochs 0", "--epochs must be in");
  expect_user_error("tr-train --batch", "--batch needs a value");
  expect_user_error("tr-train --device tpu", "--device must be cpu or cuda");
  expect_user_error("tr-train --mode turbo", "unknown mode 'turbo'");
  expect_user_error("tr-train --optimizer adam", "unknown optimizer 'adam'");
  expect_user_error("tr-train --lr -1", "--lr must be in");
  expect_user_error("tr-train --model mlp --lowres-epochs 1 --synthetic --train-subset 64 --val-subset 64",
                    "cannot train at a lower resolution");
  expect_user_error("tr-train --ranks 2 --gpus 2", "not both");
  expect_user_error("tr-train --device cpu --gpus 2", "--gpus needs --device cuda");
  expect_user_error("tr-train --device cuda --ranks 2", "--ranks is for --device cpu");
  // Note [processes and ranks]: ranks per process need processes.
  expect_user_error("tr-train --gpus-per-process 2", "--gpus-per-process needs a launcher (mpirun or srun)");
  expect_user_error("tr-train --ranks-per-process 2", "--ranks-per-process needs a launcher");
  expect_user_error("tr-bench --device cpu --ranks-per-process 2", "--ranks-per-process needs a launcher");
  expect_user_error("tr-bench --device cpu --top-kernels 5", "--top-kernels needs CUPTI on a GPU");
  expect_user_error("tr-bench --device cpu --top-kernels -1", "--top-kernels must be in");
  expect_user_error("tr-bench --device cpu --kernel-trace k.json", "--kernel-trace needs CUPTI on a GPU");
  expect_user_error("tr-bench --device cpu --kernel-trace", "--kernel-trace needs a value");
  expect_user_error("tr-bench --device cpu --nondeterministic", "--nondeterministic is for --device cuda");
  expect_user_error("tr-train --device cpu --nondeterministic", "--nondeterministic is for --device cuda");
  expect_user_error("tr-bench --device cpu --cudnn-filter-grad", "--cudnn-filter-grad is for --device cuda");
  expect_user_error("tr-train --device cpu --cudnn-filter-grad", "--cudnn-filter-grad is for --device cuda");
  expect_user_error("tr-bench --device cpu --grid-sync", "--grid-sync is for --device cuda");
  expect_user_error("tr-train --device cpu --grid-sync", "--grid-sync is for --device cuda");
  expect_user_error("tr-bench --device cpu --conv-plans p.json", "--conv-plans is for --device cuda");
  expect_user_error("tr-train --device cpu --conv-plans p.json", "--conv-plans is for --device cuda");
  expect_user_error("tr-bench --device cpu --cudnn-benchmark", "--cudnn-benchmark is for --device cuda");
  expect_user_error("tr-train --device cpu --cudnn-benchmark", "--cudnn-benchmark is for --device cuda");
  expect_user_error("tr-bench --device cpu --conv-plans", "--conv-plans needs a value");
  expect_user_error("tr-train --device cpu --conv-plans ''", "--conv-plans needs a non-empty value");
  // The zoo: a width that rounds a layer to nothing, an image the pools cannot take.
  expect_user_error("tr-train --model resnet18 --synthetic --width 0.005", "leaves a 64-channel layer with 0 channels");
  expect_user_error("tr-train --model vgg16bn --synthetic --image-size 16 --train-subset 8 --val-subset 8",
                    "its 1x1 input is smaller than its 2x2 window");
}

TEST(TrTrainCli, BadAugmentationAndRecipeFlags) {
  expect_user_error("tr-train --synthetic --translate 28 --train-subset 64 --val-subset 64",
                    "--translate 28 must be in [0, 28) for 28x28 images");
  expect_user_error("tr-train --synthetic --cutout 29 --train-subset 64 --val-subset 64", "--cutout 29 must be in");
  expect_user_error("tr-train --translate -1", "--translate must be in");
  expect_user_error("tr-train --tta mirror", "--tta must be none or flip, got 'mirror'");
  expect_user_error("tr-train --no-augment --flip", "--no-augment contradicts");
  expect_user_error("tr-train --amp --no-amp", "give one of --precision, --amp and --no-amp");
  expect_user_error("tr-train --precision bf16 --amp", "give one of --precision, --amp and --no-amp");
  expect_user_error("tr-train --precision fp16", "--precision must be fp32, amp or bf16, got 'fp16'");
  expect_user_error("tr-train --recipe fast", "--recipe must be plain or tta, got 'fast'");
  expect_user_error("tr-train --optimizer sgd --clip-grad-norm 1", "--clip-grad-norm needs --optimizer adamw, not sgd");
  expect_user_error("tr-train --clip-grad-norm -1", "--clip-grad-norm must be in");
}

TEST(TrBenchTtaCli, HelpAndBadFlags) {
  const Result r = run("tr-bench tta --help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("--target-acc"), std::string::npos);
  EXPECT_NE(r.out.find("--translate N"), std::string::npos);
  expect_user_error("tr-bench tta --runs 0", "--runs must be in [1, 1000]");
  expect_user_error("tr-bench tta --target-acc 94", "--target-acc must be in");
  expect_user_error("tr-bench tta --eval best", "--eval must be main or ema, got 'best'");
  expect_user_error("tr-bench tta --model resnet9", "unknown model 'resnet9'");
}

// The task end to end on the CPU: a tiny cnn on synthetic data, its JSON and MLLOG.
TEST(TrBenchTtaCli, WritesJsonAndMllog) {
  const std::string dir = ::testing::TempDir() + "tr_tta_cli_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const Result r =
      run("tr-bench tta --model cnn --width 0.125 --synthetic --train-subset 256 --val-subset 64 --epochs 2 "
          "--batch 64 --runs 2 --no-amp --target-acc 0.2 --json " +
          dir + "/t.json --mllog " + dir + "/t.mllog");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("tta: cnn, target 20.00 % test accuracy (main weights), 2 run(s)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("final accuracy:"), std::string::npos) << r.out;
  EXPECT_TRUE(std::filesystem::file_size(dir + "/t.json") > 0);
  std::ifstream m(dir + "/t.mllog");
  std::string first;
  std::getline(m, first);
  EXPECT_EQ(first.rfind(":::MLLOG {", 0), 0u) << first;
  std::filesystem::remove_all(dir);
}

// Every 32x32 model takes Fashion-MNIST padded from 28x28; a smaller input is refused.
TEST(TrTrainCli, ZooModelsTrainOnPaddedFashionMnist) {
  const char* env = std::getenv("TR_DATA_DIR");
  const std::string dir = env && *env ? env : "/usr/share/datasets/fashion-mnist";
  if (!std::filesystem::is_directory(dir)) GTEST_SKIP() << dir << " not found";
  expect_user_error("tr-train --model resnet50 --image-size 16",
                    "model resnet50 takes 16x16 images but the data's are 28x28");
  const Result r = run("tr-train --model resnet18 --width 0.0625 --train-subset 64 --val-subset 32 --batch 32");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("model resnet18 (width 0.0625, 32x32x1, 10 classes)"), std::string::npos) << r.out;
}

// More GPUs than exist is a clear error (here: a machine with fewer than 64 GPUs).
TEST(TrTrainCli, MoreGpusThanExistIsAnError) {
  expect_user_error("tr-train --device cuda --gpus 64", "asked for 64 GPUs but");
}

TEST(TrTrainCli, BadDataFilesExitTwo) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(testing::TempDir()) / ("tr_cli_bad_data_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  expect_user_error("tr-train --data-dir " + dir.string(), "train-images-idx3-ubyte");
  // A truncated (non-gzip) images file: the reader names it and the problem.
  {
    std::ofstream f(dir / "train-images-idx3-ubyte", std::ios::binary);
    const unsigned char hdr[] = {0, 0, 8, 3, 0, 0, 0xea, 0x60, 0, 0, 0, 28, 0, 0, 0, 28, 1, 2, 3};
    f.write(reinterpret_cast<const char*>(hdr), sizeof(hdr));
  }
  {
    std::ofstream f(dir / "train-labels-idx1-ubyte", std::ios::binary);
    const unsigned char hdr[] = {0, 0, 8, 1, 0, 0, 0xea, 0x60};
    f.write(reinterpret_cast<const char*>(hdr), sizeof(hdr));
  }
  expect_user_error("tr-train --data-dir " + dir.string(), "truncated");
  expect_user_error("tr-train --data-dir /nonexistent/tr-data", "/nonexistent/tr-data");
}

// The model has the training labels' classes: a test label past them is
// named with its index, before any training.
TEST(TrTrainCli, TestLabelOutsideTheTrainingClassesExitsTwo) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(testing::TempDir()) / ("tr_cli_labels_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  // IDX files of n 2x2 images and their labels.
  const auto write_split = [&](const std::string& prefix, const std::vector<unsigned char>& labels) {
    const auto n = static_cast<unsigned char>(labels.size());
    std::ofstream images(dir / (prefix + "-images-idx3-ubyte"), std::ios::binary);
    const unsigned char images_hdr[] = {0, 0, 8, 3, 0, 0, 0, n, 0, 0, 0, 2, 0, 0, 0, 2};
    images.write(reinterpret_cast<const char*>(images_hdr), sizeof(images_hdr));
    images.write(std::string(4 * size_t(n), '\x40').data(), 4 * n);
    std::ofstream lab(dir / (prefix + "-labels-idx1-ubyte"), std::ios::binary);
    const unsigned char labels_hdr[] = {0, 0, 8, 1, 0, 0, 0, n};
    lab.write(reinterpret_cast<const char*>(labels_hdr), sizeof(labels_hdr));
    lab.write(reinterpret_cast<const char*>(labels.data()), n);
  };
  write_split("train", {0, 1, 2, 1});
  write_split("t10k", {0, 2, 5, 7});
  expect_user_error("tr-train --data-dir " + dir.string(),
                    dir.string() + ": test label 5 at index 2 is not one of the training labels' 3 classes (0..2)");
  write_split("train", {0, 1, 2, 255});
  expect_user_error("tr-train --data-dir " + dir.string(),
                    (dir / "train-labels-idx1-ubyte").string() + ": label 255 at index 3 is past class 3");
  fs::remove_all(dir);
}

}  // namespace

namespace {

TEST(TrBenchCli, HelpAndBadInput) {
  const Result h = run("tr-bench --help");
  EXPECT_EQ(h.code, 0);
  EXPECT_NE(h.out.find("--mode"), std::string::npos);
  EXPECT_NE(h.out.find("nsys profile"), std::string::npos);
  expect_user_error("tr-bench --device cpu --bogus", "unknown flag --bogus");
  expect_user_error("tr-bench --device cpu --mode turbo", "unknown mode 'turbo'");
  expect_user_error("tr-bench --device cpu --batch 64,x", "--batch expects integers");
  expect_user_error("tr-bench --device cpu --batch 64,,128", "--batch: empty item in '64,,128'");
  expect_user_error("tr-bench --device cpu --variants train_first", "unknown variant 'train_first'");
  expect_user_error("tr-bench --device cpu --model resnet51",
                    "unknown model 'resnet51' (known: mlp, cnn, resnet18, resnet50, vgg16bn, gpt2, gpt2-d6)");
  expect_user_error("tr-bench --device cpu --model cnn --image-size 4 --batch 2", "smaller than its");
  expect_user_error("tr-bench --device cpu --gpus 2", "--gpus needs --device cuda");
  // Data larger than any host (2^21 images of 4096x4096, 35 TB): one line
  // with the bytes wanted and available, before anything is allocated
  // (HostMemory.* covers the arena).
  expect_user_error("tr-bench --device cpu --model mlp --image-size 4096 --batch 1048576 --mode eager",
                    "need 35184372088832 bytes (3.28e+04 GiB) of host memory but ");
  if (tr::cuda_device_count() > 0) {
    expect_user_error("tr-bench --device cuda --gpus 64", "--gpus asks for 64 GPUs but");
    // A batch the device cannot hold is one line, not a crash. fp32 resnet50 at
    // batch 2048 wants ~218 GiB of arena, but on the H200 a data gradient's one
    // deterministic cuDNN algorithm already asks for more than 8 GiB of
    // workspace, which is refused first (GpuRuntime.AnArenaPastTheFreeMemoryIsAUserError
    // covers the arena check itself).
    expect_user_error(
        "tr-bench --device cuda --model resnet50 --batch 2048 --precision fp32 --mode eager --iters 1 "
        "--repetitions 1 --warmup 0 --no-cupti",
        "use a smaller --batch");
    // One activation past cuDNN's 2^31 elements.
    expect_user_error(
        "tr-bench --device cuda --model resnet18 --image-size 512 --batch 256 --mode eager --iters 1 "
        "--repetitions 1 --warmup 0 --no-cupti",
        "more than cuDNN takes in one tensor");
  } else {
    expect_user_error("tr-bench --device cuda", "no CUDA GPU is visible");
  }
  expect_user_error("tr-bench --device cpu --precision fp8", "--precision must be fp32, amp or bf16, got 'fp8'");
  expect_user_error("tr-bench --device cpu --optimizer rmsprop", "unknown optimizer");
  expect_user_error("tr-bench --device cpu --cnn-optimizer sgd", "--cnn-optimizer is now --optimizer");
  expect_user_error("tr-bench --device cpu --bn-sync local", "unknown BN sync 'local' (expected batch or running)");
  expect_user_error("tr-bench --device cpu --batch 64 --batch-per-gpu 32", "not both");
  expect_user_error("tr-bench --device cpu --model mlp --variants train_lowres --iters 1 --repetitions 1 --warmup 0",
                    "model mlp has a spatial fully connected layer and cannot train at a lower resolution");
  expect_user_error("tr-bench --device cpu --ranks 3 --batch 64 --iters 1", "does not divide");
  expect_user_error("tr-bench gate --baseline /nonexistent/a.json --current /nonexistent/b.json",
                    "/nonexistent/a.json");
  expect_user_error("tr-bench report -o /tmp/x.html", "");
  // An unwritable report is refused before the runs, not after them.
  const Result j =
      run("tr-bench --device cpu --model mlp --batch 16 --iters 1 --repetitions 1 --warmup 0 "
          "--json /nonexistent-dir/r.json");
  EXPECT_EQ(j.code, 2) << j.err;
  EXPECT_NE(j.err.find("cannot write '/nonexistent-dir/r.json'"), std::string::npos) << j.err;
  EXPECT_EQ(j.out.find("full-capture"), std::string::npos) << "it ran first:\n" << j.out;
  expect_user_error(
      "tr-bench tta --model cnn --width 0.125 --synthetic --train-subset 64 --val-subset 32 "
      "--epochs 1 --batch 32 --no-amp --mllog /nonexistent-dir/t.mllog",
      "cannot write '/nonexistent-dir/t.mllog'");
  expect_user_error(
      "tr-bench tta --model cnn --width 0.125 --synthetic --train-subset 64 --val-subset 32 "
      "--epochs 1 --batch 32 --no-amp --json /tmp/tr_tta_same.out --mllog /tmp/./tr_tta_same.out",
      "names the --json report's file");
}

// A list names each case once: an empty item or a repeat is refused before
// any case runs, naming the flag and the item (a repeat used to run the whole
// sweep and then fail on the report's two cases of one name).
TEST(TrBenchCli, ListFlagsRefuseEmptyAndRepeatedItemsBeforeRunning) {
  expect_user_error("tr-bench --device cpu --batch 8,8", "--batch: 8 is given twice");
  expect_user_error("tr-bench --device cpu --batch 8,", "--batch: empty item in '8,'");
  expect_user_error("tr-bench --device cpu --batch ,", "--batch: empty item in ','");
  expect_user_error("tr-bench --device cpu --batch-per-gpu 8,16,8", "--batch-per-gpu: 8 is given twice");
  expect_user_error("tr-bench --device cpu --ranks 1,1", "--ranks: 1 is given twice");
  expect_user_error("tr-bench --device cpu --model mlp,mlp", "--model: mlp is given twice");
  expect_user_error("tr-bench --device cpu --mode eager,eager", "--mode: eager is given twice");
  expect_user_error("tr-bench --device cpu --mode all,eager", "--mode: eager is given twice (all includes it)");
  expect_user_error("tr-bench --device cpu --variants train_base,", "--variants: empty item in 'train_base,'");
  // The list's form is checked before the GPUs are counted, so this holds on any machine.
  expect_user_error("tr-bench --device cuda --gpus 2,2", "--gpus: 2 is given twice");
  const std::string json = testing::TempDir() + "tr_bench_cli_repeat_" + std::to_string(getpid()) + ".json";
  const Result r =
      run("tr-bench --device cpu --model mlp --batch 16,16 --mode eager --warmup 0 --iters 1 "
          "--repetitions 1 --json " +
          json);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(r.out.find("eager"), std::string::npos) << "it ran first:\n" << r.out;
  EXPECT_FALSE(std::filesystem::exists(json));
}

TEST(TrBenchCli, ShortCpuRunWritesAReport) {
  const std::string json = testing::TempDir() + "tr_bench_cli_" + std::to_string(getpid()) + ".json";
  const Result r =
      run("tr-bench --device cpu --model mlp --batch 16 --mode eager,full-capture --warmup 1 --iters 2 "
          "--repetitions 2 --json " +
          json);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("full-capture"), std::string::npos) << r.out;
  // Into a pipe, each case is logged as it ends, before the table.
  for (const std::string mode : {"eager", "full-capture"})
    EXPECT_LT(r.out.find("measured train_step/model:mlp/variant:train_base/mode:" + mode + "/"), r.out.find("model "))
        << r.out;
  EXPECT_TRUE(std::filesystem::exists(json));
  for (const tr::bench::BenchCase& c : tr::bench::read_report(json).cases)
    EXPECT_EQ(c.counters.count("device_memory_peak_bytes"), 0u) << "no device memory on the CPU";
  const Result g = run("tr-bench gate --counters-only --baseline " + json + " --current " + json);
  EXPECT_EQ(g.code, 0) << g.out << g.err;
}

// Note [convolution plan books]: a file recorded with --cudnn-benchmark makes
// another process run the same plans without timing anything, and a shape it
// does not hold is an error that names it.
TEST(TrBenchCli, ConvPlansFileReplaysTheTimedPlans) {
  SKIP_WITHOUT_GPU();
  const std::string dir = testing::TempDir() + "tr_conv_plans_cli_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const std::string plans = dir + "/plans.json", rec_json = dir + "/rec.json", rep_json = dir + "/rep.json";
  const std::string args =
      "tr-bench --device cuda --model cnn --precision amp --mode eager,full-capture "
      "--warmup 1 --iters 2 --repetitions 1 --no-cupti ";
  const Result rec = run(args + "--batch 64 --cudnn-benchmark --conv-plans " + plans + " --json " + rec_json);
  ASSERT_EQ(rec.code, 0) << rec.err;
  ASSERT_TRUE(std::filesystem::exists(plans));
  tr::ConvPlanBook book(tr::ConvPlanUse::Replay, plans);
  std::ifstream f(plans);
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  tr::read_conv_plans_json(text, book);
  // One plan per distinct cuDNN convolution (direction and shapes) of the cnn
  // at batch 64 under AMP: 17 on the H200 (2026-12-05).
  EXPECT_EQ(book.size(), 17u);
  setenv("TR_TRACE", "1", 1);
  const Result rep = run(args + "--batch 64 --conv-plans " + plans + " --json " + rep_json);
  unsetenv("TR_TRACE");
  ASSERT_EQ(rep.code, 0) << rep.err;
  EXPECT_EQ(rep.err.find("timed plan:"), std::string::npos) << "the replay timed a plan:\n" << rep.err;
  EXPECT_NE(rep.err.find("recorded plan:"), std::string::npos) << rep.err;
  EXPECT_NE(rep.out.find("tr-bench: convolution plans: replayed from " + plans), std::string::npos) << rep.out;
  const tr::bench::BenchReport a = tr::bench::read_report(rec_json), b = tr::bench::read_report(rep_json);
  EXPECT_EQ(a.context.conv_plans_digest.size(), 16u);
  EXPECT_EQ(a.context.conv_plans_digest, b.context.conv_plans_digest);
  EXPECT_TRUE(a.context.cudnn_benchmark);
  EXPECT_TRUE(b.context.cudnn_benchmark) << "replayed plans are timed plans";
  EXPECT_EQ(b.context.conv_plans_file, plans);
  EXPECT_NO_THROW(tr::bench::check_comparable(a, b, true, false));
  expect_user_error(args + "--batch 32 --conv-plans " + plans, "has no plan for conv ");
  std::printf("[ conv plans ] cnn amp at 64: %zu plans recorded, digest %s in the timed run and the replay\n",
              book.size(), b.context.conv_plans_digest.c_str());
  std::filesystem::remove_all(dir);
}

// Note [device memory]: every CUDA case says what the device held before its
// session and at its peak; the session holds at least its arena (plus the
// libraries' handles and the graphs). Off CUDA there is nothing to count.
TEST(TrBenchCli, CudaCasesReportTheirDeviceMemory) {
  SKIP_WITHOUT_GPU();
  const std::string json = testing::TempDir() + "tr_device_memory_" + std::to_string(getpid()) + ".json";
  const Result r =
      run("tr-bench --device cuda --model gpt2-d6 --precision bf16 --batch 8 --mode eager,full-capture "
          "--warmup 1 --iters 2 --repetitions 1 --no-cupti --json " +
          json);
  ASSERT_EQ(r.code, 0) << r.err;
  const tr::bench::BenchReport rep = tr::bench::read_report(json);
  ASSERT_FALSE(rep.cases.empty());
  for (const tr::bench::BenchCase& c : rep.cases) {
    const double before = c.counters.at("device_memory_before_bytes"), peak = c.counters.at("device_memory_peak_bytes");
    const double session = c.counters.at("device_memory_session_bytes"), arena = c.counters.at("arena_bytes");
    EXPECT_GT(before, 0) << c.mode << ": CUDA's context alone holds memory";
    EXPECT_EQ(session, peak - before) << c.mode;
    EXPECT_GE(session, arena) << c.mode << ": the session's arena is on the device";
    std::printf("[ device memory ] gpt2-d6 bf16 %s: before %.0f MiB, peak %.0f MiB, session %.0f MiB, arena %.0f MiB\n",
                c.mode.c_str(), before / 1048576, peak / 1048576, session / 1048576, arena / 1048576);
  }
  std::remove(json.c_str());
}

TEST(TrBenchCli, TraceMarksThePhasesOnlyWhenAsked) {
  const std::string args =
      "tr-bench --device cpu --model mlp --ranks 2 --batch 16 --mode full-capture --warmup 0 "
      "--iters 1 --repetitions 1";
  const Result quiet = run(args);
  EXPECT_EQ(quiet.code, 0) << quiet.err;
  EXPECT_EQ(quiet.err.find("[tr +"), std::string::npos) << quiet.err;
  setenv("TR_TRACE", "1", 1);
  const Result traced = run(args);
  unsetenv("TR_TRACE");
  EXPECT_EQ(traced.code, 0) << traced.err;
  // 2 ranks x (train_base: A/B x next or not) step graphs.
  for (const char* s : {"communicator: creating for 2 rank(s)", "pre_capture done", "step graphs built: 8", "bench: "})
    EXPECT_NE(traced.err.find(s), std::string::npos) << s << "\n" << traced.err;
}

TEST(TrBenchCli, BatchPerGpuSweepsRanksAndPrintsWeakScaling) {
  const std::string json = testing::TempDir() + "tr_bench_weak_" + std::to_string(getpid()) + ".json";
  const Result r =
      run("tr-bench --device cpu --model mlp --ranks 1,2 --batch-per-gpu 16 --mode full-capture "
          "--warmup 0 --iters 2 --repetitions 1 --json " +
          json);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("weak scaling efficiency"), std::string::npos) << r.out;
  std::ifstream f(json);
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("ranks:2/batch:32"), std::string::npos);  // global batch = 16 x 2
  EXPECT_NE(text.find("weak_scaling_efficiency"), std::string::npos);
}

}  // namespace
