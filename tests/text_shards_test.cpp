// A folder of text made into token shards and read back (harness/lib/text):
// the same bits every run, every document where it belongs, and every way a
// manifest or shard can be wrong refused with one line; then the same through
// `tr-data`, and once over the real corpus when its package is installed.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "datasets/byte_tokens.h"
#include "datasets/text_corpus.h"
#include "harness/lib/report/json_file.h"
#include "harness/lib/text/text_corpora.h"
#include "harness/lib/text/text_shards.h"
#include "tests/dataset_test_util.h"
#include "tests/tool_run.h"

namespace tr::testing {
namespace {

using text::BuiltShards;
using text::CorpusSource;

// Eight documents; at 500 permille some validate and some train.
const std::vector<std::pair<std::string, std::string>> kDocs = {{"a.txt", "alpha"},
                                                                {"b.txt", "bravo bravo"},
                                                                {"c/d.txt", "charlie"},
                                                                {"c/e.txt", ""},
                                                                {"f.txt", "\x01\xfe utf8 \xc3\xa9"},
                                                                {"g.txt", "golf"},
                                                                {"h.txt", "hotel hotel hotel"},
                                                                {"i.txt", "india"}};

void write_corpus(const fs::path& dir) {
  for (const auto& [name, text] : kDocs) {
    fs::create_directories((dir / name).parent_path());
    write_plain(dir / name, Bytes(text.begin(), text.end()));
  }
}

CorpusSource dir_source(const fs::path& dir) {
  return {.corpus = "dir",
          .package = "",
          .package_version = std::nullopt,
          .dir = dir.string(),
          .suffix = ".txt",
          .excluded = {},
          .documents = 0,
          .bytes = 0,
          .fnv1a64 = ""};
}

struct Fixture {
  TempDir corpus, out;
  BuiltShards built;
  explicit Fixture(int64_t shard_tokens = 7) {
    write_corpus(corpus.path());
    built = text::build_text_shards(dir_source(corpus.path()), {.val_permille = 500, .shard_tokens = shard_tokens});
    fs::remove_all(out.path());
    text::write_text_shards(built, out.path().string());
  }
  std::string dir() const { return out.path().string(); }
};

TEST(TextShards, EachSplitHoldsItsDocumentsInNameOrder) {
  Fixture f;
  const text::ShardManifest m = text::read_manifest(f.dir());
  std::vector<std::string> want_train, want_val;
  for (const auto& [name, doc] : kDocs) (data::in_validation_split(name, 500) ? want_val : want_train).push_back(doc);
  ASSERT_FALSE(want_train.empty());
  ASSERT_FALSE(want_val.empty());
  EXPECT_EQ(data::documents_of(text::read_split_tokens(f.dir(), m, "train")), want_train);
  EXPECT_EQ(data::documents_of(text::read_split_tokens(f.dir(), m, "val")), want_val);
  EXPECT_EQ(m.source.documents, int64_t(kDocs.size()));
  EXPECT_EQ(m.train.documents + m.val.documents, int64_t(kDocs.size()));
  EXPECT_EQ(m.train.bytes + m.val.bytes, m.source.bytes);
  // Shards of 7 tokens, the last one shorter.
  for (const text::ShardEntry& s : m.train.shards) EXPECT_LE(s.tokens, 7);
  EXPECT_EQ(int64_t(m.train.shards.size()), (m.train.tokens + 6) / 7);
  EXPECT_EQ(m.train.shards[0].file, "train_000000.bin");
}

TEST(TextShards, TheSameCorpusGivesTheSameBytes) {
  Fixture a, b;
  ASSERT_EQ(a.built.files.size(), b.built.files.size());
  for (size_t i = 0; i < a.built.files.size(); ++i) EXPECT_EQ(a.built.files[i], b.built.files[i]);
  // The manifests differ only in the folder each corpus was read from.
  auto without_dir = [](const Fixture& f) {
    nlohmann::json j = bench::read_json_file(f.out.file("manifest.json"), "manifest");
    j["source"].erase("dir");
    return j;
  };
  EXPECT_EQ(without_dir(a), without_dir(b));
  // The corpus digest sees a document's bytes.
  write_plain(a.corpus.path() / "a.txt", {'A'});
  const BuiltShards changed = text::build_text_shards(dir_source(a.corpus.path()), {.val_permille = 500});
  EXPECT_NE(changed.manifest.source.fnv1a64, a.built.manifest.source.fnv1a64);
}

TEST(TextShards, RefusesADamagedShard) {
  Fixture f;
  const text::ShardManifest m = text::read_manifest(f.dir());
  const std::string shard = f.out.file(m.train.shards[0].file);
  Bytes b = read_all(shard);
  b.back() ^= 1;
  write_plain(shard, b);
  EXPECT_NE(user_error([&] { text::read_split_tokens(f.dir(), m, "train"); }).find("train_000000.bin: digest "),
            std::string::npos);
  fs::remove(shard);
  EXPECT_NE(user_error([&] { text::read_split_tokens(f.dir(), m, "train"); }).find("train_000000.bin: no such file"),
            std::string::npos);
}

// Rewrites manifest.json with `edit` applied, then expects `needle` in the refusal.
void expect_manifest_refused(const Fixture& f, const std::function<void(nlohmann::json&)>& edit,
                             const std::string& needle) {
  nlohmann::json j = bench::read_json_file(f.out.file("manifest.json"), "manifest");
  edit(j);
  std::ofstream(f.out.file("manifest.json")) << j.dump();
  const std::string m = user_error([&] {
    const text::ShardManifest man = text::read_manifest(f.dir());
    for (const char* split : {"train", "val"}) text::read_split_tokens(f.dir(), man, split);
  });
  EXPECT_NE(m.find(needle), std::string::npos) << m;
}

TEST(TextShards, RefusesAManifestThatDisagreesOrIsIncomplete) {
  Fixture f;
  const nlohmann::json good = bench::read_json_file(f.out.file("manifest.json"), "manifest");
  auto restore = [&](nlohmann::json& j) { j = good; };
  expect_manifest_refused(
      f, [](auto& j) { j["splits"]["val"].erase("tokens"); }, "splits.val.tokens: missing");
  expect_manifest_refused(
      f, [&](auto& j) { restore(j), j["format"] = "x"; }, "format: expected \"tr-text-shards\"");
  expect_manifest_refused(
      f, [&](auto& j) { restore(j), j["version"] = 2; }, "version: 2 is not 1");
  expect_manifest_refused(
      f, [&](auto& j) { restore(j), j["tokenizer"]["vocab"] = 70000; }, "tokenizer.vocab: 70000 is not in [1, 65536]");
  expect_manifest_refused(
      f, [&](auto& j) { restore(j), j["splits"]["train"]["shards"][0]["file"] = "../x.bin"; },
      "splits.train.shards[0].file: '../x.bin' is not a file name in the manifest's folder");
  expect_manifest_refused(
      f, [&](auto& j) { restore(j), j["splits"]["train"]["shards"][0]["tokens"] = 6; },
      "holds 7 tokens, the manifest says 6");
  expect_manifest_refused(
      f, [&](auto& j) { restore(j), j["splits"]["val"]["documents"] = 99; }, "the manifest says 99 documents");
  expect_manifest_refused(
      f, [&](auto& j) { restore(j), j["source"]["package_version"] = 3; },
      "source.package_version: expected a string or null");
}

TEST(TextShards, WritesOnlyIntoANewOrEmptyFolder) {
  Fixture f;
  EXPECT_NE(user_error([&] { text::write_text_shards(f.built, f.dir()); }).find("is not empty"), std::string::npos);
  EXPECT_NE(user_error([&] {
              text::build_text_shards(dir_source(f.corpus.path()), {.val_permille = 1001, .shard_tokens = 1});
            }).find("--val-permille 1001 is not in [0, 1000]"),
            std::string::npos);
}

TEST(TextCorpora, ReadsAPackageVersionFromDpkgStatus) {
  TempDir dir;
  const std::string status = dir.file("status");
  std::ofstream(status) << "Package: a\nStatus: install ok installed\nVersion: 1.0\n\n"
                           "Package: b\nStatus: deinstall ok config-files\nVersion: 2.0\n\n"
                           "Package: c\nVersion: 3.0-1\nStatus: install ok installed\n";
  EXPECT_EQ(text::debian_package_version("a", status), "1.0");
  EXPECT_EQ(text::debian_package_version("b", status), std::nullopt);  // removed, configuration kept
  EXPECT_EQ(text::debian_package_version("c", status), "3.0-1");       // the last stanza, no blank line after
  EXPECT_EQ(text::debian_package_version("d", status), std::nullopt);
  EXPECT_EQ(text::debian_package_version("a", dir.file("none")), std::nullopt);
  EXPECT_NE(user_error([] { text::named_corpus("gutenberg"); }).find("no such corpus (known: linux-doc)"),
            std::string::npos);
}

TEST(TrDataCli, MakesAndChecksShardsOfAFolder) {
  TempDir corpus, out;
  write_corpus(corpus.path());
  const std::string dir = out.file("shards");
  const ToolResult made = run_tool("tr-data shards --corpus-dir " + corpus.path().string() + " --suffix .txt --out " +
                                   dir + " --val-permille 500 --shard-tokens 5");
  ASSERT_EQ(made.code, 0) << made.err;
  EXPECT_NE(made.out.find("8 documents"), std::string::npos) << made.out;
  const ToolResult checked = run_tool("tr-data check " + dir);
  EXPECT_EQ(checked.code, 0) << checked.err;
  EXPECT_NE(checked.out.find("every shard matches the manifest"), std::string::npos) << checked.out;
  expect_tool_user_error("tr-data shards --corpus-dir " + corpus.path().string() + " --out " + dir, "is not empty");
  Bytes b = read_all(dir + "/val_000000.bin");
  b[1030] ^= 4;
  write_plain(dir + "/val_000000.bin", b);
  expect_tool_user_error("tr-data check " + dir, "val_000000.bin: digest ");
}

TEST(TrDataCli, RefusesBadFlagsWithOneLine) {
  EXPECT_EQ(run_tool("tr-data --help").code, 0);
  expect_tool_user_error("tr-data", "tr-data needs a verb: shards or check");
  expect_tool_user_error("tr-data split", "unknown verb 'split'");
  expect_tool_user_error("tr-data shards", "tr-data shards needs --out DIR");
  expect_tool_user_error("tr-data shards --out /tmp/x --corpus nope", "--corpus nope: no such corpus");
  expect_tool_user_error("tr-data shards --out /tmp/x --corpus linux-doc --corpus-dir /tmp",
                         "--corpus and --corpus-dir exclude each other");
  expect_tool_user_error("tr-data shards --out /tmp/x --suffix .txt", "--suffix goes with --corpus-dir");
  expect_tool_user_error("tr-data shards --out /tmp/x --val-permille 1001", "--val-permille");
  expect_tool_user_error("tr-data check", "tr-data check takes one folder, got 0");
  expect_tool_user_error("tr-data check /nonexistent", "/nonexistent/manifest.json");
}

// The real corpus (ci/setup.sh installs its package): at least 20 MB of text,
// made into shards that check, in the same bits twice.
TEST(TrDataCli, MakesTheInstalledCorpusIntoShards) {
  const text::NamedCorpus& c = text::named_corpora().front();
  if (!fs::is_directory(c.spec.dir)) GTEST_SKIP() << c.spec.dir << " not found (apt-get install " << c.package << ")";
  TempDir out;
  const ToolResult made = run_tool("tr-data shards --out " + out.file("a"));
  ASSERT_EQ(made.code, 0) << made.err;
  ASSERT_EQ(run_tool("tr-data shards --out " + out.file("b")).code, 0);
  const text::ShardManifest m = text::read_manifest(out.file("a"));
  std::printf("[ text ] %s %s: %lld documents, %lld bytes; train %lld tokens, val %lld tokens\n",
              m.source.package.c_str(), m.source.package_version.value_or("?").c_str(),
              static_cast<long long>(m.source.documents), static_cast<long long>(m.source.bytes),
              static_cast<long long>(m.train.tokens), static_cast<long long>(m.val.tokens));
  EXPECT_GE(m.source.bytes, 20'000'000);
  EXPECT_GT(m.val.tokens, 500'000);  // enough to validate on
  EXPECT_EQ(read_all(out.file("a/manifest.json")), read_all(out.file("b/manifest.json")));
  EXPECT_EQ(run_tool("tr-data check " + out.file("a")).code, 0);
}

}  // namespace
}  // namespace tr::testing
