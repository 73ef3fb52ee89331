#pragma once
// The exit-code contract of every tr tool: a UserError (bad flags, files,
// values) prints one line and exits 2; any other failure exits 1.
#include <cstdio>
#include <exception>

#include "framework/core/error.h"

namespace tr {

template <typename Fn>
int run_cli(const char* tool, Fn&& fn) {
  try {
    return fn();
  } catch (const UserError& e) {
    std::fprintf(stderr, "%s: error: %s\n", tool, e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: internal error: %s\n", tool, e.what());
    return 1;
  }
}

}  // namespace tr
