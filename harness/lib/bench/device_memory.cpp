// Note [device memory] (device_memory.h) without CUDA: nothing to count.
#include "harness/lib/bench/device_memory.h"

namespace tr::bench {

#ifndef TR_HAVE_CUDA
std::optional<int64_t> device_memory_used(int) { return std::nullopt; }
#endif

}  // namespace tr::bench
