#!/bin/bash
# tr-bench on 2 nodes x 8 GPUs under Slurm, one process per GPU (Note
# [processes and ranks], framework/comm/world.h): sbatch ci/sbatch_2x8.sh
# from the repository root, after ci/build.sh on a node (or a shared build).
#SBATCH --job-name=tr-bench-2x8
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=8
#SBATCH --gpus-per-node=8
#SBATCH --cpus-per-task=8
#SBATCH --exclusive
#SBATCH --time=00:30:00
#SBATCH --output=tr-bench-2x8-%j.log
set -euo pipefail
# NCCL: say which network to use where a node has several; WARN prints what
# goes wrong, INFO what NCCL chose (rings, trees, transports).
export NCCL_DEBUG=${NCCL_DEBUG:-WARN}
# export NCCL_SOCKET_IFNAME=ib0        # the interface for NCCL's bootstrap and socket transport
# export NCCL_IB_HCA=mlx5_0,mlx5_1     # the InfiniBand adapters NCCL may use
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
# Weak scaling over 1, 2, 4, 8 and 16 processes (--gpus auto), every mode.
# --mpi=pmix: the only --mpi Debian's Open MPI starts under. --cpus-per-task is
# given again: srun in Slurm 22.05 to 23.02 does not take it from sbatch.
srun --mpi=pmix --cpus-per-task="$SLURM_CPUS_PER_TASK" build/bin/tr-bench --device cuda --mode all --gpus auto --model resnet50 \
  --batch-per-gpu 32,256 --optimizer sgd --json "reports/resnet50_2x8_${SLURM_JOB_ID}.json"
srun --mpi=pmix --cpus-per-task="$SLURM_CPUS_PER_TASK" build/bin/tr-bench --device cuda --mode all --gpus auto --model resnet18 \
  --batch-per-gpu 128,512 --optimizer sgd --json "reports/resnet18_2x8_${SLURM_JOB_ID}.json"
