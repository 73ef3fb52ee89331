#pragma once
// Where the golden files (tests/golden/) are, wherever tr_tests runs from: a
// build tree, another directory, or a GPU machine that got the binaries and the
// source tree by copy. In order: $TR_GOLDEN_DIR; $TR_SOURCE_DIR/tests/golden
// (ctest sets it); tests/golden in the executable's directory or any above it;
// the same from the working directory up; the source tree this file was
// compiled from. The first that holds report_small.json wins.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "framework/core/error.h"

namespace tr {

inline std::string golden_dir() {
  namespace fs = std::filesystem;
  auto holds = [](const fs::path& d) {
    std::error_code ec;
    return fs::exists(d / "report_small.json", ec);
  };
  std::vector<fs::path> tried;
  auto try_dir = [&](const fs::path& d) {
    tried.push_back(d);
    return holds(d);
  };
  if (const char* g = std::getenv("TR_GOLDEN_DIR"); g && *g && try_dir(g)) return g;
  if (const char* s = std::getenv("TR_SOURCE_DIR"); s && *s && try_dir(fs::path(s) / "tests/golden"))
    return (fs::path(s) / "tests/golden").string();
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  for (const fs::path& start : {ec ? fs::path() : exe.parent_path(), fs::current_path(ec)})
    for (fs::path d = start; !d.empty(); d = d.parent_path()) {
      if (try_dir(d / "tests/golden")) return (d / "tests/golden").string();
      if (d == d.parent_path()) break;
    }
  const fs::path here = fs::path(__FILE__).parent_path() / "golden";
  if (try_dir(here)) return here.string();
  std::string list;
  for (const fs::path& p : tried) {
    list += ' ';
    list += p.string();
  }
  throw UserError(cat("golden files not found (set TR_GOLDEN_DIR); tried:", list));
}

}  // namespace tr
