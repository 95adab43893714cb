#include "workloads/model_config.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "core/error.hpp"

namespace fb::workloads {
namespace {

std::string error_of(const std::string& text) {
  try {
    parse_model_json(text, "m.json");
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    return e.what();
  }
  ADD_FAILURE() << "accepted: " << text;
  return "";
}

constexpr const char* kMinimal =
    R"({"name":"x","layers":4,"hidden":256,"heads":8,"ffn":512,"activation":"gelu","vocab":1000,"seq":64})";

TEST(ModelConfig, PresetsLoadWithReferenceValues) {
  const auto l8 = load_model("llama3-8b");
  EXPECT_EQ(l8.layers, 32);
  EXPECT_EQ(l8.hidden, 4096);
  EXPECT_EQ(l8.heads, 32);
  EXPECT_EQ(l8.kv_heads, 8);
  EXPECT_EQ(l8.head_dim, 128);
  EXPECT_EQ(l8.ffn, 14336);
  EXPECT_EQ(l8.vocab, 128256);
  EXPECT_FALSE(l8.is_moe());

  const auto ds = load_model("deepseek-v3");
  ASSERT_TRUE(ds.moe && ds.mla);
  EXPECT_EQ(ds.moe->experts, 256);
  EXPECT_EQ(ds.moe->top_k, 8);
  EXPECT_EQ(ds.moe_layer_count(), 58);
  EXPECT_EQ(ds.dense_layer_count(), 3);
  EXPECT_FALSE(ds.is_moe_layer(2));
  EXPECT_TRUE(ds.is_moe_layer(3));
  EXPECT_EQ(ds.mtp_layers, 1);

  for (const char* name : {"gpt3-175b", "llama3-70b", "llama3.1-405b", "mixtral-8x7b", "mixtral-8x22b",
                           "tiny-dense", "tiny-moe"})
    EXPECT_EQ(load_model(name).name, name);
}

TEST(ModelConfig, DefaultsFollowTheFieldContract) {
  const auto m = parse_model_json(kMinimal, "m.json");
  EXPECT_EQ(m.kv_heads, 8);
  EXPECT_EQ(m.head_dim, 32);
  EXPECT_EQ(m.activation, Activation::gelu);
  EXPECT_EQ(m.mtp_layers, 0);
  const auto moe = parse_model_json(
      R"({"name":"x","layers":4,"hidden":256,"heads":8,"ffn":512,"activation":"swiglu","vocab":1000,"seq":64,
          "moe":{"experts":4,"top_k":1,"layer_freq":2}})",
      "m.json");
  EXPECT_EQ(moe.moe->expert_ffn, 512);
  EXPECT_EQ(moe.moe->shared_ffn, 0);
  EXPECT_TRUE(moe.is_moe_layer(0));
  EXPECT_FALSE(moe.is_moe_layer(1));
  EXPECT_TRUE(moe.is_moe_layer(2));
  EXPECT_EQ(moe.moe_layer_count(), 2);
}

TEST(ModelConfig, ErrorsNameTheJsonPath) {
  EXPECT_NE(error_of(R"({"name":"x"})").find("$.layers: required field is missing"), std::string::npos);
  EXPECT_NE(error_of(R"({"name":"x","layers":"32"})").find("$.layers: must be an integer"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"name":"x","layers":3.5})").find("$.layers: must be an integer"), std::string::npos);
  // null and booleans are named once by their value ("got null", not "got null null").
  EXPECT_NE(error_of(R"({"name":"x","layers":null})").find("$.layers: must be an integer, got null"),
            std::string::npos);
  EXPECT_EQ(error_of(R"({"name":"x","layers":null})").find("null null"), std::string::npos);
  EXPECT_NE(error_of(R"({"name":"x","layers":true})").find("$.layers: must be an integer, got true"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"name":"x","layers":"32"})").find("got string \"32\""), std::string::npos);
  EXPECT_NE(error_of(R"({"name":"x","layers":0})").find("$.layers: must be >= 1"), std::string::npos);
  // 2^64 - 1 is an unsigned JSON integer: named too large, not turned into -1.
  EXPECT_NE(error_of(R"({"name":"x","layers":18446744073709551615})")
                .find("$.layers: 18446744073709551615 is too large"),
            std::string::npos)
      << error_of(R"({"name":"x","layers":18446744073709551615})");
  std::string text = kMinimal;
  text.insert(text.size() - 1, R"(,"layerz":3)");
  EXPECT_NE(error_of(text).find("m.json: $.layerz: unknown field"), std::string::npos);
  text = kMinimal;
  text.insert(text.size() - 1, R"(,"moe":{"experts":4,"top_k":5})");
  EXPECT_NE(error_of(text).find("$.moe.top_k: must be <= $.moe.experts"), std::string::npos);
  text = kMinimal;
  text.insert(text.size() - 1, R"(,"moe":{"experts":4,"top_k":1,"topk":2})");
  EXPECT_NE(error_of(text).find("$.moe.topk: unknown field"), std::string::npos);
  text = kMinimal;
  text.insert(text.size() - 1, R"(,"kv_heads":3)");
  EXPECT_NE(error_of(text).find("$.kv_heads: must divide $.heads"), std::string::npos);
  text = kMinimal;
  text.insert(text.size() - 1, R"(,"mtp_layers":1000000000)");
  EXPECT_NE(error_of(text).find("$.mtp_layers: must be in [0, $.layers"), std::string::npos)
      << error_of(text);
  // Applied in fp32: an ε that rounds to 0 or outweighs the activations, a θ that overflows, are refused.
  for (const auto& [field, bad] : {std::pair{"norm_eps", "1e308"}, std::pair{"norm_eps", "2"},
                                   std::pair{"norm_eps", "1e-40"}, std::pair{"rope_theta", "1e39"}}) {
    text = kMinimal;
    text.insert(text.size() - 1, fmt::format(R"(,"{}":{})", field, bad));
    EXPECT_NE(error_of(text).find(fmt::format("$.{}: must be", field)), std::string::npos)
        << field << " " << bad;
  }
  text = kMinimal;
  text.insert(text.size() - 1, R"(,"norm_eps":1e-6,"rope_theta":1e8)");
  EXPECT_FLOAT_EQ(parse_model_json(text, "m.json").norm_eps, 1e-6f);
  text = kMinimal;
  text.replace(text.find("gelu"), 4, "relu");
  EXPECT_NE(error_of(text).find("$.activation: must be"), std::string::npos);
  // One wording with every other JSON reader (core/json_file.hpp), not nlohmann's exception text.
  EXPECT_EQ(error_of("{\"name\": "),
            "m.json: malformed JSON: it ends inside a value, after 9 bytes (truncated?)");
  EXPECT_EQ(error_of(R"({"name": 1e5000})"),
            "m.json: malformed JSON: the number 1e5000 is beyond the range of a double");
  EXPECT_NE(error_of("[1]").find("$: must be an object"), std::string::npos);
}

TEST(ModelConfig, UnknownPresetListsTheAvailableOnes) {
  try {
    load_model("llama9-1t");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("llama3-8b"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fb::workloads
