#include "framework/core/error.h"

#include <cstdio>

namespace tr {

void throw_internal(const char* file, int line, const std::string& what) {
  throw Error(cat(what, " (", file, ":", line, ")"));
}

void rethrow_with_context(const std::string& where) {
  try {
    throw;
  } catch (const UserError& e) {
    throw UserError(cat(where, ": ", e.what()));
  } catch (const std::exception& e) {
    throw Error(cat(where, ": ", e.what()));
  }
}

void warn_in_destructor(const char* file, int line, const std::string& what) noexcept {
  std::fprintf(stderr, "tr: warning: %s (%s:%d)\n", what.c_str(), file, line);
}

}  // namespace tr
