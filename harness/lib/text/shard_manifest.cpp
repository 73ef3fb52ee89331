#include "harness/lib/text/shard_manifest.h"

#include <cstdio>
#include <filesystem>
#include <limits>

#include "framework/core/error.h"
#include "framework/core/fnv1a.h"
#include "harness/lib/report/json_file.h"

namespace tr::text {

using nlohmann::json;

namespace {

constexpr int64_t kMaxCount = std::numeric_limits<int64_t>::max();

// Reads one manifest's fields; every error names the file and the JSON path.
class FieldReader {
 public:
  explicit FieldReader(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw UserError(cat("manifest '", path_, "': ", where, ": ", what));
  }
  const json& get(const json& parent, const std::string& key, const std::string& where) const {
    if (!parent.is_object()) fail(where, "expected an object");
    const auto it = parent.find(key);
    if (it == parent.end()) fail(join(where, key), "missing");
    return *it;
  }
  int64_t integer(const json& parent, const std::string& key, const std::string& where, int64_t lo, int64_t hi) const {
    const json& v = get(parent, key, where);
    if (!v.is_number_integer()) fail(join(where, key), "expected an integer");
    const int64_t x = v.get<int64_t>();
    if (x < lo || x > hi || (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(kMaxCount)))
      fail(join(where, key), cat(v.dump(), " is not in [", lo, ", ", hi, "]"));
    return x;
  }
  std::string string(const json& parent, const std::string& key, const std::string& where) const {
    const json& v = get(parent, key, where);
    if (!v.is_string()) fail(join(where, key), "expected a string");
    return v.get<std::string>();
  }
  static std::string join(const std::string& where, const std::string& key) {
    return where.empty() ? key : cat(where, ".", key);
  }

 private:
  std::string path_;
};

json split_to_json(const SplitEntry& s) {
  json shards = json::array();
  for (const ShardEntry& e : s.shards)
    shards.push_back({{"file", e.file}, {"tokens", e.tokens}, {"fnv1a64", e.fnv1a64}});
  return {{"documents", s.documents}, {"bytes", s.bytes}, {"tokens", s.tokens}, {"shards", shards}};
}

SplitEntry split_from_json(const FieldReader& r, const json& j, const std::string& where) {
  SplitEntry s;
  s.documents = r.integer(j, "documents", where, 0, kMaxCount);
  s.bytes = r.integer(j, "bytes", where, 0, kMaxCount);
  s.tokens = r.integer(j, "tokens", where, 0, kMaxCount);
  const json& shards = r.get(j, "shards", where);
  if (!shards.is_array()) r.fail(FieldReader::join(where, "shards"), "expected an array");
  for (size_t i = 0; i < shards.size(); ++i) {
    const std::string at = cat(where, ".shards[", i, "]");
    ShardEntry e{.file = r.string(shards[i], "file", at),
                 .tokens = r.integer(shards[i], "tokens", at, 0, std::numeric_limits<int32_t>::max()),
                 .fnv1a64 = r.string(shards[i], "fnv1a64", at)};
    // A shard is named by a plain file name: the manifest may not point outside its folder.
    if (e.file.empty() || e.file.find('/') != std::string::npos || e.file == "." || e.file == "..")
      r.fail(at + ".file", cat("'", e.file, "' is not a file name in the manifest's folder"));
    s.shards.push_back(std::move(e));
  }
  return s;
}

CorpusSource source_from_json(const FieldReader& r, const json& j) {
  const std::string w = "source";
  CorpusSource s{.corpus = r.string(j, "corpus", w),
                 .package = r.string(j, "package", w),
                 .package_version = std::nullopt,
                 .dir = r.string(j, "dir", w),
                 .suffix = r.string(j, "suffix", w),
                 .excluded = {},
                 .documents = r.integer(j, "documents", w, 0, kMaxCount),
                 .bytes = r.integer(j, "bytes", w, 0, kMaxCount),
                 .fnv1a64 = r.string(j, "fnv1a64", w)};
  const json& version = r.get(j, "package_version", w);
  if (!version.is_null() && !version.is_string()) r.fail(w + ".package_version", "expected a string or null");
  if (version.is_string()) s.package_version = version.get<std::string>();
  const json& excluded = r.get(j, "excluded", w);
  if (!excluded.is_array()) r.fail(w + ".excluded", "expected an array");
  for (const json& e : excluded) {
    if (!e.is_string()) r.fail(w + ".excluded", "expected strings");
    s.excluded.push_back(e.get<std::string>());
  }
  return s;
}

}  // namespace

const SplitEntry& ShardManifest::split(const std::string& name) const {
  if (name == "train") return train;
  if (name == "val") return val;
  throw UserError(cat("split '", name, "': no such split (train, val)"));
}

json manifest_to_json(const ShardManifest& m) {
  const CorpusSource& s = m.source;
  return {{"format", kManifestFormat},
          {"version", kManifestVersion},
          {"source",
           {{"corpus", s.corpus},
            {"package", s.package},
            {"package_version", s.package_version ? json(*s.package_version) : json(nullptr)},
            {"dir", s.dir},
            {"suffix", s.suffix},
            {"excluded", s.excluded},
            {"documents", s.documents},
            {"bytes", s.bytes},
            {"fnv1a64", s.fnv1a64}}},
          {"tokenizer", {{"kind", "bytes"}, {"vocab", m.vocab}, {"document_token", m.document_token}}},
          {"split", {{"rule", "fnv1a64(name) % 1000 < val_permille"}, {"val_permille", m.val_permille}}},
          {"shard_tokens", m.shard_tokens},
          {"splits", {{"train", split_to_json(m.train)}, {"val", split_to_json(m.val)}}}};
}

ShardManifest manifest_from_json(const json& j, const std::string& path) {
  const FieldReader r(path);
  if (r.string(j, "format", "") != kManifestFormat) r.fail("format", cat("expected \"", kManifestFormat, "\""));
  const int64_t version = r.integer(j, "version", "", 0, kMaxCount);
  if (version != kManifestVersion) r.fail("version", cat(version, " is not ", kManifestVersion));
  ShardManifest m;
  m.source = source_from_json(r, r.get(j, "source", ""));
  const json& tok = r.get(j, "tokenizer", "");
  if (r.string(tok, "kind", "tokenizer") != "bytes") r.fail("tokenizer.kind", "expected \"bytes\"");
  m.vocab = r.integer(tok, "vocab", "tokenizer", 1, 65536);
  m.document_token = int(r.integer(tok, "document_token", "tokenizer", 0, m.vocab - 1));
  m.val_permille = int(r.integer(r.get(j, "split", ""), "val_permille", "split", 0, 1000));
  m.shard_tokens = r.integer(j, "shard_tokens", "", 1, std::numeric_limits<int32_t>::max());
  const json& splits = r.get(j, "splits", "");
  m.train = split_from_json(r, r.get(splits, "train", "splits"), "splits.train");
  m.val = split_from_json(r, r.get(splits, "val", "splits"), "splits.val");
  return m;
}

ShardManifest read_manifest(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / kManifestName).string();
  return manifest_from_json(bench::read_json_file(path, "manifest"), path);
}

std::string fnv1a64_hex(const std::string& bytes) {
  Fnv1a h;
  h.bytes(bytes.data(), bytes.size());
  return digest_hex(h.h);
}

std::string digest_hex(uint64_t digest) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(digest));
  return buf;
}

}  // namespace tr::text
