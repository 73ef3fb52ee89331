// What a GPT model's command line reads (harness/lib/cli/token_data.h):
// synthetic token windows, llm.c's shards in name order, tr-data's shards
// through their manifest; --seq and the defaults a language model trains
// with; and one line for every input that does not fit.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "datasets/token_shard.h"
#include "harness/lib/text/text_shards.h"
#include "tests/dataset_test_util.h"
#include "tests/train_setup_util.h"

namespace tr::testing {
namespace {

// Window k's tokens, read back from the image set that carries them.
std::vector<int32_t> window(const data::ImageDataset& d, int64_t k) {
  std::vector<int32_t> w(size_t(d.width));
  std::memcpy(w.data(), d.images.data() + k * d.image_bytes(), size_t(d.image_bytes()));
  return w;
}

void write_shard(const fs::path& p, const std::vector<uint16_t>& tokens) {
  const std::string bytes = data::encode_token_shard(tokens);
  write_plain(p, Bytes(bytes.begin(), bytes.end()));
}

TEST(TokenData, SyntheticWindowsOfTheSequenceLength) {
  const TrainSetup s = setup_of("--model gpt2-d6 --synthetic --seq 64 --train-subset 10 --val-subset 3", false);
  const RunOptions& o = s.options;
  EXPECT_EQ(o.model.seq_len, 64);
  EXPECT_EQ(o.model.classes, 264);
  EXPECT_EQ(o.train.optimizer, OptimizerKind::AdamW);
  EXPECT_FLOAT_EQ(o.lr.base_lr, 1e-3f);
  EXPECT_FLOAT_EQ(o.train.label_smoothing, 0.f);  // a language model's default
  // Windows of 65 tokens that share one; only the subsets' are made.
  EXPECT_EQ(s.data.train.count, 10);
  EXPECT_EQ(s.data.test.count, 3);
  EXPECT_EQ(s.data.train_count, 10);
  EXPECT_EQ(s.data.test_count, 3);
  EXPECT_EQ(s.data.train.width, 65);
  EXPECT_EQ(s.data.train.channels, 4);
  EXPECT_EQ(window(s.data.train, 0)[64], window(s.data.train, 1)[0]);
  for (int32_t t : window(s.data.test, 2)) EXPECT_LT(t, 264);
  // The context is the default length; without subsets, 2^22 training and
  // 2^18 validation tokens; a longer stream extends a shorter one.
  const TrainSetup whole = setup_of("--model gpt2-d6 --synthetic --seq 64", false);
  EXPECT_EQ(whole.data.train.count, (int64_t(1) << 22) / 64);
  EXPECT_EQ(whole.data.test.count, (int64_t(1) << 18) / 64);
  EXPECT_EQ(window(whole.data.train, 9), window(s.data.train, 9));
  EXPECT_EQ(window(whole.data.test, 2), window(s.data.test, 2));
  EXPECT_EQ(setup_of("--model gpt2-d6 --synthetic --train-subset 1 --val-subset 1", false).options.model.seq_len, 256);
}

// --seq-warmup: the first epochs on shorter windows (Note [sequence warm-up]).
TEST(TokenData, ASequenceWarmupIsTheFirstEpochsAtAShorterLength) {
  const RunOptions o = setup_of("--model gpt2-d6 --synthetic --seq 64 --seq-warmup 16 --epochs 3", false).options;
  EXPECT_EQ(o.lowres_size, 16);
  EXPECT_EQ(o.lowres_epochs, 1);
  EXPECT_EQ(setup_of("--model gpt2-d6 --synthetic --seq-warmup 16 --seq-warmup-epochs 2 --epochs 3", false)
                .options.lowres_epochs,
            2);
  EXPECT_EQ(setup_of("--model gpt2-d6 --synthetic", false).options.lowres_epochs, 0);
}

TEST(TokenData, OptionsThatDoNotFitAreRefused) {
  EXPECT_NE(user_error([] {
              setup_of("--model cnn --synthetic --seq-warmup 8", false);
            }).find("--seq-warmup is for GPT models; cnn reads images"),
            std::string::npos);
  EXPECT_NE(user_error([] {
              setup_of("--model gpt2-d6 --synthetic --lowres-epochs 1", false);
            }).find("model gpt2-d6 reads tokens: give --seq-warmup T (and --seq-warmup-epochs N) instead"),
            std::string::npos);
  EXPECT_NE(user_error([] {
              setup_of("--model gpt2-d6 --synthetic --seq-warmup-epochs 1", false);
            }).find("--seq-warmup-epochs needs --seq-warmup T"),
            std::string::npos);
  EXPECT_NE(user_error([] {
              setup_of("--model gpt2-d6 --synthetic --seq 257", false);
            }).find("--seq must be in [1, 256], got 257"),
            std::string::npos);
  EXPECT_NE(user_error([] {
              setup_of("--model cnn --synthetic --seq 8", false);
            }).find("--seq is for GPT models; cnn reads images"),
            std::string::npos);
  EXPECT_NE(user_error([] {
              setup_of("--model gpt2-d6", false);
            }).find("model gpt2-d6 reads tokens: give --synthetic or --data-dir DIR"),
            std::string::npos);
  EXPECT_NE(user_error([] {
              setup_of("--model gpt2-d6 --synthetic --image-size 32", false);
            }).find("model gpt2-d6 reads tokens: an image size or channel count has no meaning for it"),
            std::string::npos);
}

// Shards written the way llm.c writes them: each split's files in name
// order, whatever else the folder holds.
TEST(TokenData, LlmcShardsLoadInNameOrder) {
  TempDir dir;
  std::vector<uint16_t> train(300), val(40);
  for (size_t i = 0; i < train.size(); ++i) train[i] = uint16_t((i * 7) % 264);
  for (size_t i = 0; i < val.size(); ++i) val[i] = uint16_t((i * 5) % 264);
  write_shard(dir.path() / "tiny_train_000002.bin", {train.begin() + 100, train.end()});
  write_shard(dir.path() / "tiny_train_000001.bin", {train.begin(), train.begin() + 100});
  write_shard(dir.path() / "tiny_val_000000.bin", val);
  write_plain(dir.path() / "README.txt", Bytes{'x'});
  const TrainSetup s = setup_of("--model gpt2-d6 --seq 16 --data-dir " + dir.path().string(), false);
  ASSERT_EQ(s.data.train.count, (300 - 1) / 16);
  ASSERT_EQ(s.data.test.count, (40 - 1) / 16);
  for (int64_t k : {int64_t(0), int64_t(6), s.data.train.count - 1}) {
    const std::vector<int32_t> w = window(s.data.train, k);
    for (int t = 0; t <= 16; ++t)
      ASSERT_EQ(w[size_t(t)], train[size_t(k * 16 + t)]) << "window " << k << " token " << t;
  }
  EXPECT_EQ(window(s.data.test, 1)[3], val[16 + 3]);

  // A token outside the model's vocabulary names its file and position.
  val[7] = 264;
  write_shard(dir.path() / "tiny_val_000000.bin", val);
  EXPECT_NE(user_error([&] {
              setup_of("--model gpt2-d6 --seq 16 --data-dir " + dir.path().string(), false);
            }).find("tiny_val_000000.bin: token 264 at position 7"),
            std::string::npos);
  TempDir empty;
  EXPECT_NE(user_error([&] {
              setup_of("--model gpt2-d6 --data-dir " + empty.path().string(), false);
            }).find(": holds no manifest.json and no llm.c shard named *train*.bin"),
            std::string::npos);
}

// tr-data's shards load through their manifest, which checks every one.
TEST(TokenData, TextShardsLoadThroughTheirManifest) {
  TempDir corpus, out;
  for (int i = 0; i < 12; ++i) write_plain(corpus.path() / ("doc" + std::to_string(i) + ".txt"), Bytes(40, 'a' + i));
  const text::CorpusSource src{.corpus = "dir",
                               .package = "",
                               .package_version = std::nullopt,
                               .dir = corpus.path().string(),
                               .suffix = ".txt",
                               .excluded = {},
                               .documents = 0,
                               .bytes = 0,
                               .fnv1a64 = ""};
  const text::BuiltShards built = text::build_text_shards(src, {.val_permille = 500, .shard_tokens = 64});
  fs::remove_all(out.path());
  text::write_text_shards(built, out.path().string());
  const std::string flags = "--model gpt2-d6 --seq 8 --data-dir " + out.path().string();
  const TrainSetup s = setup_of(flags, false);
  EXPECT_EQ(s.data.train.count, (built.manifest.train.tokens - 1) / 8);
  EXPECT_EQ(s.data.test.count, (built.manifest.val.tokens - 1) / 8);
  EXPECT_EQ(window(s.data.train, 0)[0], 256);  // each split opens with a document token
  // A changed shard is refused by its digest.
  const fs::path first = out.path() / built.manifest.val.shards.front().file;
  Bytes b = read_all(first);
  b.back() ^= 1;
  write_plain(first, b);
  EXPECT_NE(user_error([&] { setup_of(flags, false); }).find("differs from the manifest's"), std::string::npos);
}

}  // namespace
}  // namespace tr::testing
