#pragma once
// A corpus of text documents: the files under a folder whose names end in a
// suffix, less the subfolders excluded. A document is named by its path
// relative to the folder ('/'-separated), and documents are ordered by name,
// byte by byte, so the order is the same on every machine whatever order the
// file system lists them in.
//
// Note [text split]: a document belongs to the validation split when
// fnv1a64(name) % 1000 < val_permille, else to training. The rule sees only
// the name: the split is the same on every run and machine, does not depend
// on which other documents exist, and a document keeps its side when the
// corpus grows (a newer package version).
#include <string>
#include <string_view>
#include <vector>

namespace tr::data {

struct CorpusSpec {
  std::string dir;                    // the folder walked (links to files are followed, to folders not)
  std::string suffix;                 // e.g. ".rst.txt"; "" takes every file
  std::vector<std::string> excluded;  // top-level subfolders left out, e.g. {"translations"}
};

// The names of the corpus's documents, sorted. UserError (one line) when the
// folder is missing or not a folder, cannot be walked, or holds no document.
std::vector<std::string> list_documents(const CorpusSpec& spec);

// Whether the document `name` is in the validation split (Note [text split]);
// val_permille in [0, 1000].
bool in_validation_split(std::string_view name, int val_permille);

}  // namespace tr::data
