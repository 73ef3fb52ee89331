#pragma once
// The MPI world of tr_mpi_tests (Note [processes and ranks]): joined once in
// main, before any test, and ended after the last; run under mpirun by ctest
// (tests/mpi/run_mpi.sh). TR_MPI_LOCAL_RANKS sets the rank threads per process.
#include "framework/comm/world.h"

namespace tr::testing {

World& mpi_world();
int mpi_local_ranks();

}  // namespace tr::testing
