// Note [processes and ranks]: which environments make a tool join an MPI
// world. A plain launch, and a Slurm batch script's own one-task step, do not.
#include <gtest/gtest.h>

#include <cstdlib>

#include "framework/comm/world.h"

namespace tr {
namespace {

class LauncherEnv : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : kVars) unsetenv(v);
  }
  void TearDown() override { SetUp(); }
  static constexpr const char* kVars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "SLURM_STEP_NUM_TASKS",
                                          "SLURM_STEP_ID"};
};

TEST_F(LauncherEnv, APlainLaunchHasNoWorld) {
  EXPECT_EQ(launcher_in_environment(), "");
  int argc = 0;
  char** argv = nullptr;
  EXPECT_EQ(join_world(&argc, &argv), nullptr);
}

TEST_F(LauncherEnv, ASlurmBatchStepOfOneTaskIsAPlainLaunch) {
  setenv("SLURM_STEP_NUM_TASKS", "1", 1);
  EXPECT_EQ(launcher_in_environment(), "");
  setenv("SLURM_STEP_NUM_TASKS", "16", 1);
  EXPECT_EQ(launcher_in_environment(), "SLURM_STEP_NUM_TASKS");
}

TEST_F(LauncherEnv, MpirunAndPmiAreLaunchers) {
  setenv("PMIX_RANK", "0", 1);
  EXPECT_EQ(launcher_in_environment(), "PMIX_RANK");
  setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
  EXPECT_EQ(launcher_in_environment(), "OMPI_COMM_WORLD_SIZE");
}

// The report's context names the launcher (World::launcher): srun's step with
// PMIx, mpirun even inside a Slurm step, and other PMI launchers apart.
TEST_F(LauncherEnv, TheLauncherIsNamed) {
  EXPECT_EQ(launcher_name(), "");
  setenv("PMIX_RANK", "0", 1);
  EXPECT_EQ(launcher_name(), "pmi");
  setenv("SLURM_STEP_ID", "3", 1);
  EXPECT_EQ(launcher_name(), "srun");
  unsetenv("PMIX_RANK");
  unsetenv("SLURM_STEP_ID");
  setenv("SLURM_STEP_NUM_TASKS", "2", 1);
  EXPECT_EQ(launcher_name(), "srun");
  setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
  EXPECT_EQ(launcher_name(), "mpirun");
}

}  // namespace
}  // namespace tr
