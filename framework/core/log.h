#pragma once
// Minimal logging to stderr. Progress lines go to stderr so stdout stays
// machine-readable.
#include <cstdio>
#include <string>

namespace tr {

inline void log_info(const std::string& msg) { std::fprintf(stderr, "tr: %s\n", msg.c_str()); }

}  // namespace tr
