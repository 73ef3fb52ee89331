#pragma once
// One double through a printf format ("%g", "%.2f"), as a string: the numbers
// of the HTML reports' charts and tables.
#include <cstdio>
#include <string>

namespace tr::bench {

inline std::string fmt_double(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

}  // namespace tr::bench
