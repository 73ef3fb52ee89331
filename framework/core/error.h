#pragma once
// Errors. Note [error kinds]:
//   UserError     - bad input (flags, files, model specs, shapes): the CLI prints
//                   its one-line message and exits with code 2.
//   Error         - a failed library call or a broken internal invariant; carries
//                   file:line (and the device where it applies).
//   Fault         - an Error outside tr and its input: another process stalled
//                   or died (the watchdog). The CLI prints it as an error, not
//                   an internal one, and exits 1.
// Destructors never throw: they call warn_in_destructor() instead.
#include <sstream>
#include <stdexcept>
#include <string>

namespace tr {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class UserError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Fault : public Error {
 public:
  using Error::Error;
};

[[noreturn]] void throw_internal(const char* file, int line, const std::string& what);
// Inside a catch block: rethrows the error being handled with `where` in front
// of its message, keeping its kind (a UserError stays one; any other exception
// becomes an Error).
[[noreturn]] void rethrow_with_context(const std::string& where);
void warn_in_destructor(const char* file, int line, const std::string& what) noexcept;

// Concatenates any streamable arguments into one string.
template <typename... Args>
std::string cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

}  // namespace tr

// Internal invariant: a failure is a bug in tr, not in the caller's input.
#define TR_CHECK(cond, ...)                                                                                      \
  do {                                                                                                           \
    if (!(cond)) ::tr::throw_internal(__FILE__, __LINE__, ::tr::cat("check failed: " #cond " ", ##__VA_ARGS__)); \
  } while (0)

// Bad user input: one line naming what was wrong.
#define TR_USER_CHECK(cond, ...)                                \
  do {                                                          \
    if (!(cond)) throw ::tr::UserError(::tr::cat(__VA_ARGS__)); \
  } while (0)
