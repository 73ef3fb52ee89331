#pragma once
// The named text corpora `tr-data shards --corpus` knows: each is a folder of
// documents installed by a Debian package (ci/setup.sh installs them), so a
// corpus is the same bytes wherever the same package version is installed.
#include <optional>
#include <string>
#include <vector>

#include "datasets/text_corpus.h"

namespace tr::text {

struct NamedCorpus {
  std::string name;     // "linux-doc"
  std::string package;  // the Debian package that installs it
  data::CorpusSpec spec;
  std::string why;  // one line for --help: what the text is
};

// Every named corpus; the first is the default.
const std::vector<NamedCorpus>& named_corpora();

// The corpus called `name`; UserError listing the known names otherwise.
const NamedCorpus& named_corpus(const std::string& name);

// The installed version of a Debian package from dpkg's status file, or
// nothing when the package is not installed there (or the file is absent).
std::optional<std::string> debian_package_version(const std::string& package,
                                                  const std::string& status_file = "/var/lib/dpkg/status");

}  // namespace tr::text
