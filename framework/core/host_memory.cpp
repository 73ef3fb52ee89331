#include "framework/core/host_memory.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "framework/core/error.h"

namespace tr {

namespace {

// "MemAvailable:   12345 kB" -> bytes; -1 when absent.
int64_t meminfo_available() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  int64_t kb = 0;
  std::string unit;
  while (f >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  return -1;
}

// A cgroup v2 file holding one number, or "max": -1 when absent or unlimited.
int64_t cgroup_value(const char* path) {
  std::ifstream f(path);
  std::string v;
  if (!(f >> v) || v == "max") return -1;
  try {
    return std::stoll(v);
  } catch (const std::exception&) {
    return -1;
  }
}

int64_t address_space_left() {
  rlimit lim{};
  if (getrlimit(RLIMIT_AS, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) return -1;
  std::ifstream f("/proc/self/statm");
  int64_t pages = 0;
  if (!(f >> pages)) return -1;
  const int64_t used = pages * sysconf(_SC_PAGESIZE);
  return std::max<int64_t>(0, static_cast<int64_t>(lim.rlim_cur) - used);
}

}  // namespace

int64_t host_available_bytes() {
  int64_t best = -1;
  auto take = [&](int64_t v) {
    if (v >= 0) best = best < 0 ? v : std::min(best, v);
  };
  take(meminfo_available());
  const int64_t limit = cgroup_value("/sys/fs/cgroup/memory.max");
  const int64_t used = cgroup_value("/sys/fs/cgroup/memory.current");
  if (limit >= 0 && used >= 0) take(std::max<int64_t>(0, limit - used));
  take(address_space_left());
  return best;
}

std::string bytes_and_gib(int64_t bytes) {
  char gib[32];
  std::snprintf(gib, sizeof gib, "%.3g", double(bytes) / (1024.0 * 1024.0 * 1024.0));
  return cat(bytes, " bytes (", gib, " GiB)");
}

}  // namespace tr
