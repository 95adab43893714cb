// The one serializer from parsed options back to argv (issue 14, issue 16 finding 2): what `resilience`
// hands to each relaunched training job. Every option registered on the CLI must round-trip: parse →
// serialize → parse gives equal options. The tests enumerate the options the App registers, so an option
// added without serialization (or without a value here) fails.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "resilience/train_resilience_hooks.hpp"
#include "tools/resilience_options.hpp"
#include "tools/train_options.hpp"

namespace fb::tools {
namespace {

void parse(CLI::App& app, const std::vector<std::string>& args) {
  std::vector<const char*> argv{"factorybench"};
  for (const auto& a : args) argv.push_back(a.c_str());
  app.parse(static_cast<int>(argv.size()), argv.data());
}

// The long names of every option registered on `app` but --help.
std::set<std::string> registered(const CLI::App& app) {
  std::set<std::string> names;
  for (const CLI::Option* o : app.get_options())
    if (o->get_name() != "--help") names.insert(o->get_name());
  return names;
}

std::set<std::string> option_names(const std::vector<std::string>& argv) {
  std::set<std::string> names;
  for (const auto& a : argv)
    if (a.starts_with("--")) names.insert(a);
  return names;
}

// Every field away from its default (and from the values a default-valued serializer could invent).
TrainCliOptions all_set() {
  TrainCliOptions o;
  o.model = "tiny-moe";
  o.tp = 2;
  o.dp = 3;
  o.ep = 4;
  o.pp = 5;
  o.seq = 96;
  o.micro_batch = 6;
  o.grad_accum = 7;
  o.layers = 8;
  o.steps = 9;
  o.warmup_steps = 1;
  o.bucket_layers = 3;
  o.dtype = "bf16";
  o.recompute = workloads::Recompute::selective;
  o.attention_flops = workloads::AttentionFlops::full;
  o.attention_engine = kernels::AttentionEngineChoice::cudnn;
  o.routing_skew = 0.1 + 0.2;  // not exactly 0.3: the text must keep every bit
  o.learning_rate = 3e-4 / 7;
  o.sequence_parallel = true;
  o.distributed_optimizer = true;
  o.overlap = true;
  return o;
}

TEST(TrainOptionsArgv, EveryRegisteredOptionRoundTrips) {
  const auto want = all_set();
  const auto argv = train_options_argv(want);
  CLI::App app;
  TrainCliOptions got;
  add_train_options(app, got);
  ASSERT_NO_THROW(parse(app, argv));
  EXPECT_TRUE(got == want);
  EXPECT_EQ(got.routing_skew, want.routing_skew);
  EXPECT_EQ(got.learning_rate, want.learning_rate);
  // Each option the CLI accepts is written (a new option must be serialized and set in all_set()).
  const auto written = option_names(argv);
  for (const auto& name : registered(app)) EXPECT_TRUE(written.count(name)) << name << " is not serialized";
  for (const auto& name : written) EXPECT_TRUE(registered(app).count(name)) << name << " is not an option";
}

TEST(TrainOptionsArgv, EachOptionAloneRoundTrips) {
  // One field at a time: no option depends on another being written.
  const auto full = all_set();
  const auto argv = train_options_argv(full);
  for (std::size_t i = 0; i < argv.size(); ++i) {
    if (!argv[i].starts_with("--")) continue;
    std::vector<std::string> one{argv[i]};
    if (i + 1 < argv.size() && !argv[i + 1].starts_with("--")) one.push_back(argv[i + 1]);
    CLI::App app;
    TrainCliOptions got;
    add_train_options(app, got);
    ASSERT_NO_THROW(parse(app, one)) << argv[i];
    EXPECT_FALSE(got == TrainCliOptions{}) << argv[i] << " changed nothing";
    EXPECT_EQ(train_options_argv(got), one) << argv[i];
  }
}

TEST(TrainOptionsArgv, DefaultsWriteNothingAndParseToDefaults) {
  EXPECT_TRUE(train_options_argv(TrainCliOptions{}).empty());
  CLI::App app;
  TrainCliOptions got;
  add_train_options(app, got);
  ASSERT_NO_THROW(parse(app, {}));
  EXPECT_TRUE(got == TrainCliOptions{});
}

TEST(TrainOptionsArgv, AnEnumOptionNamesTheAcceptedValues) {
  CLI::App app;
  TrainCliOptions got;
  add_train_options(app, got);
  try {
    parse(app, {"--recompute", "some"});
    FAIL() << "accepted --recompute some";
  } catch (const CLI::ParseError& e) {
    EXPECT_STREQ(e.what(), "invalid --recompute 'some': expected none, selective or full");
    EXPECT_NE(e.get_exit_code(), 0);
  }
}

void expect_same(const resilience::ResilienceOptions& a, const resilience::ResilienceOptions& b) {
  EXPECT_EQ(a.run_dir, b.run_dir);
  EXPECT_EQ(a.checkpoint_every, b.checkpoint_every);
  EXPECT_EQ(a.checkpoint_interval, b.checkpoint_interval);
  EXPECT_EQ(a.keep, b.keep);
  EXPECT_EQ(a.async_checkpoint, b.async_checkpoint);
  EXPECT_EQ(a.resume, b.resume);
  EXPECT_EQ(a.faults, b.faults);
  EXPECT_EQ(a.hang_timeout, b.hang_timeout);
  EXPECT_EQ(a.straggler_threshold, b.straggler_threshold);
  EXPECT_EQ(a.check_every, b.check_every);
}

TEST(ResilienceOptionsArgv, EveryRegisteredOptionRoundTrips) {
  resilience::ResilienceOptions want;
  want.run_dir = "/tmp/run dir";
  want.checkpoint_every = 4;
  want.checkpoint_interval = "auto";
  want.keep = 5;
  want.async_checkpoint = true;
  want.resume = true;
  want.faults = "crash@step=3,rank=1;hang@step=5";
  want.hang_timeout = "30s";
  want.straggler_threshold = 0.1 + 0.55;
  want.check_every = 9;
  const std::string state_bytes = "3M", mtbf = "2h";
  const auto argv = resilience_options_argv(want, state_bytes, mtbf);
  CLI::App app;
  resilience::ResilienceOptions got;
  std::string got_state_bytes, got_mtbf;
  add_resilience_options(app, got, got_state_bytes, got_mtbf);
  ASSERT_NO_THROW(parse(app, argv));
  expect_same(got, want);
  EXPECT_EQ(got_state_bytes, state_bytes);
  EXPECT_EQ(got_mtbf, mtbf);
  const auto written = option_names(argv);
  for (const auto& name : registered(app)) EXPECT_TRUE(written.count(name)) << name << " is not serialized";
  EXPECT_TRUE(resilience_options_argv(resilience::ResilienceOptions{}, "", "").empty());
}

}  // namespace
}  // namespace fb::tools
