# Sourced by the MPI test scripts: Open MPI as CI runs it. CI runs as root, in
# a container (no ptrace between processes for single-copy shared memory) and
# on 2 cores (more processes than cores; no binding, and one OpenBLAS thread
# each, so that processes and rank threads run the same GEMM code paths).
export OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_rmaps_base_oversubscribe=1
export OPENBLAS_NUM_THREADS=1
MPIRUN=(mpirun --bind-to none)
if [ "$(id -u)" -eq 0 ]; then MPIRUN+=(--allow-run-as-root); fi
