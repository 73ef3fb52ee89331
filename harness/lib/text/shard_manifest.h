#pragma once
// The manifest of a folder of text shards (`manifest.json`, written by
// `tr-data shards`): where the text came from, how it was tokenized and
// split, and for each split its documents, bytes, tokens and shard files,
// each with the FNV-1a digest of its bytes. A reader trusts a shard only
// after checking it against the manifest (verify_shards).
//
//   {"format": "tr-text-shards", "version": 1,
//    "source": {"corpus": "linux-doc", "package": "linux-doc-6.1", "package_version": "6.1.192-3",
//               "dir": "...", "suffix": ".rst.txt", "excluded": ["translations"],
//               "documents": 2841, "bytes": 21372070, "fnv1a64": "..."},
//    "tokenizer": {"kind": "bytes", "vocab": 257, "document_token": 256},
//    "split": {"rule": "fnv1a64(name) % 1000 < val_permille", "val_permille": 50},
//    "shard_tokens": 100000000,
//    "splits": {"train": {"documents": ..., "bytes": ..., "tokens": ...,
//                         "shards": [{"file": "train_000000.bin", "tokens": ..., "fnv1a64": "..."}]},
//               "val": {...}}}
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tr::text {

inline constexpr const char* kManifestName = "manifest.json";
inline constexpr const char* kManifestFormat = "tr-text-shards";
inline constexpr int kManifestVersion = 1;

struct ShardEntry {
  std::string file;  // relative to the manifest's folder
  int64_t tokens = 0;
  std::string fnv1a64;  // 16 hex digits, over the whole file
};

struct SplitEntry {
  int64_t documents = 0, bytes = 0, tokens = 0;  // tokens = bytes + documents (one document token each)
  std::vector<ShardEntry> shards;
};

struct CorpusSource {
  std::string corpus;                          // a named corpus, or "dir" for --corpus-dir
  std::string package;                         // "" for a plain folder
  std::optional<std::string> package_version;  // none: not known to dpkg
  std::string dir, suffix;
  std::vector<std::string> excluded;
  int64_t documents = 0, bytes = 0;
  std::string fnv1a64;  // over every document's name and bytes, in order
};

struct ShardManifest {
  CorpusSource source;
  int64_t vocab = 0;
  int document_token = 0;
  int val_permille = 0;
  int64_t shard_tokens = 0;
  SplitEntry train, val;

  const SplitEntry& split(const std::string& name) const;  // "train" or "val"; UserError otherwise
};

nlohmann::json manifest_to_json(const ShardManifest& m);

// Every key and type checked; a wrong one is a UserError naming the file and
// the JSON path ("manifest 'x/manifest.json': splits.val.tokens: missing").
ShardManifest manifest_from_json(const nlohmann::json& j, const std::string& path);
ShardManifest read_manifest(const std::string& dir);

// "0123456789abcdef": the FNV-1a digest of `bytes`, or a digest already made.
std::string fnv1a64_hex(const std::string& bytes);
std::string digest_hex(uint64_t digest);

}  // namespace tr::text
