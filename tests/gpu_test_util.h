#pragma once
// For GPU tests: skip cleanly where no CUDA GPU is visible.
#include <gtest/gtest.h>

#include "framework/runtime/context_factory.h"

#define SKIP_WITHOUT_GPU() \
  if (tr::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA GPU"
