// tr_mpi_tests: the multi-process tests, one copy of this binary per process
// under mpirun. Every process runs every test; a test fails when it fails on
// any process (mpirun's exit code).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "tests/mpi/mpi_test_world.h"

namespace tr::testing {
namespace {
std::unique_ptr<World> g_world;
}  // namespace

World& mpi_world() { return *g_world; }

int mpi_local_ranks() {
  const char* l = std::getenv("TR_MPI_LOCAL_RANKS");
  return l ? std::atoi(l) : 1;
}

}  // namespace tr::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  tr::testing::g_world = tr::join_world(&argc, &argv);
  if (!tr::testing::g_world) {
    std::fprintf(stderr, "tr_mpi_tests: run me under mpirun (tests/mpi/run_mpi.sh)\n");
    return 2;
  }
  const int rc = RUN_ALL_TESTS();
  tr::testing::g_world.reset();  // MPI_Finalize
  return rc;
}
