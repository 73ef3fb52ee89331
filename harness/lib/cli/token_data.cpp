#include "harness/lib/cli/token_data.h"

#include <algorithm>
#include <climits>
#include <filesystem>
#include <span>

#include "datasets/token_shard.h"
#include "datasets/token_window_set.h"
#include "datasets/token_windows.h"
#include "framework/core/error.h"
#include "harness/lib/text/shard_manifest.h"
#include "harness/lib/text/text_shards.h"

namespace tr {
namespace {

namespace fs = std::filesystem;

// The synthetic streams' lengths: 2^18 tokens validate (256 windows of GPT-2's
// 1024), the 2^22 after them train (4096 windows).
constexpr int64_t kSyntheticValTokens = int64_t(1) << 18, kSyntheticTrainTokens = int64_t(1) << 22;

struct TokenStreams {
  std::vector<uint16_t> train, val;
  std::string train_what, val_what;  // names for errors
  double val_tokens_per_byte = 0;    // known for tr-data's text shards
};

// One stream, so both splits follow the same successor rule: validation first,
// then training. As with synthetic images, only the windows the subsets use
// are made (a longer stream extends a shorter one, so they are the same tokens).
TokenStreams synthetic_streams(const CliArgs& a, int64_t seq, int vocab, uint64_t seed) {
  const int64_t train_windows =
      a.integer("--train-subset", kSyntheticTrainTokens / seq, 1, kSyntheticTrainTokens / seq);
  const int64_t val_windows = a.integer("--val-subset", kSyntheticValTokens / seq, 1, kSyntheticValTokens / seq);
  const std::vector<uint16_t> all =
      data::make_synthetic_tokens(kSyntheticValTokens + train_windows * seq + 1, vocab, seed);
  TokenStreams s;
  s.val.assign(all.begin(), all.begin() + val_windows * seq + 1);
  s.train.assign(all.begin() + kSyntheticValTokens, all.end());
  s.train_what = "the synthetic training tokens";
  s.val_what = "the synthetic validation tokens";
  return s;
}

// DIR's llm.c shards of one split: the regular files named *<split>*.bin, in name order.
std::vector<uint16_t> llmc_split(const std::string& dir, const std::string& split, int vocab) {
  std::vector<std::string> paths;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (e.is_regular_file() && e.path().extension() == ".bin" && name.find(split) != std::string::npos)
      paths.push_back(e.path().string());
  }
  TR_USER_CHECK(!ec, dir, ": cannot be listed: ", ec.message());
  TR_USER_CHECK(!paths.empty(), dir, ": holds no ", text::kManifestName, " and no llm.c shard named *", split, "*.bin");
  std::sort(paths.begin(), paths.end());
  std::vector<uint16_t> tokens;
  for (const std::string& p : paths) {
    const data::TokenShard s = data::read_token_shard(p, vocab);
    tokens.insert(tokens.end(), s.tokens.begin(), s.tokens.end());
  }
  return tokens;
}

TokenStreams shard_streams(const std::string& dir, int vocab) {
  TokenStreams s;
  s.train_what = cat(dir, ": the training shards");
  s.val_what = cat(dir, ": the validation shards");
  if (fs::exists(fs::path(dir) / text::kManifestName)) {
    const text::ShardManifest m = text::read_manifest(dir);
    TR_USER_CHECK(m.vocab <= vocab, dir, ": its tokens come from a vocabulary of ", m.vocab,
                  ", larger than the model's ", vocab);
    s.train = text::read_split_tokens(dir, m, "train");
    s.val = text::read_split_tokens(dir, m, "val");
    if (m.val.bytes > 0) s.val_tokens_per_byte = double(m.val.tokens) / double(m.val.bytes);
    return s;
  }
  s.train = llmc_split(dir, "train", vocab);
  s.val = llmc_split(dir, "val", vocab);
  return s;
}

}  // namespace

RunData load_token_data(const CliArgs& a, const ModelConfig& m, uint64_t seed) {
  for (const char* f : {"--train-subset", "--val-subset"})
    if (a.has(f)) (void)a.integer(f, 1, 1, INT64_MAX);
  const bool synthetic = a.flag("--synthetic");
  TR_USER_CHECK(synthetic != a.has("--data-dir"), "model ", m.name,
                " reads tokens: give --synthetic or --data-dir DIR (tr-data's text shards, or llm.c's .bin shards)",
                synthetic ? ", not both" : "");
  const TokenStreams s =
      synthetic ? synthetic_streams(a, m.seq_len, m.classes, seed) : shard_streams(a.str("--data-dir", ""), m.classes);
  RunData d;
  d.train = data::window_images(s.train, m.seq_len, m.classes, s.train_what.c_str());
  d.test = data::window_images(s.val, m.seq_len, m.classes, s.val_what.c_str());
  d.train_count = a.integer("--train-subset", d.train.count, 1, d.train.count);
  d.test_count = a.integer("--val-subset", d.test.count, 1, d.test.count);
  d.val_tokens_per_byte = s.val_tokens_per_byte;
  return d;
}

}  // namespace tr
