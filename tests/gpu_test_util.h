#pragma once
// Note [GPU test skips]
// The one way a test waits for GPUs: SKIP_WITHOUT_GPU() or SKIP_WITHOUT_GPUS(n)
// at its start (in a fixture's SetUp for a whole suite). It counts them with
// tr::cuda_device_count(), which says 0 only where this machine has no GPU or
// no NVIDIA driver at all and throws on any other CUDA error: a GPU machine
// with a broken driver fails its GPU tests instead of passing them by skipping.
// With TR_REQUIRE_GPU=1 (ci/gpu_check.sh sets it) a machine without any GPU
// fails them too; a test that needs more GPUs than the machine has still skips,
// naming both counts. tests/mpi's tests, whose processes must skip alike, ask
// gpu_shortfall() on every process and decide together.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "framework/core/error.h"

namespace tr {
// framework/runtime/context_factory.h's, declared here alone: the op fixtures
// that use this header stay free of the runtime's headers and their names.
int cuda_device_count();
}  // namespace tr

namespace tr::testing {

// TR_REQUIRE_GPU: unset or "0" lets GPU tests skip without a GPU, "1" fails them.
inline bool gpu_required() {
  const char* v = std::getenv("TR_REQUIRE_GPU");
  if (v == nullptr || std::string(v) == "0") return false;
  if (std::string(v) == "1") return true;
  throw UserError(cat("TR_REQUIRE_GPU must be 0 or 1, got '", v, "'"));
}

// "" when `need` GPUs are visible, else why the test cannot run.
inline std::string gpu_shortfall(int need) {
  const int have = cuda_device_count();
  if (have >= need) return "";
  return have == 0 ? "no CUDA GPU" : cat("needs ", need, " CUDA GPUs, ", have, " visible");
}

// Whether a shortfall of GPUs must fail rather than skip: none at all while
// TR_REQUIRE_GPU=1.
inline bool shortfall_fails() { return gpu_required() && cuda_device_count() == 0; }

}  // namespace tr::testing

#define SKIP_WITHOUT_GPUS(n)                                                                               \
  if (const std::string tr_gpu_shortfall_ = ::tr::testing::gpu_shortfall(n); !tr_gpu_shortfall_.empty()) { \
    if (::tr::testing::shortfall_fails()) FAIL() << tr_gpu_shortfall_ << ", and TR_REQUIRE_GPU=1";         \
    GTEST_SKIP() << tr_gpu_shortfall_;                                                                     \
  }
#define SKIP_WITHOUT_GPU() SKIP_WITHOUT_GPUS(1)
