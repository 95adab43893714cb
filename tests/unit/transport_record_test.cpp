#include "workloads/transport_record.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"

namespace fb::workloads {
namespace {

// Lines in the format NCCL 2.x prints with NCCL_DEBUG=INFO, as posted in NVIDIA/nccl #952 (P2P/IPC/read and a
// NET/Socket fallback), #429 (NET/IB/0/GDRDMA, "Channel 03 :" without a /N), #1189 (channel counts) and
// nccl-tests #188 / #228 ("Using network ..."). Host names and ids shortened.
constexpr const char* kSocketFallback = R"(c1:919:1150 [0] NCCL INFO NET/IB : No device found.
c1:919:1150 [0] NCCL INFO NET/Socket : Using [0]ibs85f0:192.168.1.10<0>
c1:919:1150 [0] NCCL INFO Using network Socket
c1:919:1150 [0] NCCL INFO Channel 01/0 : 8[0] -> 15[7] via P2P/IPC/read
c1:926:1151 [7] NCCL INFO Channel 03/0 : 15[7] -> 6[6] [send] via NET/Socket/3
c1:926:1151 [7] NCCL INFO Channel 07/0 : 15[7] -> 6[6] [send] via NET/Socket/3
c1:919:1150 [0] NCCL INFO 8 coll channels, 0 collnet channels, 0 nvls channels, 8 p2p channels, 2 p2p channels per peer
some other output line
)";

constexpr const char* kIb =
    R"(m1:16194:18583 [3] NCCL INFO Channel 00 : 11[3e000] -> 9[1b000] via P2P/direct pointer
m1:16194:18586 [6] NCCL INFO Channel 03 : 7[b2000] -> 14[b1000] [receive] via NET/IB/0/GDRDMA
m1:16194:18586 [6] NCCL INFO Using network IB
m1:16194:18586 [6] NCCL INFO 16 coll channels, 0 collnet channels, 16 nvls channels, 16 p2p channels, 2 p2p channels per peer
)";

TEST(TransportRecordTest, SocketFallbackIsSeen) {
  const auto r = parse_nccl_init_log(kSocketFallback);
  EXPECT_EQ(r.network, "Socket");
  EXPECT_EQ(r.kinds, (std::set<std::string>{"p2p", "socket"}));
  EXPECT_EQ(r.peers.at("8->15"), (std::set<std::string>{"P2P/IPC/read"}));
  EXPECT_EQ(r.peers.at("15->6"), (std::set<std::string>{"NET/Socket/3"}));
  EXPECT_EQ(r.nvls_channels, 0);
  EXPECT_EQ(r.lines, 7);
  EXPECT_EQ(unexpected_transports(r, parse_transport_kinds("p2p,ib,nvls")),
            (std::vector<std::string>{"socket"}));
  EXPECT_TRUE(unexpected_transports(r, parse_transport_kinds("p2p,socket")).empty());
}

TEST(TransportRecordTest, InfinibandAndNvls) {
  auto r = parse_nccl_init_log(kIb);
  EXPECT_EQ(r.network, "IB");
  EXPECT_EQ(r.kinds, (std::set<std::string>{"ib", "nvls", "p2p"}));
  EXPECT_EQ(r.peers.at("7->14"), (std::set<std::string>{"NET/IB/0/GDRDMA"}));
  EXPECT_EQ(r.nvls_channels, 16);
  r.merge(parse_nccl_init_log(kSocketFallback));
  EXPECT_EQ(r.kinds, (std::set<std::string>{"ib", "nvls", "p2p", "socket"}));
  EXPECT_EQ(r.network, "IB");
  EXPECT_EQ(r.to_json()["kinds"].size(), 4u);
}

TEST(TransportRecordTest, KindsOfViaStrings) {
  EXPECT_EQ(transport_kind("P2P/CUMEM/read"), "p2p");
  EXPECT_EQ(transport_kind("SHM/direct/direct"), "shm");
  EXPECT_EQ(transport_kind("NET/IBext_v8/0/GDRDMA"), "ib");
  EXPECT_EQ(transport_kind("NET/Socket/0"), "socket");
  EXPECT_EQ(transport_kind("NET/AWS Libfabric/0"), "net");
}

TEST(TransportRecordTest, BadExpectedKindIsAUsageError) {
  EXPECT_THROW(parse_transport_kinds("ib,nvlink"), Error);
  EXPECT_TRUE(parse_nccl_init_log("").kinds.empty());
}

}  // namespace
}  // namespace fb::workloads
