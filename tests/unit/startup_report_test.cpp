// The start-up report (tools/session.hpp): as the backend starts (and, launched among peers, before MPI's
// start), rank 0's -o holds the run's facts and a failed "unfinished" result, so a job killed before its
// command's first write says so instead of leaving an earlier run's report to be read as its own; it goes
// again when nothing replaced it (an Error, a command that wrote no report). A world of one process (MPI
// singleton).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.hpp"
#include "core/mpi_context.hpp"
#include "reports/report_json.hpp"
#include "tools/session.hpp"

namespace fb::tools {
namespace {

namespace fs = std::filesystem;

struct StartupReportTest : ::testing::Test {
  fs::path dir = fs::temp_directory_path() / ("fb-startup-report-" + std::to_string(::getpid()));
  fs::path out = dir / "r.json";
  int argc = 1;
  char arg0[13] = "factorybench";
  char* argv_storage[2] = {arg0, nullptr};
  char** argv = argv_storage;

  static void SetUpTestSuite() {
    static MpiContext mpi(nullptr, nullptr);  // owns MPI's init: the sessions' contexts share it
  }
  void SetUp() override {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }

  std::unique_ptr<Session> session_writing(const std::string& output, const std::string& command) {
    GlobalOptions o;
    o.output = output;
    o.quiet = true;
    o.telemetry = "off";
    o.backend = "host";
    auto s = std::make_unique<Session>(&argc, &argv, o, std::vector<std::string>{command});
    s->set_command_name(command);
    return s;
  }
};

TEST_F(StartupReportTest, ReplacesAnEarlierReportAsTheBackendStartsAndGoesWhenNothingReplacedIt) {
  std::ofstream(out) << "{\"an earlier run's report\": true}\n";
  auto session = session_writing(out.string(), "collective");
  session->backend();
  ASSERT_TRUE(fs::exists(out));
  const auto written = reports::read_report(out);
  ASSERT_EQ(written.results.size(), 1u);
  const auto& r = written.results[0];
  EXPECT_EQ(r.benchmark, "collective");
  EXPECT_EQ(r.name, "unfinished");
  EXPECT_EQ(r.status, reports::Status::failed);
  EXPECT_EQ(r.params.value("test", ""), "unfinished");
  EXPECT_EQ(r.error.value_or(""),
            "did not finish: the job ended before the run did (killed or crashed): nothing was measured (it "
            "ended in the start-up, after MPI's: the device, the peak probe)");
  EXPECT_EQ(written.run.value("command", ""), "factorybench collective");
  EXPECT_EQ(written.run.value("world_size", 0), 1);
  EXPECT_FALSE(written.run.value("started_at", "").empty());
  EXPECT_EQ(written.run.value("seed", 0), 42);
  // An Error in the start-up (main calls this before it aborts the job): no report, and not the earlier one.
  session->discard_startup_report();
  EXPECT_FALSE(fs::exists(out));
}

TEST_F(StartupReportTest, AReportWrittenSinceIsKept) {
  {
    auto session = session_writing(out.string(), "gemm");
    session->backend();
    reports::Report mine;
    mine.tool = {{"name", "factorybench"}};
    mine.run = {{"id", "the command's"}};
    // The report so far, then the final one: each a new file renamed over the last. The second can get the
    // start-up report's freed inode back (it did, here: the inode was how it was told apart at first).
    reports::write_report(out, mine);
    reports::write_report(out, mine);
    session->discard_startup_report();
    ASSERT_TRUE(fs::exists(out));
    EXPECT_EQ(reports::read_report(out).run.value("id", ""), "the command's");
  }  // ~Session leaves it too
  EXPECT_TRUE(fs::exists(out));
}

TEST_F(StartupReportTest, ACommandThatEndsWithoutAReportLeavesNone) {
  { session_writing(out.string(), "gemm")->backend(); }
  EXPECT_FALSE(fs::exists(out));
}

TEST_F(StartupReportTest, NotInASuitesStepOrPreflightNorWithoutOutput) {
  auto checking = session_writing(out.string(), "gemm");
  checking->set_checking_only(true);
  checking->backend();
  EXPECT_FALSE(fs::exists(out));
  // A step whose command starts the backend: -o holds the suite's report so far, which stays.
  std::ofstream(out) << "the suite's report so far\n";
  auto step = session_writing(out.string(), "suite");
  reports::Report suite;
  step->collect_into(&suite, "first");
  step->backend();
  std::ifstream in(out);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "the suite's report so far");
  fs::remove(out);
  auto none = session_writing("", "gemm");
  none->backend();
  EXPECT_TRUE(fs::is_empty(dir));
}

// Launched among peers, rank 0 writes it before MPI's start too (MPI_Init waits for every rank, and one that
// never joins holds rank 0 there): the launcher's world size, the place it ended in. Here MPI is up already
// (a singleton); the launcher's variables are set for the sessions' start alone.
struct LaunchedAsRankZero : StartupReportTest {
  void SetUp() override {
    StartupReportTest::SetUp();
    setenv("OMPI_COMM_WORLD_RANK", "0", 1);
    setenv("OMPI_COMM_WORLD_SIZE", "3", 1);
  }
  void TearDown() override {
    unsetenv("OMPI_COMM_WORLD_RANK");
    unsetenv("OMPI_COMM_WORLD_SIZE");
    unsetenv("PMIX_RANK");
    StartupReportTest::TearDown();
  }
};

TEST_F(LaunchedAsRankZero, WrittenBeforeMpisStartThenAgainAsTheBackendStarts) {
  std::ofstream(out) << "{\"an earlier run's report\": true}\n";
  auto session = session_writing(out.string(), "train");
  session->mpi();
  auto written = reports::read_report(out);
  ASSERT_EQ(written.results.size(), 1u);
  EXPECT_EQ(written.results[0].benchmark, "train");
  EXPECT_EQ(written.results[0].name, "unfinished");
  EXPECT_EQ(written.results[0].error.value_or(""),
            "did not finish: the job ended before the run did (killed or crashed): nothing was measured (it "
            "ended in MPI's start-up, which waits for every rank to join)");
  EXPECT_EQ(written.run.value("world_size", 0), 3);  // the launcher's, as MPI has not said yet
  ASSERT_EQ(written.run["hosts"].size(), 1u);
  session->backend();
  written = reports::read_report(out);
  EXPECT_EQ(written.run.value("world_size", 0), 1);  // MPI's
  EXPECT_NE(written.results[0].error.value_or("").find("after MPI's: the device, the peak probe"),
            std::string::npos);
  session.reset();  // ended without a report: none, and not the earlier one
  EXPECT_FALSE(fs::exists(out));
}

TEST_F(LaunchedAsRankZero, PmixAloneLeavesTheWorldSizeUnknown) {
  unsetenv("OMPI_COMM_WORLD_RANK");
  unsetenv("OMPI_COMM_WORLD_SIZE");
  setenv("PMIX_RANK", "0", 1);
  auto session = session_writing(out.string(), "gemm");
  session->mpi();
  const auto written = reports::read_report(out);
  EXPECT_TRUE(written.run.at("world_size").is_null());
}

TEST_F(LaunchedAsRankZero, NotWhereRankZeroAloneWouldRefuseTheOutput) {
  // -o naming a file another argument names (an input): left as it is; the refusal comes with MPI's start.
  const auto model = dir / "model.json";
  std::ofstream(model) << "{\"the model\": true}\n";
  GlobalOptions o;
  o.output = model.string();
  o.quiet = true;
  o.telemetry = "off";
  Session reads_it(&argc, &argv, o, {"train", "--model", model.string(), "-o", model.string()});
  reads_it.set_command_name("train");
  EXPECT_THROW(reads_it.mpi(), Error);
  std::ifstream in(model);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "{\"the model\": true}");
  // A suite whose step reads the file -o names (not one of the suite's own arguments): left as it is too (the
  // suite refuses it once MPI is up).
  auto suite = session_writing(model.string(), "suite");
  suite->add_output_inputs({"--model", model.string()});
  suite->mpi();
  std::ifstream again(model);
  std::getline(again, line);
  EXPECT_EQ(line, "{\"the model\": true}");
  // Any other suite: written, as for a command.
  auto other = session_writing(out.string(), "suite");
  other->add_output_inputs({"--model", model.string()});
  other->mpi();
  EXPECT_EQ(reports::read_report(out).results.at(0).benchmark, "suite");
}

}  // namespace
}  // namespace fb::tools
