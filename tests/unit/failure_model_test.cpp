// Failure models as data: the shipped presets derive the published figures, and bad files name the JSON path.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.hpp"
#include "resilience/failure_model.hpp"

namespace fb::resilience {
namespace {

using nlohmann::json;

std::string error_of(const json& j) {
  try {
    parse_failure_model(j, "bad.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

json minimal() {
  return json{{"name", "m"}, {"categories", {{"faulty_gpu", {{"scope", "gpu"}, {"rate_per_hour", 1e-5}}}}}};
}

TEST(FailureModel, Llama3PresetSumsTo419InterruptionsIn54Days) {
  const auto m = load_failure_model("llama3-h100");
  EXPECT_EQ(m.name, "llama3-h100");
  EXPECT_EQ(m.gpus_per_node, 8);
  EXPECT_EQ(m.categories.size(), 18u);
  EXPECT_NE(m.source.find("54 days"), std::string::npos);
  const auto r = allocation_rates(m, 16384, 8);
  EXPECT_NEAR(r.total_h * 54 * 24, 419, 0.01);
  EXPECT_NEAR(r.job_level_h + r.node_attributed_per_node_h * 2048, r.total_h, 1e-12);
  // Scaling 8x multiplies every GPU- and node-scope rate by 8; the job-scope dependency rate stays.
  const auto big = allocation_rates(m, 131072, 8);
  EXPECT_NEAR(big.total_h * 54 * 24, (419 - 2) * 8 + 2, 0.1);
}

TEST(FailureModel, MetaRsc1PresetIsPerNodeDay) {
  const auto m = load_failure_model("meta-rsc1-a100");
  ASSERT_EQ(m.categories.size(), 1u);
  EXPECT_EQ(m.categories[0].scope, FailureScope::node);
  EXPECT_NEAR(m.categories[0].rate_per_hour * 24 * 1000, 6.50, 1e-4);
  EXPECT_NEAR(job_mtbf_s(m, 16384, 8) / 3600, 1.80, 0.01);
}

TEST(FailureModel, SingleRateModelIsIndependentOfScale) {
  const auto m = single_rate_model(7200);
  EXPECT_DOUBLE_EQ(job_mtbf_s(m, 8, 8), 7200);
  EXPECT_DOUBLE_EQ(job_mtbf_s(m, 131072, 8), 7200);
  EXPECT_THROW(single_rate_model(0), Error);
  EXPECT_THROW(single_rate_model(-5), Error);
}

TEST(FailureModel, GpuScopeRatesScaleWithNodeSize) {
  const auto m = parse_failure_model(minimal(), "m.json");
  EXPECT_DOUBLE_EQ(allocation_rates(m, 64, 8).node_attributed_per_node_h, 8e-5);
  EXPECT_DOUBLE_EQ(allocation_rates(m, 64, 4).total_h, 64e-5);
}

TEST(FailureModel, BadFilesNameTheJsonPath) {
  auto j = minimal();
  j["categories"]["cosmic_rays"] = {{"scope", "gpu"}, {"rate_per_hour", 1e-6}};
  EXPECT_NE(
      error_of(j).find("bad.json: $.categories.cosmic_rays: unknown failure category (known: faulty_gpu"),
      std::string::npos)
      << error_of(j);

  j = minimal();
  j["categories"]["faulty_gpu"]["rate_per_hour"] = -1e-6;
  EXPECT_EQ(error_of(j), "bad.json: $.categories.faulty_gpu.rate_per_hour: must be > 0 (got -1e-06)");
  j["categories"]["faulty_gpu"]["rate_per_hour"] = 0;
  EXPECT_EQ(error_of(j), "bad.json: $.categories.faulty_gpu.rate_per_hour: must be > 0 (got 0)");
  j["categories"]["faulty_gpu"]["rate_per_hour"] = 1e-300;
  EXPECT_EQ(
      error_of(j),
      "bad.json: $.categories.faulty_gpu.rate_per_hour: must be in [1e-12, 3600] per hour (got 1e-300)");
  j["categories"]["faulty_gpu"]["rate_per_hour"] = 1e4;
  EXPECT_EQ(error_of(j),
            "bad.json: $.categories.faulty_gpu.rate_per_hour: must be in [1e-12, 3600] per hour (got 10000)");
  j = minimal();
  j["categories"]["faulty_gpu"]["observed"] = "many";
  EXPECT_EQ(
      error_of(j),
      "bad.json: $.categories.faulty_gpu.observed: expected a non-negative integer (the published count "
      "of interruptions)");
  j["categories"]["faulty_gpu"]["observed"] = -3;
  EXPECT_NE(error_of(j).find("$.categories.faulty_gpu.observed: expected a non-negative integer"),
            std::string::npos);
  j["categories"]["faulty_gpu"]["observed"] = 148;
  j["categories"]["faulty_gpu"]["note"] = 7;
  EXPECT_EQ(error_of(j), "bad.json: $.categories.faulty_gpu.note: expected a string");
  j = minimal();
  j["categories"]["faulty_gpu"]["rate_per_hour"] = "often";
  EXPECT_EQ(error_of(j), "bad.json: $.categories.faulty_gpu.rate_per_hour: expected a number");
  j = minimal();
  j["categories"]["faulty_gpu"]["scope"] = "rack";
  EXPECT_EQ(error_of(j),
            "bad.json: $.categories.faulty_gpu.scope: unknown scope \"rack\" (expected gpu, node or job)");
  j = minimal();
  j["categories"]["faulty_gpu"].erase("scope");
  EXPECT_EQ(error_of(j), "bad.json: $.categories.faulty_gpu: missing required field \"scope\"");
  j = minimal();
  j["gpus_per_node"] = 0;
  EXPECT_EQ(error_of(j), "bad.json: $.gpus_per_node: expected a positive integer");
  j = minimal();
  j["categories"] = json::object();
  EXPECT_EQ(error_of(j), "bad.json: $.categories: no failure categories");
  j = minimal();
  j["rates"] = 1;
  EXPECT_EQ(error_of(j), "bad.json: $.rates: unknown field");
  EXPECT_EQ(error_of(json::array()), "bad.json: $: expected an object");
}

TEST(FailureModel, MalformedFileAndUnknownPreset) {
  const auto path = std::filesystem::temp_directory_path() / "fb_failure_model_test_malformed.json";
  std::ofstream(path) << "{\"name\": \"x\", \"categories\": {";
  try {
    load_failure_model(path.string());
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              path.string() + ": malformed JSON: it ends inside a value, after 29 bytes (truncated?)");
  }
  std::filesystem::remove(path);
  try {
    load_failure_model("no-such-model");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("llama3-h100"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fb::resilience
