#include <gtest/gtest.h>

#include <cstdio>

#include "tests/gpu_test_util.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // A bad TR_REQUIRE_GPU is refused before any test runs, with or without a
  // GPU: a machine with GPUs never asks the setting again (Note [GPU test skips]).
  try {
    (void)::tr::testing::gpu_required();
  } catch (const ::tr::UserError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return RUN_ALL_TESTS();
}
