#include "resilience/failure_model.hpp"
#include "core/json_file.hpp"

#include <array>
#include <cmath>

#include <fmt/format.h>

#include "core/config_paths.hpp"
#include "core/error.hpp"

namespace fb::resilience {
namespace {

using nlohmann::json;

// Categories follow the Llama 3 interruption table (Dubey et al. 2024, table 5) plus two generic ones.
constexpr std::array<CategoryTraits, 20> kCategories{{
    {"faulty_gpu", true, true, "GPU failure (NVLink, memory, Xid)"},
    {"gpu_hbm3", true, true, "GPU HBM3 memory"},
    {"gpu_sram", true, true, "GPU SRAM"},
    {"gpu_system_processor", true, true, "GPU system processor (GSP)"},
    {"gpu_thermal", true, false, "GPU thermal interface or sensor"},
    {"silent_data_corruption", true, true, "silent data corruption"},
    {"host_maintenance", true, true, "unplanned host maintenance"},
    {"nic", true, true, "network interface card"},
    {"ssd", true, true, "local SSD"},
    {"psu", true, true, "power supply"},
    {"chassis", true, true, "server chassis"},
    {"io_expansion_board", true, true, "IO expansion board"},
    {"cpu", true, true, "host CPU"},
    {"system_memory", true, true, "host memory"},
    {"node", true, true, "node failure of any cause"},
    {"software_bug", false, false, "software bug (restart in place)"},
    {"nccl_watchdog_timeout", false, false, "collective hang caught by the NCCL watchdog"},
    {"network_switch_cable", false, false, "network switch or cable"},
    {"dependency", false, false, "external dependency (storage, scheduler)"},
    {"job", false, false, "job interruption of any cause (--job-mtbf)"},
}};

std::string known_names() {
  std::string s;
  for (const auto& c : kCategories) {
    if (!s.empty()) s += ", ";
    s += c.name;
  }
  return s;
}

struct Where {
  const std::string& source;
  std::string path;
  [[noreturn]] void fail(const std::string& what) const {
    throw input_error(source + ": " + path + ": " + what);
  }
  Where at(const std::string& key) const { return {source, path + "." + key}; }
};

std::string read_string(const json& j, const Where& w) {
  if (!j.is_string()) w.fail("expected a string");
  return j.get<std::string>();
}

void reject_unknown_keys(const json& j, const Where& w, std::initializer_list<std::string_view> allowed) {
  for (const auto& [key, value] : j.items()) {
    bool ok = false;
    for (auto a : allowed) ok = ok || key == a;
    if (!ok) w.at(key).fail("unknown field");
  }
}

FailureScope parse_scope(const json& j, const Where& w) {
  const auto s = read_string(j, w);
  if (s == "gpu") return FailureScope::gpu;
  if (s == "node") return FailureScope::node;
  if (s == "job") return FailureScope::job;
  w.fail("unknown scope \"" + s + "\" (expected gpu, node or job)");
}

}  // namespace

std::string_view to_string(FailureScope scope) {
  switch (scope) {
    case FailureScope::gpu:
      return "gpu";
    case FailureScope::node:
      return "node";
    case FailureScope::job:
      return "job";
  }
  return "?";
}

std::span<const CategoryTraits> known_failure_categories() {
  return kCategories;
}

const CategoryTraits* find_failure_category(std::string_view name) {
  for (const auto& c : kCategories)
    if (c.name == name) return &c;
  return nullptr;
}

FailureModel parse_failure_model(const json& j, const std::string& source) {
  const Where root{source, "$"};
  if (!j.is_object()) root.fail("expected an object");
  reject_unknown_keys(j, root, {"name", "description", "source", "gpus_per_node", "categories"});
  FailureModel m;
  if (!j.contains("name")) root.fail("missing required field \"name\"");
  m.name = read_string(j.at("name"), root.at("name"));
  if (j.contains("description")) m.description = read_string(j.at("description"), root.at("description"));
  if (j.contains("source")) m.source = read_string(j.at("source"), root.at("source"));
  if (j.contains("gpus_per_node")) {
    const auto& g = j.at("gpus_per_node");
    if (!g.is_number_integer() || g.get<std::int64_t>() <= 0)
      root.at("gpus_per_node").fail("expected a positive integer");
    m.gpus_per_node = g.get<int>();
  }
  if (!j.contains("categories")) root.fail("missing required field \"categories\"");
  const auto& cats = j.at("categories");
  const Where cw = root.at("categories");
  if (!cats.is_object()) cw.fail("expected an object of category name → {scope, rate_per_hour}");
  if (cats.empty()) cw.fail("no failure categories");
  for (const auto& [name, value] : cats.items()) {
    const Where w = cw.at(name);
    const auto* traits = find_failure_category(name);
    if (!traits) w.fail("unknown failure category (known: " + known_names() + ")");
    if (!value.is_object()) w.fail("expected an object {scope, rate_per_hour}");
    reject_unknown_keys(value, w, {"scope", "rate_per_hour", "observed", "note"});
    FailureCategory c;
    c.name = name;
    c.traits = *traits;
    if (!value.contains("scope")) w.fail("missing required field \"scope\"");
    c.scope = parse_scope(value.at("scope"), w.at("scope"));
    if (!value.contains("rate_per_hour")) w.fail("missing required field \"rate_per_hour\"");
    const auto& rate = value.at("rate_per_hour");
    if (!rate.is_number()) w.at("rate_per_hour").fail("expected a number");
    c.rate_per_hour = rate.get<double>();
    if (!std::isfinite(c.rate_per_hour) || c.rate_per_hour <= 0)
      w.at("rate_per_hour").fail(fmt::format("must be > 0 (got {})", c.rate_per_hour));
    // Bounds that no published rate comes near (the smallest in the presets is 3.3e-7 per GPU-hour): below
    // 1e-12 the intervals derived from it overflow to meaningless figures; above 3600 a unit fails every
    // second.
    if (c.rate_per_hour < 1e-12 || c.rate_per_hour > 3600)
      w.at("rate_per_hour").fail(fmt::format("must be in [1e-12, 3600] per hour (got {})", c.rate_per_hour));
    // Documentation (the published count the rate came from, a remark), checked all the same: a typo in
    // them is still a typo.
    if (value.contains("observed") &&
        !(value.at("observed").is_number_integer() && value.at("observed").get<std::int64_t>() >= 0))
      w.at("observed").fail("expected a non-negative integer (the published count of interruptions)");
    if (value.contains("note")) read_string(value.at("note"), w.at("note"));
    m.categories.push_back(std::move(c));
  }
  return m;
}

FailureModel load_failure_model(std::string_view name_or_path) {
  const auto path = resolve_config("failure-models", name_or_path);
  auto m = parse_failure_model(read_json_file(path), path.string());
  m.file = path.string();
  return m;
}

FailureModel single_rate_model(double job_mtbf_s) {
  if (!std::isfinite(job_mtbf_s) || job_mtbf_s <= 0)
    throw usage_error(fmt::format("invalid --job-mtbf {}: must be positive", job_mtbf_s));
  FailureModel m;
  m.name = "job-mtbf";
  m.description = "one job-level failure rate";
  m.source = fmt::format("--job-mtbf: rate 1/{} s, independent of the allocation size", job_mtbf_s);
  FailureCategory c;
  c.name = "job";
  c.scope = FailureScope::job;
  c.rate_per_hour = 3600.0 / job_mtbf_s;
  c.traits = *find_failure_category("job");
  m.categories.push_back(c);
  return m;
}

AllocationRates allocation_rates(const FailureModel& model, std::int64_t gpus, int gpus_per_node) {
  AllocationRates r;
  const double nodes = static_cast<double>(gpus / gpus_per_node);
  for (const auto& c : model.categories) {
    // Rate of this category on one node (gpu and node scopes) or on the whole job (job scope).
    double per_unit = c.rate_per_hour;
    if (c.scope == FailureScope::gpu) per_unit *= gpus_per_node;
    const double whole = c.scope == FailureScope::job ? per_unit : per_unit * nodes;
    r.per_category_h.push_back(whole);
    if (c.traits.node_attributed && c.scope != FailureScope::job)
      r.node_attributed_per_node_h += per_unit;
    else
      r.job_level_h += whole;
    r.total_h += whole;
  }
  return r;
}

double job_mtbf_s(const FailureModel& model, std::int64_t gpus, int gpus_per_node) {
  return 3600.0 / allocation_rates(model, gpus, gpus_per_node).total_h;
}

}  // namespace fb::resilience
