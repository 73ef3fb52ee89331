#pragma once
// Note [bulk copies into shared memory]
// Hopper's per-SM copy engine (cp.async.bulk, the non-tensor form of the TMA)
// moves a contiguous run of global memory into shared memory with no thread
// doing the loads: one thread issues the copy and a shared-memory mbarrier
// counts its bytes as they land; the threads that need the data wait on the
// barrier's phase. Meanwhile every thread keeps computing, so a block that
// loops over pieces of work (one row after another) loads the next piece while
// it works on this one, and the SM's memory traffic never stops between them.
//
// Rules (PTX ISA, cp.async.bulk and mbarrier):
// - addresses and sizes are multiples of 16 bytes;
// - a barrier completes a phase when its one arrival (the issuing thread's
//   expect_tx) and all the announced bytes are in; waiting threads pass the
//   phase by its parity: a barrier's u-th use (from 0) has parity u & 1;
// - shared memory the block's threads have read is handed back to the copy
//   engine after a __syncthreads and fence.proxy.async (the threads' reads
//   and the engine's writes go through different proxies).
// sm_90 and later; only called from kernels built for them.
#include <cstdint>

namespace tr::cuda {

__device__ __forceinline__ uint32_t shared_address(const void* p) { return uint32_t(__cvta_generic_to_shared(p)); }

// One thread: the barrier expects one arrival per phase. __syncthreads after
// it, before any thread waits on the barrier.
__device__ __forceinline__ void bulk_barrier_init(uint64_t* barrier) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(shared_address(barrier)) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#endif
}

// One thread: copies `bytes` from global `src` to shared `dst`; `barrier`'s
// current phase completes when they have landed. The copy goes in pieces of
// at most kBulkPiece bytes (the barrier counts the total).
constexpr uint32_t kBulkPiece = 32768;
__device__ __forceinline__ void bulk_load(void* dst, const void* src, uint32_t bytes, uint64_t* barrier) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const uint32_t bar = shared_address(barrier);
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // the block's reads of dst come first
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
  for (uint32_t at = 0; at < bytes; at += kBulkPiece) {
    const uint32_t piece = bytes - at < kBulkPiece ? bytes - at : kBulkPiece;
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                     shared_address(static_cast<char*>(dst) + at)),
                 "l"(static_cast<const char*>(src) + at), "r"(piece), "r"(bar)
                 : "memory");
  }
#endif
}

// Every thread that reads the copy: waits until the phase of this parity completes.
__device__ __forceinline__ void bulk_wait(uint64_t* barrier, uint32_t parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const uint32_t bar = shared_address(barrier);
  uint32_t done = 0;
  do {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n"
        "}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (done == 0);
#endif
}

}  // namespace tr::cuda
