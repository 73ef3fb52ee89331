#pragma once
// How much host memory this process may still take, for errors that must say
// "wanted N bytes, A available" (an arena that does not fit, a failed
// allocation) and for refusing such an arena before allocating it: Linux
// overcommits, so a too-large malloc may succeed and the process die later
// under the OOM killer instead of exiting with one line.
#include <cstdint>
#include <string>

namespace tr {

// The least of: MemAvailable (/proc/meminfo), the cgroup v2 limit less its
// usage (/sys/fs/cgroup/memory.max, memory.current), and RLIMIT_AS less this
// process's mapped size (/proc/self/statm). -1 when none of them is known.
int64_t host_available_bytes();

// "N bytes (G GiB)": how errors print a size.
std::string bytes_and_gib(int64_t bytes);

}  // namespace tr
