#include "harness/lib/text/text_corpora.h"

#include <fstream>
#include <sstream>

#include "framework/core/error.h"

namespace tr::text {

const std::vector<NamedCorpus>& named_corpora() {
  // linux-doc: the Linux kernel's documentation as reStructuredText (21 MB of
  // English prose in about 2,800 documents for 6.1), the sources Sphinx keeps
  // beside the HTML. The translations are left out so the text is one
  // language. Chosen over python3.11-doc (11 MB of sources) and linux-source
  // (a 139 MB download to unpack for the same documents).
  static const std::vector<NamedCorpus> corpora = {
      {.name = "linux-doc",
       .package = "linux-doc-6.1",
       .spec = {.dir = "/usr/share/doc/linux-doc-6.1/html/_sources",
                .suffix = ".rst.txt",
                .excluded = {"translations"}},
       .why = "the Linux kernel's documentation sources, English (Debian's linux-doc-6.1)"},
  };
  return corpora;
}

const NamedCorpus& named_corpus(const std::string& name) {
  std::string known;
  for (const NamedCorpus& c : named_corpora()) {
    if (c.name == name) return c;
    known += cat(known.empty() ? "" : ", ", c.name);
  }
  throw UserError(cat("--corpus ", name, ": no such corpus (known: ", known, ")"));
}

std::optional<std::string> debian_package_version(const std::string& package, const std::string& status_file) {
  std::ifstream in(status_file);
  if (!in) return std::nullopt;
  // Stanzas of "Field: value" lines, separated by blank lines.
  std::string line, name, version, status;
  auto done = [&]() -> std::optional<std::string> {
    if (name == package && status.ends_with(" installed") && !version.empty()) return version;
    return std::nullopt;
  };
  while (std::getline(in, line)) {
    if (line.empty()) {
      if (auto v = done()) return v;
      name.clear(), version.clear(), status.clear();
    } else if (line.starts_with("Package: ")) {
      name = line.substr(9);
    } else if (line.starts_with("Version: ")) {
      version = line.substr(9);
    } else if (line.starts_with("Status: ")) {
      status = line.substr(8);
    }
  }
  return done();
}

}  // namespace tr::text
