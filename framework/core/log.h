#pragma once
// Minimal logging to stderr. Progress lines go to stderr so stdout stays
// machine-readable.
//
// trace(): phase markers for finding where a run stops (a hang with several
// GPUs, say), printed only when the environment sets TR_TRACE=1:
//   [tr +12.345 s] rank 1: B3.5 capture DEEP_FWD_BWD
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "framework/core/error.h"

namespace tr {

inline void log_info(const std::string& msg) { std::fprintf(stderr, "tr: %s\n", msg.c_str()); }

inline bool trace_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("TR_TRACE");
    return v != nullptr && std::strcmp(v, "1") == 0;
  }();
  return on;
}

// Seconds since the first trace (one clock for all trace() instantiations).
inline double trace_seconds() {
  static const auto t0 = std::chrono::steady_clock::now();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

template <class... Args>
void trace(const Args&... args) {
  if (!trace_enabled()) return;
  char s[32];
  std::snprintf(s, sizeof s, "%.3f", trace_seconds());
  const std::string line = cat("[tr +", s, " s] ", args...);
  std::fprintf(stderr, "%s\n", line.c_str());  // one call: lines from rank threads do not interleave
  std::fflush(stderr);
}

}  // namespace tr
