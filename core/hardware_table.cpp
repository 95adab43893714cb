#include "core/hardware_table.hpp"
#include "core/json_file.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/config_paths.hpp"
#include "core/error.hpp"

namespace fb {

HardwarePeaks parse_hardware_entry(const nlohmann::json& j, const std::string& file) {
  const auto where = [&](const std::string& key) { return file + ": " + key; };
  HardwarePeaks hw;
  hw.file = file;
  try {
    hw.name = j.at("name").get<std::string>();
    hw.match = j.at("match").get<std::vector<std::string>>();
    if (j.contains("exclude")) hw.exclude = j.at("exclude").get<std::vector<std::string>>();
    for (const auto& [k, v] : j.at("peak_tflops").items()) hw.peak_tflops[k] = v.get<double>();
    if (j.contains("mamf_tflops"))
      for (const auto& [k, v] : j.at("mamf_tflops").items()) hw.mamf_tflops[k] = v.get<double>();
    hw.kind = j.value("kind", std::string("gpu"));
    if (hw.kind != "gpu" && hw.kind != "cpu") throw input_error(where("kind") + ": expected gpu or cpu");
    hw.hbm_tbps = j.value("hbm_tbps", 0.0);
    if (j.contains("health")) {
      const auto& h = j.at("health");
      if (!h.is_object()) throw input_error(where("health") + ": expected an object");
      const auto fraction = [&](const char* key, std::optional<double>& out) {
        if (!h.contains(key)) return;
        const double f = h.at(key).get<double>();
        if (!(f >= 0 && f <= 1))
          throw input_error(where(std::string("health.") + key) + ": must be a fraction in [0, 1]");
        out = f;
      };
      for (const auto& [key, value] : h.items())
        if (key != "gemm_floor" && key != "power_limit_fail" && key != "power_limit_warn" &&
            key != "clock_under_load_warn")
          throw input_error(where("health." + key) +
                            ": unknown field (gemm_floor, power_limit_fail, power_limit_warn, "
                            "clock_under_load_warn)");
      fraction("gemm_floor", hw.health_gemm_floor);
      fraction("power_limit_fail", hw.health_power_limit_fail);
      fraction("power_limit_warn", hw.health_power_limit_warn);
      fraction("clock_under_load_warn", hw.health_clock_under_load_warn);
      if (hw.health_power_limit_fail && hw.health_power_limit_warn &&
          *hw.health_power_limit_fail > *hw.health_power_limit_warn)
        throw input_error(where("health.power_limit_fail") + ": must not exceed health.power_limit_warn");
    }
    hw.source = j.value("source", std::string());
  } catch (const nlohmann::json::exception& e) {
    throw input_error(where("invalid hardware entry") + ": " + e.what());
  }
  return hw;
}

std::vector<HardwarePeaks> load_hardware_table() {
  std::vector<HardwarePeaks> out;
  const auto dir = config_dir() / "hardware";
  std::error_code ec;
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.path().extension() == ".json") files.push_back(e.path());
  if (ec)
    throw input_error(
        fmt::format("cannot read the hardware table {}: {} (set FACTORYBENCH_CONFIG_DIR to the "
                    "configs folder)",
                    dir.string(), ec.message()));
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    out.push_back(parse_hardware_entry(read_json_file(f), f.string()));
  }
  return out;
}

std::optional<HardwarePeaks> find_hardware(const std::vector<HardwarePeaks>& table,
                                           const std::string& device_name) {
  // A match starts a word of the name: "H200" is not the tail of "GH200" (a Grace Hopper superchip, other
  // power and MAMF), nor "B200" of "GB200". An excluded word is a whole word of the name.
  const auto starts_a_word = [&](const std::string& m) {
    for (auto at = device_name.find(m); at != std::string::npos; at = device_name.find(m, at + 1))
      if (at == 0 || !std::isalnum(static_cast<unsigned char>(device_name[at - 1]))) return true;
    return false;
  };
  const auto is_a_word = [&](const std::string& w) {
    for (auto at = device_name.find(w); at != std::string::npos; at = device_name.find(w, at + 1)) {
      const auto end = at + w.size();
      if ((at == 0 || !std::isalnum(static_cast<unsigned char>(device_name[at - 1]))) &&
          (end == device_name.size() || !std::isalnum(static_cast<unsigned char>(device_name[end]))))
        return true;
    }
    return false;
  };
  const HardwarePeaks* best = nullptr;
  std::size_t best_len = 0;
  for (const auto& hw : table)
    for (const auto& m : hw.match)
      if (!m.empty() && m.size() > best_len && starts_a_word(m) &&
          std::none_of(hw.exclude.begin(), hw.exclude.end(), is_a_word)) {
        best = &hw;
        best_len = m.size();
      }
  if (!best) return std::nullopt;
  return *best;
}

std::optional<HardwarePeaks> find_hardware_class(const std::vector<HardwarePeaks>& table,
                                                 const std::string& kind) {
  for (const auto& hw : table)
    if (hw.kind == kind) return hw;
  return std::nullopt;
}

std::optional<double> peak_for(const HardwarePeaks& hw, const std::string& dtype) {
  auto it = hw.peak_tflops.find(dtype);
  if (it == hw.peak_tflops.end() && dtype.rfind("fp8", 0) == 0) it = hw.peak_tflops.find("fp8");
  if (it == hw.peak_tflops.end()) return std::nullopt;
  return it->second;
}

}  // namespace fb
