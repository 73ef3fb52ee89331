#!/usr/bin/env bash
# Call 3: the GPU check's fusion-probe part, which now runs the engine probe's
# cnn cases (the 28x28 32 -> 64 filter gradient's legacy plan now cuDNN's, as
# in the step with --cudnn-filter-grad) beside cuDNN's runtime-fusion cases.
TR_CHECK_PARTS=fusion-probe bash ci/gpu_check.sh
