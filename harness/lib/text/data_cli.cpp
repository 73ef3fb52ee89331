#include "harness/lib/text/data_cli.h"

#include <cstdio>
#include <cstring>
#include <string>

#include "datasets/byte_tokens.h"
#include "framework/core/error.h"
#include "harness/lib/cli/cli_args.h"
#include "harness/lib/cli/cli_main.h"
#include "harness/lib/text/text_corpora.h"
#include "harness/lib/text/text_shards.h"

namespace tr::text {

namespace {

const char* kUsage = R"(usage: tr-data shards --out DIR [--corpus NAME | --corpus-dir DIR [--suffix S]] [options]
       tr-data check DIR

Makes text into byte-level token shards in llm.c's format (vocabulary 257: the
256 bytes and a token that opens each document), split into training and
validation by document, with a manifest of counts and digests
(docs/text_data.md).

shards:
  --out DIR             a new or empty folder for the shards and manifest.json
  --corpus NAME         a corpus installed by a Debian package (default %s):
%s  --corpus-dir DIR      any folder of text documents instead
  --suffix S            with --corpus-dir: the documents' file name ending (default: every file)
  --val-permille P      documents per thousand that validate, 0..1000 (default 50)
  --shard-tokens N      tokens per shard file (default 100000000, as llm.c)
check:
  DIR                   reads the manifest and every shard, checks digests and counts,
                        and prints the totals
  --help                this text

Exit codes: 0 success, 2 bad input (flags, corpus, shards), 1 other errors.
)";

void print_usage() {
  std::string corpora;
  for (const NamedCorpus& c : named_corpora()) corpora += cat("                          ", c.name, ": ", c.why, "\n");
  std::printf(kUsage, named_corpora().front().name.c_str(), corpora.c_str());
}

// Where the text comes from: a named corpus, or a folder given as it is.
CorpusSource corpus_source(const CliArgs& a) {
  TR_USER_CHECK(!(a.has("--corpus") && a.has("--corpus-dir")), "--corpus and --corpus-dir exclude each other");
  if (a.has("--corpus-dir")) {
    return {.corpus = "dir",
            .package = "",
            .package_version = std::nullopt,
            .dir = a.str("--corpus-dir", ""),
            .suffix = a.str("--suffix", ""),
            .excluded = {},
            .documents = 0,
            .bytes = 0,
            .fnv1a64 = ""};
  }
  TR_USER_CHECK(!a.has("--suffix"), "--suffix goes with --corpus-dir (a named corpus has its own)");
  const NamedCorpus& c = named_corpus(a.str("--corpus", named_corpora().front().name));
  CorpusSource s{.corpus = c.name,
                 .package = c.package,
                 .package_version = debian_package_version(c.package),
                 .dir = c.spec.dir,
                 .suffix = c.spec.suffix,
                 .excluded = c.spec.excluded,
                 .documents = 0,
                 .bytes = 0,
                 .fnv1a64 = ""};
  TR_USER_CHECK(s.package_version, "--corpus ", c.name, ": the package ", c.package,
                " is not installed (apt-get install ", c.package, "; ci/setup.sh does)");
  return s;
}

void print_split(const char* name, const SplitEntry& s) {
  std::printf("tr-data:   %-5s %6lld documents %11lld bytes %11lld tokens in %zu shard(s)\n", name,
              static_cast<long long>(s.documents), static_cast<long long>(s.bytes), static_cast<long long>(s.tokens),
              s.shards.size());
}

int shards_main(int argc, char** argv) {
  CliArgs a(argc, argv, {"--out", "--corpus", "--corpus-dir", "--suffix", "--val-permille", "--shard-tokens"},
            {"--help"});
  if (a.flag("--help")) return print_usage(), 0;
  TR_USER_CHECK(a.positional().empty(), "tr-data shards takes no positional argument, got '", a.positional()[0], "'");
  TR_USER_CHECK(a.has("--out"), "tr-data shards needs --out DIR");
  const std::string out = a.str("--out", "");
  const ShardOptions options{.val_permille = int(a.integer("--val-permille", 50, 0, 1000)),
                             .shard_tokens = a.integer("--shard-tokens", 100'000'000, 1, INT32_MAX)};
  const CorpusSource source = corpus_source(a);
  const BuiltShards built = build_text_shards(source, options);
  write_text_shards(built, out);
  const ShardManifest& m = built.manifest;
  std::printf("tr-data: %s (%s %s): %lld documents, %lld bytes, digest %s\n", m.source.corpus.c_str(),
              m.source.package.empty() ? m.source.dir.c_str() : m.source.package.c_str(),
              m.source.package_version.value_or("").c_str(), static_cast<long long>(m.source.documents),
              static_cast<long long>(m.source.bytes), m.source.fnv1a64.c_str());
  print_split("train", m.train);
  print_split("val", m.val);
  std::printf("tr-data: wrote %zu shard(s) and %s to %s\n", built.files.size(), kManifestName, out.c_str());
  return 0;
}

int check_main(int argc, char** argv) {
  CliArgs a(argc, argv, {}, {"--help"});
  if (a.flag("--help")) return print_usage(), 0;
  TR_USER_CHECK(a.positional().size() == 1, "tr-data check takes one folder, got ", a.positional().size(),
                " arguments");
  const std::string dir = a.positional()[0];
  const ShardManifest m = read_manifest(dir);
  TR_USER_CHECK(m.vocab == data::kByteVocab && m.document_token == data::kDocumentToken, dir,
                ": tokenizer of vocabulary ", m.vocab, " with document token ", m.document_token,
                ", expected the byte tokenizer's ", data::kByteVocab, " and ", data::kDocumentToken);
  for (const char* split : {"train", "val"}) read_split_tokens(dir, m, split);
  std::printf("tr-data: %s: %s, %lld documents; every shard matches the manifest\n", dir.c_str(),
              m.source.corpus.c_str(), static_cast<long long>(m.source.documents));
  print_split("train", m.train);
  print_split("val", m.val);
  return 0;
}

}  // namespace

int data_main(int argc, char** argv) {
  return run_cli("tr-data", [&] {
    const std::string verb = argc > 1 ? argv[1] : "";
    if (verb == "shards") return shards_main(argc - 1, argv + 1);
    if (verb == "check") return check_main(argc - 1, argv + 1);
    if (verb == "--help" || verb == "-h") return print_usage(), 0;
    throw UserError(verb.empty() ? "tr-data needs a verb: shards or check (tr-data --help)"
                                 : cat("unknown verb '", verb, "': expected shards or check (tr-data --help)"));
  });
}

}  // namespace tr::text
