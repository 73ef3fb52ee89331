#pragma once
// Element types stored in the arena. F64 exists for the CPU reference only
// (finite-difference tests run every op in double precision). F16 and BF16
// are the compute copies' types under mixed precision (--precision amp | bf16).
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tr {

enum class DType : uint8_t { F32, F16, F64, U8, I32, BF16 };

constexpr size_t dtype_size(DType t) {
  switch (t) {
    case DType::F32: return 4;
    case DType::F16: return 2;
    case DType::F64: return 8;
    case DType::U8: return 1;
    case DType::I32: return 4;
    case DType::BF16: return 2;
  }
  return 0;
}

constexpr std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::F64: return "f64";
    case DType::U8: return "u8";
    case DType::I32: return "i32";
    case DType::BF16: return "bf16";
  }
  return "?";
}

constexpr bool is_float(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::F64; }

// The 16-bit float types of a mixed-precision model's compute copies.
constexpr bool is_half(DType t) { return t == DType::F16 || t == DType::BF16; }

}  // namespace tr
