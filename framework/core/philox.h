#pragma once
// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
// SC'11): a counter-based generator. The output is a pure function of a
// 128-bit counter and a 64-bit key, so any thread, on any backend, gets the
// same four words for the same (counter, key) without shared state. The
// augmentation decisions (framework/ops/kernels/augment.h) rely on exactly that.
#include <cstdint>

#if defined(__CUDACC__)
#define TR_PHILOX_HD __host__ __device__ __forceinline__
#else
#define TR_PHILOX_HD inline
#endif

namespace tr {

struct Philox4 {
  uint32_t v[4];
};

// One multiply of the round: hi and lo words of a * b.
TR_PHILOX_HD void philox_mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  const uint64_t p = uint64_t(a) * uint64_t(b);
  hi = uint32_t(p >> 32);
  lo = uint32_t(p);
}

// Philox4x32 with 10 rounds: counter c[0..3], key k[0..1].
TR_PHILOX_HD Philox4 philox4x32_10(Philox4 c, uint32_t k0, uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += 0x9E3779B9u;  // the key schedule: golden ratio and sqrt(3) - 1
      k1 += 0xBB67AE85u;
    }
    uint32_t hi0, lo0, hi1, lo1;
    philox_mulhilo(0xD2511F53u, c.v[0], hi0, lo0);
    philox_mulhilo(0xCD9E8D57u, c.v[2], hi1, lo1);
    c = Philox4{{hi1 ^ c.v[1] ^ k0, lo1, hi0 ^ c.v[3] ^ k1, lo0}};
  }
  return c;
}

}  // namespace tr
