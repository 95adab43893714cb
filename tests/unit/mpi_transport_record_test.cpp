#include "workloads/mpi_transport_record.hpp"

#include <gtest/gtest.h>

namespace fb::workloads {
namespace {

// /proc/self/maps lines of an Open MPI 4.1.4 rank after MPI_Init (Debian bookworm, default MCA settings):
// the selected PML and BTLs are mapped, with other frameworks' components and look-alikes that are not
// components (libmca_common_sm, PMIx's own pmix_mca_* plugins).
constexpr const char* kMaps =
    R"(7f227e270000-7f227e274000 r--p 00000000 fe:00 14885207   /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_osc_rdma.so
7f227ee3b000-7f227ee3c000 r--p 00000000 fe:00 14885126   /usr/lib/x86_64-linux-gnu/libmca_common_sm.so.40.30.0
7f227ee5b000-7f227ee5f000 r--p 00000000 fe:00 14885219   /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_pml_ob1.so
7f227ee5f000-7f227ee6f000 r-xp 00004000 fe:00 14885219   /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_pml_ob1.so
7f227ef0b000-7f227ef0c000 r--p 00000000 fe:00 14885155   /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_btl_sm.so
7f227ef10000-7f227ef11000 r--p 00000000 fe:00 14885154   /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_btl_self.so
7f227ef16000-7f227ef18000 r--p 00000000 fe:00 14885157   /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_btl_vader.so
7f227ef24000-7f227ef28000 r--p 00000000 fe:00 14885156   /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_btl_tcp.so
7f227ef39000-7f227ef3b000 r--p 00000000 fe:00 14885151   /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_bml_r2.so
7f227efaa000-7f227efab000 r--p 00000000 fe:00 14885072   /usr/lib/x86_64-linux-gnu/pmix2/lib/pmix/pmix_mca_pcompress_zlib.so
7f227f800000-7f227f821000 rw-p 00000000 00:00 0
7ffd1e9c4000-7ffd1e9e5000 rw-p 00000000 00:00 0                          [stack]
)";

TEST(MpiTransportRecordTest, LoadedComponentsAreTheSelection) {
  const auto c = parse_loaded_mpi_components(kMaps);
  EXPECT_EQ(c.pml, (std::set<std::string>{"ob1"}));
  EXPECT_EQ(c.btl, (std::set<std::string>{"self", "sm", "tcp", "vader"}));
  EXPECT_TRUE(c.mtl.empty());
  EXPECT_EQ(c.summary(), "pml ob1; btl self,sm,tcp,vader");
  EXPECT_EQ(c.to_json()["btl"].size(), 4u);
  EXPECT_TRUE(parse_loaded_mpi_components("").empty());
  EXPECT_EQ(parse_loaded_mpi_components("").summary(), "no Open MPI component objects loaded");
}

TEST(MpiTransportRecordTest, Ob1PicksTheMostExclusiveBtlPerPeer) {
  MpiComponents c;
  c.pml = {"ob1"};
  c.btl = {"self", "vader", "tcp"};
  EXPECT_EQ(mpi_transport_kinds(c, true, false), (std::set<std::string>{"shm"}));  // one host
  EXPECT_EQ(mpi_transport_kinds(c, true, true), (std::set<std::string>{"shm", "socket"}));
  EXPECT_EQ(mpi_transport_kinds(c, false, true), (std::set<std::string>{"socket"}));  // one rank per host
  EXPECT_TRUE(mpi_transport_kinds(c, false, false).empty());                          // a world of one
  c.btl = {"self", "tcp"};  // --mca btl self,tcp: ranks of one host talk over sockets too
  EXPECT_EQ(mpi_transport_kinds(c, true, false), (std::set<std::string>{"socket"}));
  c.btl = {"self", "vader", "openib", "tcp"};  // openib (exclusivity 1024) wins over tcp (100)
  EXPECT_EQ(mpi_transport_kinds(c, true, true), (std::set<std::string>{"shm", "ib"}));
  c.btl = {"self", "vader"};  // no network BTL: nothing reaches another host
  EXPECT_EQ(mpi_transport_kinds(c, true, true), (std::set<std::string>{"shm"}));
}

TEST(MpiTransportRecordTest, OtherPmlsChooseInsideTheirLibrary) {
  MpiComponents c;
  c.pml = {"ucx"};
  c.btl = {"self", "vader"};
  EXPECT_EQ(mpi_transport_kinds(c, true, true), (std::set<std::string>{"net"}));
  c.pml = {"cm"};
  c.mtl = {"psm2"};
  EXPECT_EQ(mpi_transport_kinds(c, false, true), (std::set<std::string>{"net"}));
}

}  // namespace
}  // namespace fb::workloads
