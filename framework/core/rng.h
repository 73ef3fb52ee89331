#pragma once
// Deterministic counter-based random numbers (SplitMix64). Same seed -> same
// stream on every machine, so weights, shuffles and synthetic data reproduce.
#include <cmath>
#include <cstdint>

namespace tr {

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next_u64() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1).
  double uniform() { return double(next_u64() >> 11) * 0x1.0p-53; }
  float uniform(float lo, float hi) { return lo + float(uniform()) * (hi - lo); }
  // Standard normal (Box-Muller).
  double normal() {
    double u1 = uniform(), u2 = uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  uint64_t below(uint64_t n) { return next_u64() % n; }

 private:
  uint64_t state_;
};

}  // namespace tr
