// The report so far that InterruptReport keeps in -o while a command runs (tools/interrupt_report.hpp): what
// a job ended by SIGKILL or a crash leaves. A process alone is the launcher's rank 0, so no MPI is started
// here.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>

#include "core/error.hpp"
#include "reports/report_json.hpp"
#include "tools/interrupt_report.hpp"
#include "tools/report_so_far.hpp"
#include "tools/session.hpp"

namespace fb::tools {
namespace {

namespace fs = std::filesystem;

struct InterruptReportTest : ::testing::Test {
  fs::path dir = fs::temp_directory_path() / ("fb-interrupt-report-" + std::to_string(::getpid()));
  fs::path out = dir / "r.json";
  int argc = 1;
  char arg0[13] = "factorybench";
  char* argv_storage[2] = {arg0, nullptr};
  char** argv = argv_storage;

  void SetUp() override {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }

  Session session_writing(const std::string& output) {
    GlobalOptions o;
    o.output = output;
    o.quiet = true;
    o.telemetry = "off";
    return Session(&argc, &argv, o, {"gemm"});
  }
  static reports::Result shape(const std::string& name) {
    reports::Result r;
    r.benchmark = "gemm";
    r.name = name;
    return r;
  }
  static std::vector<std::string> names(const reports::Report& r) {
    std::vector<std::string> out;
    for (const auto& res : r.results) out.push_back(res.name);
    return out;
  }
};

TEST(ReportSoFarDue, AtMostATwentiethOfTheTimeSpentWriting) {
  EXPECT_TRUE(report_so_far_due(1e9, 0));         // the first
  EXPECT_TRUE(report_so_far_due(0.0, 0));         // a write that took no time: every result
  EXPECT_FALSE(report_so_far_due(0.019, 0.001));  // 1 ms a write: every 20 ms
  EXPECT_TRUE(report_so_far_due(0.020, 0.001));
  EXPECT_FALSE(report_so_far_due(3.99, 0.2));  // 200 ms a write (a slow file system): every 4 s
  EXPECT_TRUE(report_so_far_due(4.0, 0.2));
  EXPECT_FALSE(report_so_far_due(30, 2.0));  // 2 s a write: every 40 s
}

TEST_F(InterruptReportTest, KeepsTheResultsSoFarWithAFailedUnfinishedResult) {
  auto session = session_writing(out.string());
  reports::Report start;
  start.tool = {{"name", "factorybench"}};
  start.run = {{"id", "run-1"}};
  const auto so_far = ReportSoFar::make(start);
  InterruptReport interrupted(session, "gemm", ReportSoFar::reader(so_far));
  // At once: the run's facts and why it has no figure yet.
  ASSERT_TRUE(fs::exists(out));
  auto written = reports::read_report(out);
  EXPECT_EQ(names(written), (std::vector<std::string>{"unfinished"}));
  EXPECT_EQ(written.run.value("id", ""), "run-1");

  // Written once due: at once unless the first write was slow (a loaded disk: its fsync can take seconds),
  // then when twenty times its time has passed.
  so_far->add(shape("fp32/64x64x64"));
  session.save_so_far();
  const std::vector<std::string> first{"fp32/64x64x64", "unfinished"};
  for (int i = 0; i < 3000 && names(reports::read_report(out)) != first; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  written = reports::read_report(out);
  EXPECT_EQ(names(written), first);
  const auto& last = written.results.back();
  EXPECT_EQ(last.benchmark, "gemm");
  EXPECT_EQ(last.status, reports::Status::failed);
  EXPECT_EQ(last.params.value("test", ""), "unfinished");
  EXPECT_EQ(last.error.value_or(""),
            "did not finish: the job ended before the run did (killed or crashed): the results before it are "
            "kept");
  EXPECT_TRUE(written.run.contains("finished_at"));

  // At once again: not due (a write with its fsync takes far more than a twentieth of the microseconds
  // since), so kept pending, and written once due with no further result (tools/report_so_far_writer.hpp):
  // a quick result before a long one is not left out until the long one ends.
  so_far->add(shape("fp32/128x128x128"));
  session.save_so_far();
  const std::vector<std::string> both{"fp32/64x64x64", "fp32/128x128x128", "unfinished"};
  for (int i = 0; i < 3000 && names(reports::read_report(out)) != both; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(names(reports::read_report(out)), both);
}

TEST_F(InterruptReportTest, AnErrorThatEndsACommandAloneRemovesTheReportSoFar) {
  auto session = session_writing(out.string());
  const auto so_far = ReportSoFar::make({});
  try {
    InterruptReport interrupted(session, "gemm", ReportSoFar::reader(so_far));
    so_far->add(shape("fp32/64x64x64"));
    session.save_so_far();
    ASSERT_TRUE(fs::exists(out));
    throw runtime_error("the engine failed");
  } catch (const Error&) {
  }
  EXPECT_FALSE(fs::exists(out)) << "an error writes no report";
  session.save_so_far();  // the InterruptReport is gone: nothing is saved any more
  EXPECT_FALSE(fs::exists(out));
}

TEST_F(InterruptReportTest, ARunThatEndsNormallyLeavesItForTheFinalReportToReplace) {
  auto session = session_writing(out.string());
  const auto so_far = ReportSoFar::make({});
  {
    InterruptReport interrupted(session, "gemm", ReportSoFar::reader(so_far));
    so_far->add(shape("fp32/64x64x64"));
    session.save_so_far();
  }
  EXPECT_TRUE(fs::exists(out));
}

TEST_F(InterruptReportTest, AReportSoFarThatCannotBeWrittenIsSaidOnceAndTheRunGoesOn) {
  const auto gone = dir / "gone";
  fs::create_directories(gone);
  auto session = session_writing((gone / "r.json").string());
  const auto so_far = ReportSoFar::make({});
  InterruptReport interrupted(session, "gemm", ReportSoFar::reader(so_far));
  fs::remove_all(gone);  // the directory goes while the run goes on (a cleaned scratch space)
  testing::internal::CaptureStderr();
  for (int i = 0; i < 3; ++i) {
    so_far->add(shape("fp32/64x64x64"));
    EXPECT_NO_THROW(session.save_so_far());
    std::this_thread::sleep_for(std::chrono::milliseconds(i < 2 ? 1050 : 0));  // each one due
  }
  const auto err = testing::internal::GetCapturedStderr();
  const std::string said = "the report so far was not written (the run goes on)";
  const auto first = err.find(said);
  EXPECT_NE(first, std::string::npos) << err;
  EXPECT_EQ(err.find(said, first + 1), std::string::npos) << "said more than once: " << err;
}

TEST_F(InterruptReportTest, WithoutOutputOrToADeviceNothingIsSaved) {
  for (const std::string& output : {std::string(), std::string("/dev/null")}) {
    auto session = session_writing(output);
    const auto so_far = ReportSoFar::make({});
    InterruptReport interrupted(session, "gemm", ReportSoFar::reader(so_far));
    so_far->add(shape("fp32/64x64x64"));
    session.save_so_far();  // `-o /dev/null` (a device) is written once, at the end, as before
    EXPECT_TRUE(fs::is_empty(dir)) << output;
  }
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
}

TEST_F(InterruptReportTest, InASuiteTheSuitesReportIsKeptOnAnError) {
  // The suite arms it with the step named (`who`): an Error in the step leaves the suite's report, which
  // holds the steps before it.
  auto session = session_writing(out.string());
  try {
    InterruptReport interrupted(
        session, "gemm",
        [](const reports::Result& r) -> std::optional<reports::Report> {
          reports::Report suite;
          suite.results = {shape("step1"), r};
          return suite;
        },
        "the steps before it are kept", "suite step 's2' (gemm)");
    ASSERT_TRUE(fs::exists(out));
    throw runtime_error("the step failed");
  } catch (const Error&) {
  }
  ASSERT_TRUE(fs::exists(out));
  EXPECT_EQ(names(reports::read_report(out)), (std::vector<std::string>{"step1", "unfinished"}));
}

}  // namespace
}  // namespace fb::tools
