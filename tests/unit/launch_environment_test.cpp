// The environment a supervisor's launcher gets: the enclosing mpirun job's wiring (taken from a real Open MPI
// 4.1 rank's environment) is dropped, the user's settings are kept.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "resilience/launch_environment.hpp"

namespace fb::resilience {
namespace {

TEST(LaunchEnvironment, DropsTheParentJobKeepsTheUsersSettings) {
  const std::vector<const char*> env{"PATH=/usr/bin",
                                     "OMPI_ALLOW_RUN_AS_ROOT=1",
                                     "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1",
                                     "OMPI_COMM_WORLD_RANK=0",
                                     "OMPI_COMM_WORLD_SIZE=4",
                                     "OMPI_FILE_LOCATION=/tmp/ompi.vm.0/pid.28096/0/0",
                                     "OMPI_MCA_ess=^singleton",
                                     "OMPI_MCA_ess_base_jobid=20840449",
                                     "OMPI_MCA_orte_hnp_uri=20840448.0;tcp://192.0.2.2:58029",
                                     "OMPI_MCA_pmix=^s1,s2,cray,isolated",
                                     "OMPI_MCA_initial_wdir=/work/main",
                                     "OMPI_MCA_mpi_oversubscribe=0",
                                     "OMPI_MCA_rmaps_base_oversubscribe=1",
                                     "OMPI_MCA_btl=self,vader",
                                     "PMIX_RANK=0",
                                     "PMIX_SERVER_URI4=20840448.0;tcp4://127.0.0.1:44979",
                                     "PMI_FD=5",
                                     "SLURM_JOB_ID=42",
                                     "OPENBLAS_NUM_THREADS=1",
                                     "FACTORYBENCH_INJECT=slow-rank@rank=1,delay=20ms",
                                     "FACTORYBENCH_TEST_PREFLIGHT_FAIL_SLOT=1",
                                     nullptr};
  const std::vector<std::string> want{"PATH=/usr/bin",
                                      "OMPI_ALLOW_RUN_AS_ROOT=1",
                                      "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1",
                                      "OMPI_MCA_rmaps_base_oversubscribe=1",
                                      "OMPI_MCA_btl=self,vader",
                                      "SLURM_JOB_ID=42",
                                      "OPENBLAS_NUM_THREADS=1",
                                      "FACTORYBENCH_TEST_PREFLIGHT_FAIL_SLOT=1"};
  EXPECT_EQ(launcher_environment(env.data()), want);
  EXPECT_TRUE(launcher_environment(nullptr).empty());
}

TEST(LaunchEnvironment, OutsideAnMpiJobNothingIsDropped) {
  const std::vector<const char*> env{"HOME=/root", "OMPI_MCA_btl_tcp_if_include=eth0", "EMPTY=", nullptr};
  EXPECT_EQ(launcher_environment(env.data()),
            (std::vector<std::string>{"HOME=/root", "OMPI_MCA_btl_tcp_if_include=eth0", "EMPTY="}));
}

}  // namespace
}  // namespace fb::resilience
