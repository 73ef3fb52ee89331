#include "harness/lib/text/text_shards.h"

#include <algorithm>
#include <filesystem>
#include <span>

#include "datasets/byte_tokens.h"
#include "datasets/regular_file.h"
#include "datasets/text_corpus.h"
#include "datasets/token_shard.h"
#include "framework/core/error.h"
#include "framework/core/fnv1a.h"
#include "harness/lib/report/atomic_file.h"

namespace tr::text {
namespace fs = std::filesystem;

namespace {

std::string shard_name(const std::string& split, size_t index) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%s_%06zu.bin", split.c_str(), index);
  return buf;
}

// Cuts one split's token stream into shards, recording each in `entry`.
void cut_shards(const std::string& split, const std::vector<uint16_t>& tokens, int64_t shard_tokens, SplitEntry& entry,
                BuiltShards& out) {
  entry.tokens = int64_t(tokens.size());
  for (size_t begin = 0, i = 0; begin < tokens.size(); begin += size_t(shard_tokens), ++i) {
    const size_t n = std::min(tokens.size() - begin, size_t(shard_tokens));
    std::string bytes = data::encode_token_shard(std::span(tokens).subspan(begin, n));
    entry.shards.push_back({.file = shard_name(split, i), .tokens = int64_t(n), .fnv1a64 = fnv1a64_hex(bytes)});
    out.files.emplace_back(entry.shards.back().file, std::move(bytes));
  }
}

void check_options(const ShardOptions& o) {
  TR_USER_CHECK(o.val_permille >= 0 && o.val_permille <= 1000, "--val-permille ", o.val_permille,
                " is not in [0, 1000]");
  TR_USER_CHECK(o.shard_tokens >= 1 && o.shard_tokens <= INT32_MAX, "--shard-tokens ", o.shard_tokens,
                " is not in [1, 2147483647] (llm.c's header counts tokens in an int32)");
}

}  // namespace

BuiltShards build_text_shards(const CorpusSource& source, const ShardOptions& options) {
  check_options(options);
  BuiltShards out;
  ShardManifest& m = out.manifest;
  m.source = source;
  m.vocab = data::kByteVocab;
  m.document_token = data::kDocumentToken;
  m.val_permille = options.val_permille;
  m.shard_tokens = options.shard_tokens;
  const data::CorpusSpec spec{.dir = source.dir, .suffix = source.suffix, .excluded = source.excluded};
  std::vector<uint16_t> train, val;
  Fnv1a digest;
  m.source.documents = m.source.bytes = 0;
  for (const std::string& name : data::list_documents(spec)) {
    const std::string text = data::read_regular_file((fs::path(source.dir) / name).string(), "a text document");
    digest.bytes(name.data(), name.size());
    digest.byte(0);
    digest.u64(text.size());
    digest.bytes(text.data(), text.size());
    const bool is_val = data::in_validation_split(name, options.val_permille);
    SplitEntry& entry = is_val ? m.val : m.train;
    data::append_document_tokens(text, is_val ? val : train);
    entry.documents += 1;
    entry.bytes += int64_t(text.size());
    m.source.documents += 1;
    m.source.bytes += int64_t(text.size());
  }
  m.source.fnv1a64 = digest_hex(digest.h);
  cut_shards("val", val, options.shard_tokens, m.val, out);
  cut_shards("train", train, options.shard_tokens, m.train, out);
  return out;
}

void write_text_shards(const BuiltShards& built, const std::string& out_dir) {
  std::error_code ec;
  if (fs::exists(out_dir, ec)) {
    TR_USER_CHECK(fs::is_directory(out_dir, ec), out_dir, ": is not a folder");
    TR_USER_CHECK(fs::is_empty(out_dir, ec) && !ec, out_dir,
                  ": is not empty; give a new or empty folder (older shards would sit beside the new ones)");
  } else {
    fs::create_directories(out_dir, ec);
    TR_USER_CHECK(!ec, out_dir, ": cannot be created: ", ec.message());
  }
  for (const auto& [name, bytes] : built.files) write_file_atomically((fs::path(out_dir) / name).string(), bytes);
  write_file_atomically((fs::path(out_dir) / kManifestName).string(), manifest_to_json(built.manifest).dump(2) + "\n");
}

std::vector<uint16_t> read_split_tokens(const std::string& dir, const ShardManifest& m, const std::string& split) {
  const SplitEntry& entry = m.split(split);
  std::vector<uint16_t> tokens;
  tokens.reserve(size_t(entry.tokens));
  for (const ShardEntry& s : entry.shards) {
    const std::string path = (fs::path(dir) / s.file).string();
    const std::string bytes = data::read_regular_file(path, "a token shard");
    const std::string digest = fnv1a64_hex(bytes);
    TR_USER_CHECK(digest == s.fnv1a64, path, ": digest ", digest, " differs from the manifest's ", s.fnv1a64,
                  " (the shard was changed or damaged)");
    const data::TokenShard shard = data::parse_token_shard(bytes, path, m.vocab);
    TR_USER_CHECK(int64_t(shard.tokens.size()) == s.tokens, path, ": holds ", shard.tokens.size(),
                  " tokens, the manifest says ", s.tokens);
    tokens.insert(tokens.end(), shard.tokens.begin(), shard.tokens.end());
  }
  TR_USER_CHECK(int64_t(tokens.size()) == entry.tokens, dir, ": the ", split, " shards hold ", tokens.size(),
                " tokens, the manifest says ", entry.tokens);
  const auto docs = std::count(tokens.begin(), tokens.end(), uint16_t(m.document_token));
  TR_USER_CHECK(docs == entry.documents && entry.tokens == entry.bytes + entry.documents, dir, ": the ", split,
                " shards hold ", docs, " documents, the manifest says ", entry.documents, " documents of ", entry.bytes,
                " bytes in ", entry.tokens, " tokens");
  return tokens;
}

}  // namespace tr::text
