// Ranks that share their compute (workloads/shared_compute.hpp): a node is named when its ranks outnumber the
// union of the cores or GPUs they hold, whatever each rank holds alone.
#include <gtest/gtest.h>

#include "workloads/shared_compute.hpp"

namespace fb::workloads {
namespace {

using Names = std::vector<std::string>;

TEST(NodesSharingUnits, UnboundRanksOutnumberingTheCoresShareThem) {
  // The quickstart: 4 ranks on a 2-core host, none bound (each mask holds both cores).
  const std::vector<RankUnits> ranks(4, RankUnits{"vm", {"0", "1"}});
  EXPECT_EQ(nodes_sharing_units(ranks, "core"), (Names{"vm: 4 ranks share 2 cores"}));
  // As many ranks as cores: each can run at once.
  EXPECT_EQ(nodes_sharing_units(std::span(ranks).first(2), "core"), Names{});
}

TEST(NodesSharingUnits, RanksBoundToOneCoreEachDoNotShareButTwoOnTheSameCoreDo) {
  const std::vector<RankUnits> bound = {{"n1", {"0"}}, {"n1", {"1"}}, {"n1", {"2"}}};
  EXPECT_EQ(nodes_sharing_units(bound, "core"), Names{});
  // `taskset -c 0 mpirun --bind-to none -np 2`: each rank holds one core, the same one.
  const std::vector<RankUnits> same = {{"n1", {"0"}}, {"n1", {"0"}}};
  EXPECT_EQ(nodes_sharing_units(same, "core"), (Names{"n1: 2 ranks share 1 core"}));
}

TEST(NodesSharingUnits, EachNodeIsCountedAloneAndNamedInTheOrderSeen) {
  // Core 0 on two different hosts is two cores; n2 runs 3 ranks on its 2.
  const std::vector<RankUnits> ranks = {{"n2", {"0", "1"}}, {"n1", {"0"}}, {"n2", {"0", "1"}},
                                        {"n1", {"1"}},      {"n3", {"0"}}, {"n2", {"0", "1"}},
                                        {"n3", {"0"}}};
  EXPECT_EQ(nodes_sharing_units(ranks, "core"),
            (Names{"n2: 3 ranks share 2 cores", "n3: 2 ranks share 1 core"}));
}

TEST(NodesSharingUnits, GpusByUuidSoCudaVisibleDevicesPerRankIsNotSharing) {
  // Each rank sees its own GPU as device 0: the UUIDs differ, so no sharing.
  const std::vector<RankUnits> own = {{"g1", {"GPU-aa"}}, {"g1", {"GPU-bb"}}};
  EXPECT_EQ(nodes_sharing_units(own, "GPU"), Names{});
  const std::vector<RankUnits> one = {{"g1", {"GPU-aa"}}, {"g1", {"GPU-aa"}}, {"g1", {"GPU-bb"}}};
  EXPECT_EQ(nodes_sharing_units(one, "GPU"), (Names{"g1: 3 ranks share 2 GPUs"}));
}

TEST(NodesSharingUnits, NoRanksNoNodes) {
  EXPECT_EQ(nodes_sharing_units({}, "core"), Names{});
}

}  // namespace
}  // namespace fb::workloads
