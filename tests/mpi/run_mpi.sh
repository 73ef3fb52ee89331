#!/usr/bin/env bash
# run_mpi.sh NP CMD...: CMD under mpirun with NP processes (tests/mpi/mpi_env.sh).
set -euo pipefail
source "$(dirname "$0")/mpi_env.sh"
np=$1
shift
exec "${MPIRUN[@]}" -np "$np" "$@"
