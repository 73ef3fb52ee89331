#pragma once
// A digest of a rank's whole training state (master weights, optimizer state,
// EMA, BN running statistics), for `tr-train --state-hash`: two runs that
// printed the same digest hold the same bits, whatever launched them (threads
// or processes, eager or captured).
#include <cstdint>
#include <string>

#include "framework/train/trainer.h"

namespace tr {

struct StateDigest {
  uint64_t hash = 0;  // FNV-1a over the tensors' bytes, in tensor-id order
  int tensors = 0;
  int64_t floats = 0;
  std::string str() const;  // "0x... (N tensors, M floats)"
};

// The state of this process's local rank `local`.
StateDigest state_digest(Trainer& t, int local = 0);

}  // namespace tr
