#!/usr/bin/env bash
# Builds llm.c's GPT-2 trainer (train_gpt2cu, github.com/karpathy/llm.c) as a
# performance peer for tr's GPT-2 benchmark: the same model (GPT-2 124M,
# T = 1024) trained by a hand-written C/CUDA program instead of tr's graphs.
# ci/llmc/run.sh runs it on a GPU machine and writes its step times as JSON.
#
# Usage:
#   bash ci/llmc/build.sh LLMC_SRC [CUDNN_FRONTEND_INCLUDE]
#   (or set LLMC_SRC / CUDNN_FRONTEND_INCLUDE in the environment)
#     LLMC_SRC                an llm.c source tree (a git checkout or an exported tree;
#                             it is copied, never modified)
#     CUDNN_FRONTEND_INCLUDE  the include/ directory of NVIDIA's header-only
#                             cudnn-frontend (github.com/NVIDIA/cudnn-frontend); without
#                             it, or if that build fails, llm.c's own attention kernels are used
#   Environment:
#     LLMC_OUT       where the binary goes (default .device-llmc/ in the repository root)
#     LLMC_WORK      scratch copy of the source (default /tmp/llmc-build)
#     LLMC_COMMIT    llm.c commit to record when LLMC_SRC is not a git checkout
#     CUDA_HOME      CUDA toolkit (default /usr/local/cuda); cuDNN is expected under it
#     LLMC_ARCH      compute capability to compile for (default 90: H100/H200)
#     LLMC_USE_CUDNN 0 to skip the cuDNN attention build (default 1)
#
# Configuration (llm.c's fastest for one GPU): PRECISION=BF16 (llm.c's default),
# USE_CUDNN=1 (cuDNN flash attention through cudnn-frontend), sm_90, nvcc -O3
# --use_fast_math as llm.c's Makefile sets, NO_MULTI_GPU=1 and NO_USE_MPI=1 (one
# GPU; no NCCL, no MPI). The CUDA runtime is linked statically (nvcc's default);
# cuBLAS, cuBLASLt, cuDNN (and NVRTC, which cudnn-frontend 1.1x+ references
# for its experimental engines) dynamically, so the GPU machine must provide
# them (run.sh sets LD_LIBRARY_PATH).
#
# ci/llmc/cuda13.patch: llm.c as of May 2025 targets CUDA 12. CUDA 13 changed
# cudaMemAdvise to take a cudaMemLocation instead of a device ordinal; the patch
# passes a host location under CUDART_VERSION >= 13000 and keeps the old call
# otherwise. That call is only reached when the optimizer state does not fit on
# the GPU (llm.c then falls back to managed memory). Nothing else is changed.
#
# NVML: llm.c's Makefile links -lnvidia-ml, which only the GPU driver provides.
# llm.c uses NVML only when <nvml.h> is found at compile time, and only for its
# optional GPU-state log (-lg). When the toolkit has no nvml.h, the binary is
# linked without -lnvidia-ml; when it has one, the toolkit's NVML stub library is
# linked if present (the driver's libnvidia-ml.so.1 is used at run time).
#
# Outputs in LLMC_OUT: train_gpt2cu, train_gpt2cu.xz (to carry to a GPU machine)
# and llmc_build.txt (commit, make command, whether cuDNN attention was built).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
SRC=${1:-${LLMC_SRC:-}}
FE=${2:-${CUDNN_FRONTEND_INCLUDE:-}}
if [ -z "$SRC" ] || [ ! -f "$SRC/train_gpt2.cu" ]; then echo "build.sh: give the llm.c source dir (argument or LLMC_SRC)" >&2; exit 2; fi
SRC=$(cd "$SRC" && pwd)
OUTDIR=${LLMC_OUT:-$ROOT/.device-llmc}
WORK=${LLMC_WORK:-/tmp/llmc-build}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
ARCH=${LLMC_ARCH:-90}
USE_CUDNN=${LLMC_USE_CUDNN:-1}
export PATH="$CUDA_HOME/bin:$PATH"
command -v nvcc >/dev/null || { echo "build.sh: nvcc not found under $CUDA_HOME/bin" >&2; exit 2; }

COMMIT=${LLMC_COMMIT:-$(git -C "$SRC" rev-parse HEAD 2>/dev/null || echo unknown)}
rm -rf "$WORK" && mkdir -p "$WORK" "$OUTDIR"
cp -a "$SRC/." "$WORK/"
rm -rf "$WORK/build" "$WORK/train_gpt2cu"
(cd "$WORK" && patch -p1 --forward < "$HERE/cuda13.patch")

# link flags: llm.c's own (-lcublas -lcublasLt [-lcudnn] -lnvidia-ml), minus NVML when it is compiled out
LIBS="-L$CUDA_HOME/lib64 -lcublas -lcublasLt"
NVML_NOTE="NVML compiled out (no nvml.h in $CUDA_HOME/include)"
if [ -f "$CUDA_HOME/include/nvml.h" ]; then
  NVML_NOTE="NVML linked"
  for d in "$CUDA_HOME/lib64/stubs" "$CUDA_HOME/targets/x86_64-linux/lib/stubs"; do
    if [ -e "$d/libnvidia-ml.so" ]; then LIBS="$LIBS -L$d"; NVML_NOTE="NVML linked against the stub in $d"; break; fi
  done
  LIBS="$LIBS -lnvidia-ml"
fi

MAKE_ARGS=(train_gpt2cu PRECISION=BF16 GPU_COMPUTE_CAPABILITY="$ARCH" NO_MULTI_GPU=1 NO_USE_MPI=1 CI=true)
set_args() {  # $1 = 0|1 (cuDNN attention): sets ARGS and MAKE_CMD
  local libs=$LIBS
  ARGS=("${MAKE_ARGS[@]}" USE_CUDNN="$1")
  if [ "$1" = 1 ]; then
    libs="$libs -lcudnn"
    # newer cudnn-frontend releases carry NVRTC-compiled experimental engines
    [ -f "$FE/cudnn_frontend/experimental/nvrtc_shim.h" ] && libs="$libs -lnvrtc"
    ARGS+=(CUDNN_FRONTEND_PATH="$FE" NVCC_INCLUDES="-I$FE")
    # llm.c's Makefile insists on finding cudnn-frontend/include in the tree (or in $HOME)
    mkdir -p "$WORK/cudnn-frontend" && ln -sfn "$FE" "$WORK/cudnn-frontend/include"
  fi
  ARGS+=(NVCC_LDFLAGS="$libs")
  MAKE_CMD="make$(printf ' %q' "${ARGS[@]}")"
}
build() {  # $1 = 0|1 (cuDNN attention)
  set_args "$1"
  echo "+ (cd $WORK && $MAKE_CMD)"
  (cd "$WORK" && make clean >/dev/null 2>&1; make "${ARGS[@]}")
}

CUDNN_BUILT=0
CUDNN_NOTE="cuDNN attention not asked for (LLMC_USE_CUDNN=0)"
if [ "$USE_CUDNN" = 1 ]; then
  if [ -z "$FE" ] || [ ! -f "$FE/cudnn_frontend.h" ]; then
    CUDNN_NOTE="cuDNN attention not built: no cudnn-frontend include dir given (CUDNN_FRONTEND_INCLUDE)"
  elif [ ! -f "$CUDA_HOME/include/cudnn.h" ]; then
    CUDNN_NOTE="cuDNN attention not built: no cudnn.h under $CUDA_HOME/include"
  elif build 1 2>&1 | tee "$WORK/build_cudnn.log"; [ "${PIPESTATUS[0]}" = 0 ]; then
    CUDNN_BUILT=1
    CUDNN_NOTE="cuDNN attention built (cudnn-frontend $(grep -m1 -o 'CUDNN_FRONTEND_MAJOR_VERSION [0-9]*' "$FE/cudnn_frontend_version.h" | awk '{print $2}').$(grep -m1 -o 'CUDNN_FRONTEND_MINOR_VERSION [0-9]*' "$FE/cudnn_frontend_version.h" | awk '{print $2}'), cuDNN $(awk '/define CUDNN_MAJOR|define CUDNN_MINOR|define CUDNN_PATCHLEVEL/{printf "%s%s", s, $3; s="."}' "$CUDA_HOME/include/cudnn_version.h"))"
  else
    CUDNN_NOTE="cuDNN attention build failed (see $WORK/build_cudnn.log: $(grep -m1 -iE 'error|\*\*\*' "$WORK/build_cudnn.log" || true)); built without it"
  fi
fi
if [ "$CUDNN_BUILT" = 1 ]; then set_args 1; else build 0; fi
echo "build.sh: $CUDNN_NOTE"

cp "$WORK/train_gpt2cu" "$OUTDIR/train_gpt2cu"
xz -T0 -6 -kf "$OUTDIR/train_gpt2cu"
{
  echo "llmc_commit=$COMMIT"
  echo "cudnn_attention=$CUDNN_BUILT"
  echo "cudnn_note=$CUDNN_NOTE"
  echo "nvml=$NVML_NOTE"
  echo "nvcc=$(nvcc --version | grep -o 'release [0-9.]*, V[0-9.]*')"
  echo "make_command=$MAKE_CMD"
  echo "patch=ci/llmc/cuda13.patch"
  echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
} > "$OUTDIR/llmc_build.txt"
cat "$OUTDIR/llmc_build.txt"
ls -l "$OUTDIR"
