// The pieces of text data below the tools: llm.c's token shard format, byte
// tokens, and how a folder of documents is listed and split.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <vector>

#include "datasets/byte_tokens.h"
#include "datasets/text_corpus.h"
#include "datasets/token_shard.h"
#include "tests/dataset_test_util.h"
#include "tests/golden_files.h"

namespace tr::testing {
namespace {

using data::encode_token_shard;
using data::parse_token_shard;
using data::read_token_shard;

std::string shard_bytes(int32_t magic, int32_t version, int32_t count, const std::vector<uint16_t>& tokens) {
  std::string b = encode_token_shard(tokens);
  auto put = [&](size_t at, int32_t v) {
    for (size_t i = 0; i < 4; ++i) b[at + i] = char((uint32_t(v) >> (8 * i)) & 0xff);
  };
  put(0, magic), put(4, version), put(8, count);
  return b;
}

std::string shard_error(const std::string& bytes, int64_t vocab = 50257) {
  return user_error([&] { parse_token_shard(bytes, "s.bin", vocab); });
}

TEST(TokenShard, ReadsAShardWrittenTheWayLlmcWritesThem) {
  // tests/golden/llmc_gpt2_shard.bin: an int32 header of 256 (20240520, 1, 6)
  // and six uint16 GPT-2 tokens, packed as llm.c's dev/data scripts pack them.
  const auto shard = read_token_shard(golden_dir() + "/llmc_gpt2_shard.bin", 50257);
  EXPECT_EQ(shard.tokens, (std::vector<uint16_t>{50256, 15496, 11, 995, 0, 50256}));
  // And ours has the same bytes.
  const Bytes golden = read_all(golden_dir() + "/llmc_gpt2_shard.bin");
  EXPECT_EQ(encode_token_shard(shard.tokens), std::string(golden.begin(), golden.end()));
}

TEST(TokenShard, RoundTripsEveryUint16) {
  std::vector<uint16_t> tokens;
  for (uint32_t t = 0; t < 65536; t += 257) tokens.push_back(uint16_t(t));
  tokens.push_back(65535);
  EXPECT_EQ(parse_token_shard(encode_token_shard(tokens), "s.bin", 65536).tokens, tokens);
  EXPECT_TRUE(parse_token_shard(encode_token_shard(std::vector<uint16_t>{}), "s.bin", 2).tokens.empty());
}

TEST(TokenShard, RefusesABadHeaderWithOneLine) {
  EXPECT_NE(shard_error("").find("s.bin: truncated header: the file holds 0 bytes"), std::string::npos);
  EXPECT_NE(shard_error(std::string(1023, '\0')).find("header needs 1024"), std::string::npos);
  EXPECT_NE(shard_error(shard_bytes(20240521, 1, 0, {})).find("bad magic number 20240521, expected 20240520"),
            std::string::npos);
  EXPECT_NE(shard_error(shard_bytes(20240801, 7, 0, {})).find("uint32 (Llama 3) tokens"), std::string::npos);
  EXPECT_NE(shard_error(shard_bytes(20240520, 2, 0, {})).find("unsupported version 2, expected 1"), std::string::npos);
  EXPECT_NE(shard_error(shard_bytes(20240520, 1, -3, {})).find("negative token count -3"), std::string::npos);
}

TEST(TokenShard, RefusesATruncatedOrLongerFile) {
  EXPECT_NE(shard_error(shard_bytes(20240520, 1, 3, {1, 2}))
                .find("truncated: header declares 3 tokens (6 bytes) but "
                      "the file holds 4 bytes after the header"),
            std::string::npos);
  EXPECT_NE(shard_error(encode_token_shard(std::vector<uint16_t>{1, 2}) + "x")
                .find("trailing data: header declares 2 tokens (4 bytes) "
                      "but 1 more bytes follow them"),
            std::string::npos);
}

TEST(TokenShard, NamesTheFileAndPositionOfATokenOutsideTheVocabulary) {
  const std::string m = shard_error(encode_token_shard(std::vector<uint16_t>{5, 256, 257}), 257);
  EXPECT_EQ(m, "s.bin: token 257 at position 2 (byte offset 1028) is outside the vocabulary of 257");
}

TEST(TokenShard, RefusesWhatIsNoRegularFile) {
  TempDir dir;
  EXPECT_NE(user_error([&] { read_token_shard(dir.file("none.bin"), 257); }).find("none.bin: no such file"),
            std::string::npos);
  EXPECT_NE(user_error([&] { read_token_shard(dir.path().string(), 257); })
                .find("is a directory, expected a token "
                      "shard"),
            std::string::npos);
  const fs::path fifo = dir.path() / "fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_NE(user_error_not_blocked_by(fifo, [&] { read_token_shard(fifo.string(), 257); }).find("a FIFO"),
            std::string::npos);
}

TEST(ByteTokens, OpenEachDocumentAndKeepEveryByte) {
  std::vector<uint16_t> tokens;
  const std::string binary("\x00\xff\n\xc3\xa9", 5);  // NUL, 0xff, a newline, UTF-8 é
  data::append_document_tokens("ab", tokens);
  data::append_document_tokens(binary, tokens);
  data::append_document_tokens("", tokens);
  EXPECT_EQ(tokens, (std::vector<uint16_t>{256, 'a', 'b', 256, 0, 255, '\n', 0xc3, 0xa9, 256}));
  EXPECT_EQ(data::documents_of(tokens), (std::vector<std::string>{"ab", binary, ""}));
  // A stream cut mid-document: its head is the first item.
  EXPECT_EQ(data::documents_of(std::span(tokens).subspan(1, 3)), (std::vector<std::string>{"ab", ""}));
  EXPECT_NE(user_error([] {
              data::documents_of(std::vector<uint16_t>{'a', 257});
            }).find("token 257 at position 1"),
            std::string::npos);
}

TEST(TextCorpus, ListsDocumentsByNameLessExcludedFolders) {
  TempDir dir;
  for (const char* f : {"z.rst.txt", "a/c.rst.txt", "a/b.txt", "translations/x.rst.txt", "a/translations/y.rst.txt",
                        "translationsextra.rst.txt"}) {
    fs::create_directories((dir.path() / f).parent_path());
    write_plain(dir.path() / f, {'t'});
  }
  fs::create_symlink(dir.path() / "gone", dir.path() / "dangling.rst.txt");
  const data::CorpusSpec spec{.dir = dir.path().string(), .suffix = ".rst.txt", .excluded = {"translations"}};
  // Only the top-level folder is excluded; a dangling link is no document.
  EXPECT_EQ(data::list_documents(spec), (std::vector<std::string>{"a/c.rst.txt", "a/translations/y.rst.txt",
                                                                  "translationsextra.rst.txt", "z.rst.txt"}));
  EXPECT_EQ(data::list_documents({.dir = spec.dir, .suffix = "", .excluded = {}}).size(), 6u);
}

TEST(TextCorpus, RefusesAMissingOrEmptyFolder) {
  TempDir dir;
  EXPECT_NE(user_error([&] {
              data::list_documents({.dir = dir.file("none"), .suffix = "", .excluded = {}});
            }).find("none: no such folder"),
            std::string::npos);
  write_plain(dir.path() / "f.txt", {'t'});
  EXPECT_NE(user_error([&] {
              data::list_documents({.dir = dir.file("f.txt"), .suffix = "", .excluded = {}});
            }).find("is a file, expected a folder"),
            std::string::npos);
  EXPECT_NE(user_error([&] {
              data::list_documents({.dir = dir.path().string(), .suffix = ".md", .excluded = {}});
            }).find("holds no document (no file named *.md"),
            std::string::npos);
}

TEST(TextCorpus, TheSplitIsAFixedFunctionOfTheName) {
  // fnv1a64(name) % 1000, computed by an independent implementation (Python):
  // index.rst.txt 580, admin-guide/README.rst.txt 487, process/howto.rst.txt 45.
  EXPECT_TRUE(data::in_validation_split("process/howto.rst.txt", 46));
  EXPECT_FALSE(data::in_validation_split("process/howto.rst.txt", 45));
  EXPECT_TRUE(data::in_validation_split("admin-guide/README.rst.txt", 488));
  EXPECT_FALSE(data::in_validation_split("admin-guide/README.rst.txt", 487));
  EXPECT_FALSE(data::in_validation_split("index.rst.txt", 580));
  EXPECT_TRUE(data::in_validation_split("index.rst.txt", 1000));
  EXPECT_FALSE(data::in_validation_split("index.rst.txt", 0));
  // Over many names, the share is the permille asked for: 10,000 names at 5 %
  // give 500 expected with a standard deviation of 21.8; the bound is 5 of them.
  int val = 0;
  for (int i = 0; i < 10000; ++i) val += data::in_validation_split("doc/" + std::to_string(i) + ".rst.txt", 50);
  EXPECT_NEAR(val, 500, 110);
}

}  // namespace
}  // namespace tr::testing
