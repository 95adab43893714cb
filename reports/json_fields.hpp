#pragma once
// Optional fields of report JSON as text, for the printers and compare: a report's open objects (summary,
// params, system, run) may lack a field or, when edited by hand, hold another type there; these read such a
// field as absent instead of throwing nlohmann's type_error.
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace fb::reports {

// j[key] when j is an object and that is a string; else "".
std::string string_field(const nlohmann::json& j, const char* key);
// j[key] as text: a string as is, a number, bool, array or object as its JSON text; "" when absent or null.
std::string field_text(const nlohmann::json& j, const char* key);
// j[key] when j is an object and that is a number; else none.
std::optional<double> number_at(const nlohmann::json& j, const std::string& key);

}  // namespace fb::reports
