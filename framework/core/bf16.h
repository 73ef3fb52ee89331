#pragma once
// bfloat16 storage for the CPU backend: the high 16 bits of an IEEE binary32,
// rounded to nearest even exactly like CUDA's __float2bfloat16_rn (and
// cvt.rn.bf16.f32), so bf16 storage on the CPU and on the GPU hold the same
// bits for the same float. bf16 keeps f32's 8-bit exponent: no overflow short
// of f32's own, which is why bf16 training needs no loss scaling.
#include <cstdint>
#include <cstring>

namespace tr {

struct bf16_t {
  uint16_t bits = 0;
};

inline float bf16_to_float(bf16_t h) {
  const uint32_t x = uint32_t(h.bits) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

inline bf16_t float_to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  bf16_t h;
  if ((x & 0x7fffffffu) > 0x7f800000u) {  // nan: the canonical quiet nan cvt.rn.bf16.f32 writes
    h.bits = 0x7fffu;
    return h;
  }
  // Round the low 16 bits away, ties to even; a carry may ripple into the
  // exponent, which is correct (up to inf for values near f32's maximum).
  const uint32_t lsb = (x >> 16) & 1u;
  h.bits = uint16_t((x + 0x7fffu + lsb) >> 16);
  return h;
}

// Round a float through bf16 storage.
inline float round_to_bf16(float f) { return bf16_to_float(float_to_bf16(f)); }

}  // namespace tr
