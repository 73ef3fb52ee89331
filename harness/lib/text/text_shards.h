#pragma once
// A text corpus made into token shards: every document read in name order,
// tokenized by bytes (datasets/byte_tokens.h), sent to the training or the
// validation split (Note [text split]), and each split's token stream cut
// into llm.c-format shards of `shard_tokens` tokens (the last one shorter).
// A document may continue from one shard into the next, as in llm.c's shards;
// each split's stream starts with a document token. The same corpus and
// options give the same bytes, shards and manifest on every run and machine.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "harness/lib/text/shard_manifest.h"

namespace tr::text {

struct ShardOptions {
  int val_permille = 50;               // 5 % of the documents validate
  int64_t shard_tokens = 100'000'000;  // llm.c's shard size
};

struct BuiltShards {
  ShardManifest manifest;
  std::vector<std::pair<std::string, std::string>> files;  // (file name, bytes), validation first
};

// Reads the documents `source` names (its dir, suffix and excluded folders;
// corpus, package and version are recorded as given) and makes the shards in
// memory. UserError for an unreadable corpus or options out of range.
BuiltShards build_text_shards(const CorpusSource& source, const ShardOptions& options);

// Writes the shards, then the manifest, into `out_dir`, which must be new or
// empty (a shard left from an older run would otherwise sit beside the new
// ones). Each file is written whole or not at all (Note [output paths]).
void write_text_shards(const BuiltShards& built, const std::string& out_dir);

// The tokens of one split ("train" or "val"), its shards read in order and each
// checked against the manifest: digest, header, count, vocabulary; then the
// split's totals (tokens, documents). UserError naming the file on a mismatch.
std::vector<uint16_t> read_split_tokens(const std::string& dir, const ShardManifest& manifest,
                                        const std::string& split);

}  // namespace tr::text
