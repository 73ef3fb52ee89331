#pragma once
// IEEE binary16 storage for the CPU backend. Conversions round to nearest even,
// exactly like CUDA's __float2half_rn, so fp16 storage on the CPU and on the GPU
// hold the same bits for the same float.
#include <cstdint>
#include <cstring>

namespace tr {

struct half_t {
  uint16_t bits = 0;
};

inline float half_to_float(half_t h) {
  const uint32_t sign = (uint32_t(h.bits) & 0x8000u) << 16;
  uint32_t exp = (h.bits >> 10) & 0x1fu;
  uint32_t man = h.bits & 0x3ffu;
  uint32_t out;
  if (exp == 0) {
    if (man == 0) {
      out = sign;
    } else {  // subnormal: renormalise
      exp = 127 - 15 + 1;
      while ((man & 0x400u) == 0) {
        man <<= 1;
        --exp;
      }
      man &= 0x3ffu;
      out = sign | (exp << 23) | (man << 13);
    }
  } else if (exp == 0x1f) {
    out = sign | 0x7f800000u | (man << 13);  // inf / nan
  } else {
    out = sign | ((exp + 127 - 15) << 23) | (man << 13);
  }
  float f;
  std::memcpy(&f, &out, 4);
  return f;
}

inline half_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = uint16_t((x >> 16) & 0x8000u);
  const uint32_t absx = x & 0x7fffffffu;
  half_t h;
  if (absx >= 0x7f800000u) {  // inf or nan (keep nan quiet)
    h.bits = sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0u);
    return h;
  }
  if (absx >= 0x477ff000u) {  // rounds to >= 65520: overflow to inf
    h.bits = sign | 0x7c00u;
    return h;
  }
  if (absx < 0x38800000u) {    // below the smallest normal half: subnormal or zero
    if (absx < 0x33000000u) {  // < 2^-25: rounds to zero
      h.bits = sign;
      return h;
    }
    const uint32_t e = absx >> 23;
    const uint32_t m = (absx & 0x7fffffu) | 0x800000u;
    const int shift = int(126 - e);  // 14 + (113 - e) ... result mantissa bits
    const uint32_t half_m = m >> (shift);
    const uint32_t rem = m & ((1u << shift) - 1u);
    const uint32_t halfway = 1u << (shift - 1);
    uint32_t r = half_m;
    if (rem > halfway || (rem == halfway && (half_m & 1u))) ++r;
    h.bits = uint16_t(sign | r);
    return h;
  }
  // normal: rebias exponent, round mantissa from 23 to 10 bits
  uint32_t r = ((absx - 0x38000000u) >> 13);
  const uint32_t rem = absx & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) ++r;
  h.bits = uint16_t(sign | r);
  return h;
}

// Round a float through fp16 storage.
inline float round_to_half(float f) { return half_to_float(float_to_half(f)); }

}  // namespace tr
