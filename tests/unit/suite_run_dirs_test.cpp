// tools/suite_run_dirs.hpp: a suite's steps that share a --run-dir, judged from their parsed options before
// any runs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.hpp"
#include "tools/suite_file.hpp"
#include "tools/suite_run_dirs.hpp"

namespace fb::tools {
namespace {

// The error check_shared_run_dirs throws for these steps ({command, args}), or "" when none.
std::string verdict(const std::vector<std::pair<std::string, std::string>>& steps) {
  nlohmann::json j = {{"steps", nlohmann::json::array()}};
  char name = 'a';
  for (const auto& [command, args] : steps)
    j["steps"].push_back({{"name", std::string(1, name++)}, {"command", command}, {"args", args}});
  const Suite suite = parse_suite(j, "test", "test");
  std::vector<ParsedStep> parsed;
  for (const auto& step : suite.steps) parsed.push_back(parse_suite_step(step));
  try {
    check_shared_run_dirs(suite, parsed);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
    return e.what();
  }
  return "";
}

const std::string kTrain = "--model tiny-dense --steps 4 ";
const std::string kResilience = "--model tiny-dense --steps 4 --launcher none --faults none ";

TEST(SuiteRunDirs, AFreshStartAfterASaveInTheSameRunDirIsRefused) {
  EXPECT_EQ(
      verdict({{"train", kTrain + "--run-dir rd --checkpoint-every 2"}, {"train", kTrain + "--run-dir rd"}}),
      "suite step 'b': --run-dir rd will hold checkpoints when it runs: step 'a' saves them in "
      "rd/checkpoints (--checkpoint-every 2), and a run without --resume refuses a run dir with "
      "checkpoints: add --resume to continue from them, or give it another --run-dir");
  // The same directory however it is written; a dry run checks the run dir as the run would.
  EXPECT_NE(verdict({{"train", kTrain + "--run-dir rd --checkpoint-every 2"},
                     {"train", kTrain + "--run-dir ./x/../rd/ --dry-run"}}),
            "");
  EXPECT_NE(verdict({{"train", kTrain + "--run-dir rd --checkpoint-interval auto --mtbf 1h"},
                     {"train", kTrain + "--run-dir rd"}}),
            "");
  // Resilience always starts fresh, and its checkpoints are a later train's too.
  EXPECT_NE(verdict({{"train", kTrain + "--run-dir rd --checkpoint-every 2"},
                     {"resilience", kResilience + "--run-dir rd"}})
                .find("resilience starts a fresh job there: give it another --run-dir"),
            std::string::npos);
  EXPECT_NE(verdict({{"resilience", kResilience + "--run-dir rd --checkpoint-every 1"},
                     {"train", kTrain + "--run-dir rd"}}),
            "");
  // --policy compare saves under rd/none and rd/drain: a later resilience checks them, a later train does
  // not.
  const std::string compare = kResilience + "--run-dir rd --checkpoint-every 1 --policy compare --spares 1";
  EXPECT_NE(verdict({{"resilience", compare}, {"resilience", kResilience + "--run-dir rd"}})
                .find("rd/none/checkpoints"),
            std::string::npos);
  EXPECT_EQ(verdict({{"resilience", compare}, {"train", kTrain + "--run-dir rd"}}), "");
  // Until a time budget: how many steps run is not known, and only a save every step is certain.
  const std::string budget =
      "--model tiny-dense --launcher none --faults none --time-budget 10m --run-dir rd ";
  EXPECT_NE(verdict({{"resilience", budget + "--checkpoint-every 1"}, {"train", kTrain + "--run-dir rd"}}),
            "");
  EXPECT_EQ(verdict({{"resilience", budget + "--checkpoint-every 3"}, {"train", kTrain + "--run-dir rd"}}),
            "");
}

TEST(SuiteRunDirs, WhatRunsTodayIsNotRefused) {
  EXPECT_EQ(verdict({{"train", kTrain + "--run-dir rd --checkpoint-every 2"},
                     {"train", kTrain + "--run-dir rd --resume"}}),
            "");
  EXPECT_EQ(verdict({{"train", kTrain + "--run-dir rd"}, {"train", kTrain + "--run-dir rd"}}),
            "");  // saves none
  EXPECT_EQ(
      verdict({{"train", kTrain + "--run-dir rd --checkpoint-every 5"}, {"train", kTrain + "--run-dir rd"}}),
      "");  // beyond its 4 steps
  // A fixed interval saves or not with the run's speed: left to the later step's turn.
  EXPECT_EQ(verdict({{"train", kTrain + "--run-dir rd --checkpoint-interval 1h"},
                     {"train", kTrain + "--run-dir rd"}}),
            "");
  EXPECT_EQ(verdict({{"train", kTrain + "--run-dir rd --checkpoint-every 2 --dry-run"},
                     {"train", kTrain + "--run-dir rd"}}),
            "");
  EXPECT_EQ(verdict({{"train", kTrain + "--run-dir rd --checkpoint-every 2"},
                     {"train", kTrain + "--run-dir other"}}),
            "");
  // The earlier one saving matters, not the order in the file.
  EXPECT_EQ(
      verdict({{"train", kTrain + "--run-dir rd"}, {"train", kTrain + "--run-dir rd --checkpoint-every 2"}}),
      "");
}

}  // namespace
}  // namespace fb::tools
