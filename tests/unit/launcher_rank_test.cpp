// The launcher's rank read before MPI starts (core/mpi_context.hpp): it decides which process prints usage
// errors and writes the report of a command that never starts MPI. A rank counts only with a world size
// above one beside it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <initializer_list>
#include <optional>

#include "core/mpi_context.hpp"

namespace fb {
namespace {

constexpr const char* kVars[] = {
    "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK",   "PMI_RANK", "PMI_SIZE",
    "SLURM_PROCID",         "SLURM_NTASKS",         "SLURM_NPROCS"};

struct CleanLauncherEnvironment : ::testing::Test {
  void SetUp() override {
    for (const char* v : kVars) unsetenv(v);
  }
  void TearDown() override { SetUp(); }
};

TEST_F(CleanLauncherEnvironment, NoLauncherIsRankZero) {
  EXPECT_EQ(launcher_rank(), 0);
  EXPECT_FALSE(launched_with_peers());
  EXPECT_EQ(launcher_world_size(), std::nullopt);
}

TEST_F(CleanLauncherEnvironment, ARankWithItsWorldSizeCounts) {
  setenv("OMPI_COMM_WORLD_RANK", "3", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
  EXPECT_EQ(launcher_rank(), 3);
  EXPECT_EQ(launcher_world_size(), 4);  // the start-up report's world_size before MPI is up
  SetUp();
  setenv("SLURM_PROCID", "2", 1);
  setenv("SLURM_NTASKS", "8", 1);
  EXPECT_EQ(launcher_rank(), 2);
  EXPECT_EQ(launcher_world_size(), 8);
  SetUp();
  setenv("SLURM_PROCID", "2", 1);
  setenv("SLURM_NPROCS", "8", 1);  // older Slurm
  EXPECT_EQ(launcher_rank(), 2);
  EXPECT_EQ(launcher_world_size(), 8);
  SetUp();
  setenv("PMIX_RANK", "5", 1);  // PMIx has no size variable
  EXPECT_EQ(launcher_rank(), 5);
  EXPECT_TRUE(launched_with_peers());
  EXPECT_EQ(launcher_world_size(), std::nullopt);
}

// A variable left over from an outer job, without a world size (or a world of one), leaves a process that is
// alone as rank 0: it used to stay silent on a usage error and skip writing its -o report.
TEST_F(CleanLauncherEnvironment, ALeftoverRankWithoutAWorldIsAlone) {
  setenv("SLURM_PROCID", "1", 1);
  EXPECT_EQ(launcher_rank(), 0);
  setenv("SLURM_NTASKS", "1", 1);
  EXPECT_EQ(launcher_rank(), 0);
  SetUp();
  setenv("PMI_RANK", "1", 1);
  EXPECT_EQ(launcher_rank(), 0);
  EXPECT_EQ(launcher_world_size(), std::nullopt);
}

}  // namespace
}  // namespace fb
