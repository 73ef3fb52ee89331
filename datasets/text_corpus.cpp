#include "datasets/text_corpus.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "datasets/regular_file.h"
#include "framework/core/error.h"
#include "framework/core/fnv1a.h"

namespace tr::data {
namespace fs = std::filesystem;

namespace {

bool excluded(const std::string& name, const std::vector<std::string>& folders) {
  return std::any_of(folders.begin(), folders.end(),
                     [&](const std::string& f) { return name.size() > f.size() && name.starts_with(f + "/"); });
}

}  // namespace

std::vector<std::string> list_documents(const CorpusSpec& spec) {
  switch (path_kind(spec.dir, "a folder of text documents")) {
    case PathKind::Missing: throw UserError(cat(spec.dir, ": no such folder"));
    case PathKind::Regular: throw UserError(cat(spec.dir, ": is a file, expected a folder of text documents"));
    case PathKind::Directory: break;
  }
  std::vector<std::string> names;
  std::error_code ec;
  fs::recursive_directory_iterator it(spec.dir, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    std::error_code type_ec;  // a dangling link has no type: it is no document, and the walk goes on
    if (!it->is_regular_file(type_ec)) continue;
    const std::string name = p.lexically_relative(spec.dir).generic_string();
    if (!name.ends_with(spec.suffix) || excluded(name, spec.excluded)) continue;
    names.push_back(name);
  }
  if (ec) throw UserError(cat(spec.dir, ": cannot be walked: ", ec.message()));
  if (names.empty())
    throw UserError(
        cat(spec.dir, ": holds no document (no file named *", spec.suffix, " outside the excluded folders)"));
  std::sort(names.begin(), names.end());
  return names;
}

bool in_validation_split(std::string_view name, int val_permille) {
  TR_CHECK(val_permille >= 0 && val_permille <= 1000, "val_permille ", val_permille, " is not in [0, 1000]");
  Fnv1a h;
  h.bytes(name.data(), name.size());
  return int(h.h % 1000) < val_permille;
}

}  // namespace tr::data
