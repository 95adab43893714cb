#include "workloads/model_config.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/atomic_file.hpp"
#include "core/config_paths.hpp"
#include "core/error.hpp"
#include "core/json_file.hpp"

namespace fb::workloads {
namespace {

using nlohmann::json;

// Reads one JSON object, tracking which keys were consumed so unknown ones can be reported by path.
class ObjectReader {
 public:
  ObjectReader(const json& j, std::string source, std::string path)
      : j_(j), source_(std::move(source)), path_(std::move(path)) {
    if (!j_.is_object()) fail(path_, std::string("must be an object, got ") + j_.type_name());
  }

  [[noreturn]] void fail(const std::string& path, const std::string& what) const {
    throw input_error(fmt::format("{}: {}: {}", source_, path, what));
  }
  std::string at(std::string_view key) const { return path_ + "." + std::string(key); }
  bool has(std::string_view key) const { return j_.contains(std::string(key)); }

  const json& raw(std::string_view key) {
    seen_.insert(std::string(key));
    return j_.at(std::string(key));
  }

  std::int64_t integer(std::string_view key, std::optional<std::int64_t> fallback, std::int64_t min_value) {
    if (!has(key)) {
      if (!fallback) fail(at(key), "required field is missing");
      return *fallback;
    }
    const json& v = raw(key);
    if (!v.is_number_integer()) fail(at(key), std::string("must be an integer, got ") + describe(v));
    // 2^63 and above parse as unsigned: read as int64 they turned negative ("must be >= 1, got -1").
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
      fail(at(key), fmt::format("{} is too large", v.get<std::uint64_t>()));
    const auto value = v.get<std::int64_t>();
    if (value < min_value) fail(at(key), fmt::format("must be >= {}, got {}", min_value, value));
    return value;
  }

  // A finite number above `above` (integers are numbers too).
  double number(std::string_view key, double fallback, double above) {
    if (!has(key)) return fallback;
    const json& v = raw(key);
    if (!v.is_number()) fail(at(key), std::string("must be a number, got ") + describe(v));
    const auto value = v.get<double>();
    if (!std::isfinite(value) || !(value > above))
      fail(at(key), fmt::format("must be > {}, got {}", above, value));
    return value;
  }

  std::string string(std::string_view key, std::optional<std::string> fallback) {
    if (!has(key)) {
      if (!fallback) fail(at(key), "required field is missing");
      return *fallback;
    }
    const json& v = raw(key);
    if (!v.is_string()) fail(at(key), std::string("must be a string, got ") + describe(v));
    return v.get<std::string>();
  }

  // Call after reading every known key.
  void reject_unknown() const {
    for (const auto& [k, v] : j_.items())
      if (!seen_.count(k)) fail(at(k), "unknown field");
  }

  static std::string describe(const json& v) {
    if (v.is_number_float()) return fmt::format("number {}", v.dump());
    if (v.is_null() || v.is_boolean()) return v.dump();  // null, true, false: the value names its type
    if (v.is_primitive()) return fmt::format("{} {}", v.type_name(), v.dump());
    return v.type_name();
  }

 private:
  const json& j_;
  std::string source_, path_;
  std::set<std::string> seen_;
};

Activation parse_activation(ObjectReader& r) {
  const auto text = r.string("activation", std::nullopt);
  if (text == "swiglu") return Activation::swiglu;
  if (text == "gelu") return Activation::gelu;
  r.fail(r.at("activation"), "must be \"swiglu\" or \"gelu\", got \"" + text + "\"");
}

}  // namespace

std::string_view to_string(Activation a) {
  return a == Activation::swiglu ? "swiglu" : "gelu";
}

bool ModelConfig::is_moe_layer(std::int64_t i) const {
  if (!moe || i < moe->first_dense_layers || i >= layers) return false;
  return (i - moe->first_dense_layers) % moe->layer_freq == 0;
}

std::int64_t ModelConfig::moe_layer_count() const {
  std::int64_t n = 0;
  for (std::int64_t i = 0; i < layers; ++i) n += is_moe_layer(i) ? 1 : 0;
  return n;
}

void validate_model(const ModelConfig& m, const std::string& where) {
  const auto fail = [&](const std::string& path, const std::string& what) {
    throw input_error(fmt::format("{}: {}: {}", where, path, what));
  };
  // The largest published models have ~130 layers; per-layer plans are built layer by layer, so 1e12 hung.
  if (m.layers < 1 || m.layers > 100000)
    fail("$.layers", fmt::format("must be in [1, 100000], got {}", m.layers));
  // DeepSeek-V3 has one multi-token-prediction layer; more than the model's own layers is not a model.
  if (m.mtp_layers < 0 || m.mtp_layers > m.layers)
    fail("$.mtp_layers", fmt::format("must be in [0, $.layers = {}], got {}", m.layers, m.mtp_layers));
  if (m.heads < 1) fail("$.heads", fmt::format("must be >= 1, got {}", m.heads));
  // Upper bounds far beyond any published model (hidden 16384 and vocab 256 K at most today), so that the
  // plan's integer sizes cannot wrap: a typo is refused, not planned at "182 PiB".
  const auto at_most = [&](const char* path, std::int64_t v, std::int64_t max) {
    if (v > max) fail(path, fmt::format("must be at most {}, got {}", max, v));
  };
  at_most("$.hidden", m.hidden, std::int64_t{1} << 20);
  at_most("$.heads", m.heads, std::int64_t{1} << 16);
  at_most("$.head_dim", m.head_dim, std::int64_t{1} << 16);
  at_most("$.ffn", m.ffn, std::int64_t{1} << 24);
  at_most("$.vocab", m.vocab, std::int64_t{1} << 24);
  at_most("$.seq", m.seq, std::int64_t{1} << 24);
  if (m.moe) {
    at_most("$.moe.experts", m.moe->experts, std::int64_t{1} << 16);
    at_most("$.moe.expert_ffn", m.moe->expert_ffn, std::int64_t{1} << 24);
    at_most("$.moe.shared_ffn", m.moe->shared_ffn, std::int64_t{1} << 24);
  }
  if (m.mla)
    for (const auto& [path, v] : {std::pair{"$.mla.q_lora_rank", m.mla->q_lora_rank},
                                  std::pair{"$.mla.kv_lora_rank", m.mla->kv_lora_rank},
                                  std::pair{"$.mla.qk_nope_head_dim", m.mla->qk_nope_head_dim},
                                  std::pair{"$.mla.qk_rope_head_dim", m.mla->qk_rope_head_dim},
                                  std::pair{"$.mla.v_head_dim", m.mla->v_head_dim}})
      at_most(path, v, std::int64_t{1} << 20);
  // And the whole: about 100 T parameters at most (the largest published models have about 2 T).
  {
    const double h = static_cast<double>(m.hidden);
    const double attention = 4.0 * h * static_cast<double>(m.heads) * static_cast<double>(m.head_dim);
    double mlp = 3.0 * h * static_cast<double>(m.ffn);
    if (m.moe)
      mlp = std::max(mlp, 3.0 * h *
                              (static_cast<double>(m.moe->experts) * static_cast<double>(m.moe->expert_ffn) +
                               static_cast<double>(m.moe->shared_ffn)));
    const double params =
        static_cast<double>(m.layers) * (attention + mlp) + 2.0 * static_cast<double>(m.vocab) * h;
    if (params > 1e14)
      fail("$",
           fmt::format("about {:.3g} parameters: at most 1e14 (the largest published models have about 2e12)",
                       params));
  }
  if (m.kv_heads < 1 || m.kv_heads > m.heads || m.heads % m.kv_heads != 0)
    fail("$.kv_heads", fmt::format("must divide $.heads ({}), got {}", m.heads, m.kv_heads));
  if (m.head_dim < 1) fail("$.head_dim", fmt::format("must be >= 1, got {}", m.head_dim));
  if (m.moe) {
    const auto& e = *m.moe;
    if (e.top_k > e.experts)
      fail("$.moe.top_k", fmt::format("must be <= $.moe.experts ({}), got {}", e.experts, e.top_k));
    if (e.first_dense_layers >= m.layers)
      fail("$.moe.first_dense_layers",
           fmt::format("must be < $.layers ({}) so that at least one layer is MoE, got {}", m.layers,
                       e.first_dense_layers));
  }
  // Rotary embedding rotates pairs of columns: the rotated head dimension must be even.
  if (!m.mla && m.head_dim % 2 != 0)
    fail("$.head_dim",
         fmt::format("must be even (rotary embedding rotates column pairs), got {}", m.head_dim));
  if (m.mla && m.mla->qk_rope_head_dim % 2 != 0)
    fail("$.mla.qk_rope_head_dim", fmt::format("must be even (rotary embedding rotates column pairs), got {}",
                                               m.mla->qk_rope_head_dim));
  if (m.mla && m.kv_heads != m.heads)
    fail("$.kv_heads",
         fmt::format("must equal $.heads ({}) with $.mla (latent attention has no query groups), got {}",
                     m.heads, m.kv_heads));
}

ModelConfig parse_model_json(std::string_view text, const std::string& source_name) {
  const json j = parse_json_text(text, source_name);
  ObjectReader r(j, source_name, "$");
  ModelConfig m;
  // The name heads every result name and console line, the source is printed with the plan: a control
  // character (a tab, a newline, an escape) would split the line or fail the report's schema.
  const auto one_line = [](const std::string& s) {
    return std::none_of(s.begin(), s.end(), [](char c) {
      return static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) == 0x7f;
    });
  };
  m.name = r.string("name", std::nullopt);
  if (m.name.empty()) r.fail("$.name", "must not be empty");
  if (!one_line(m.name)) r.fail("$.name", "must not contain control characters (tab, newline, escape)");
  m.source = r.string("source", std::string());
  if (!one_line(m.source)) r.fail("$.source", "must not contain control characters (tab, newline, escape)");
  m.layers = r.integer("layers", std::nullopt, 1);
  m.hidden = r.integer("hidden", std::nullopt, 1);
  m.heads = r.integer("heads", std::nullopt, 1);
  m.kv_heads = r.integer("kv_heads", m.heads, 1);
  if (!r.has("head_dim") && m.hidden % m.heads != 0)
    r.fail("$.head_dim",
           fmt::format("required when $.hidden ({}) is not a multiple of $.heads ({})", m.hidden, m.heads));
  m.head_dim = r.integer("head_dim", m.hidden / m.heads, 1);
  m.ffn = r.integer("ffn", std::nullopt, 1);
  m.activation = parse_activation(r);
  m.vocab = r.integer("vocab", std::nullopt, 1);
  m.seq = r.integer("seq", std::nullopt, 1);
  m.mtp_layers = r.integer("mtp_layers", 0, 0);
  const double rope_theta = r.number("rope_theta", m.rope_theta, 1.0);
  const double norm_eps = r.number("norm_eps", m.norm_eps, 0.0);
  // Both are applied in fp32 (kernels/train_kernels.hpp): a value that rounds to 0 or infinity there would
  // not be the model asked for. ε is a stabiliser added to the mean square: above 1 it outweighs the
  // activations it normalises.
  constexpr double fp32_max = std::numeric_limits<float>::max(), fp32_min = std::numeric_limits<float>::min();
  if (rope_theta > fp32_max)
    r.fail("$.rope_theta",
           fmt::format("must be at most {:.3g} (it is applied in fp32), got {:.3g}", fp32_max, rope_theta));
  if (norm_eps < fp32_min || norm_eps > 1)
    r.fail("$.norm_eps",
           fmt::format("must be in [{:.2g}, 1] (a stabiliser added to the mean square in fp32), got {:.3g}",
                       fp32_min, norm_eps));
  m.rope_theta = static_cast<float>(rope_theta);
  m.norm_eps = static_cast<float>(norm_eps);
  if (r.has("moe")) {
    ObjectReader mr(r.raw("moe"), source_name, "$.moe");
    MoeConfig e;
    e.experts = mr.integer("experts", std::nullopt, 1);
    e.top_k = mr.integer("top_k", std::nullopt, 1);
    e.expert_ffn = mr.integer("expert_ffn", m.ffn, 1);
    e.shared_ffn = mr.integer("shared_ffn", 0, 0);
    e.layer_freq = mr.integer("layer_freq", 1, 1);
    e.first_dense_layers = mr.integer("first_dense_layers", 0, 0);
    mr.reject_unknown();
    m.moe = e;
  }
  if (r.has("mla")) {
    ObjectReader ar(r.raw("mla"), source_name, "$.mla");
    MlaConfig a;
    a.q_lora_rank = ar.integer("q_lora_rank", 0, 0);
    a.kv_lora_rank = ar.integer("kv_lora_rank", std::nullopt, 1);
    a.qk_nope_head_dim = ar.integer("qk_nope_head_dim", std::nullopt, 1);
    a.qk_rope_head_dim = ar.integer("qk_rope_head_dim", std::nullopt, 0);
    a.v_head_dim = ar.integer("v_head_dim", std::nullopt, 1);
    ar.reject_unknown();
    m.mla = a;
  }
  r.reject_unknown();
  validate_model(m, source_name);
  return m;
}

ModelConfig load_model(std::string_view name_or_path) {
  const auto path = resolve_config("models", name_or_path);
  const std::string text = read_text_file(path);
  ModelConfig m = parse_model_json(text, path.string());
  m.file = path.string();
  m.file_digest = std::hash<std::string>{}(text);
  return m;
}

}  // namespace fb::workloads
