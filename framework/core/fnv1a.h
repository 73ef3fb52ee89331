#pragma once
// FNV-1a, 64 bit: the digests that say "these are the same bits" (the
// collective sequence of Note [collective sequences must match], the training
// state of `tr-train --state-hash`).
#include <cstddef>
#include <cstdint>

namespace tr {

struct Fnv1a {
  uint64_t h = 1469598103934665603ull;
  void byte(unsigned char b) {
    h ^= b;
    h *= 1099511628211ull;
  }
  void bytes(const void* p, size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) byte(b[i]);
  }
  // Least significant byte first, on any host.
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) byte(static_cast<unsigned char>((v >> (8 * i)) & 0xff));
  }
};

}  // namespace tr
