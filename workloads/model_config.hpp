#pragma once
// Transformer model presets (configs/models/*.json): the shape of a dense or MoE model, enough to count its
// FLOPs and parameters and to build its GEMMs. Field format and defaults: docs/train.md.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace fb::workloads {

enum class Activation { swiglu, gelu };
std::string_view to_string(Activation a);

struct MoeConfig {
  std::int64_t experts = 0;             // routed experts
  std::int64_t top_k = 0;               // experts each token is routed to
  std::int64_t expert_ffn = 0;          // intermediate size of one routed expert (default: ffn)
  std::int64_t shared_ffn = 0;          // total intermediate size of the shared experts (0 = none)
  std::int64_t layer_freq = 1;          // every layer_freq-th layer after the dense ones is MoE
  std::int64_t first_dense_layers = 0;  // leading layers with a dense MLP
};

// Multi-head latent attention (DeepSeek-V2/V3). q_lora_rank 0 means no query compression.
struct MlaConfig {
  std::int64_t q_lora_rank = 0;
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_nope_head_dim = 0;
  std::int64_t qk_rope_head_dim = 0;
  std::int64_t v_head_dim = 0;
};

struct ModelConfig {
  std::string name;
  std::string source;             // provenance text from the file (optional)
  std::string file;               // where it was loaded from ("" when parsed from text)
  std::uint64_t file_digest = 0;  // of the file's text: ranks compare it (each may read its own copy)
  std::int64_t layers = 0;
  std::int64_t hidden = 0;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;  // default: heads
  std::int64_t head_dim = 0;  // default: hidden / heads
  std::int64_t ffn = 0;       // dense MLP intermediate size
  Activation activation = Activation::swiglu;
  std::int64_t vocab = 0;  // used as given (presets hold the padded value)
  std::int64_t seq = 0;    // training sequence length
  std::optional<MoeConfig> moe;
  std::optional<MlaConfig> mla;
  std::int64_t mtp_layers = 0;  // multi-token-prediction layers (DeepSeek-V3)
  float rope_theta = 10000.0f;  // rotary embedding base θ (RoFormer; Llama 3: 500000)
  float norm_eps = 1e-5f;       // RMSNorm ε

  bool is_moe() const { return moe.has_value(); }
  // Layer i (0-based) is MoE when i >= first_dense_layers and (i - first_dense_layers) % layer_freq == 0.
  bool is_moe_layer(std::int64_t i) const;
  std::int64_t moe_layer_count() const;
  std::int64_t dense_layer_count() const { return layers - moe_layer_count(); }
};

// Loads configs/models/NAME.json for a bare name, or the file at a path (core/config_paths.hpp). Throws an
// input Error that names the file and the JSON path ("$.moe.top_k") on unknown fields, missing required
// fields, wrong types and impossible values.
ModelConfig load_model(std::string_view name_or_path);

// Parses model JSON text; `source_name` prefixes error messages (a file name).
ModelConfig parse_model_json(std::string_view text, const std::string& source_name);

// Checks the invariants load_model enforces (also after overrides such as --layers); throws input Errors
// prefixed with `where`.
void validate_model(const ModelConfig& m, const std::string& where);

}  // namespace fb::workloads
