#pragma once
// Note [device memory]
// What a bench case holds on its GPU, as cudaMemGetInfo counts it (the whole
// device: CUDA's context, the libraries' handles and workspaces, tr's arena
// and the instantiated graphs; on the GPU machine no other process runs):
//   device_memory_before_bytes   in use before the case's session is built;
//   device_memory_peak_bytes     the most in use at any of the samples taken
//                                after the session is built, after its graphs
//                                are captured and after the timed steps;
//   device_memory_session_bytes  peak - before: what the session added.
// tr allocates nothing once its arena exists (every step reuses the plan), so
// the samples see every steady state; a library's scratch taken and freed
// between two samples would not show. arena_bytes is the plan's own share.
// The PyTorch peers report torch.cuda.max_memory_allocated and
// max_memory_reserved and the same device count (peers/step_timing.py).
#include <cstdint>
#include <optional>

namespace tr::bench {

// Bytes in use on the device (total - free), or nullopt off CUDA or on error.
std::optional<int64_t> device_memory_used(int device);

}  // namespace tr::bench
