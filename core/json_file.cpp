#include "core/json_file.hpp"

#include <string>

#include "core/atomic_file.hpp"
#include "core/error.hpp"

namespace fb {

nlohmann::json parse_json_text(std::string_view text, const std::string& source) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw input_error(source + ": malformed JSON at byte " + std::to_string(e.byte));
  } catch (const nlohmann::json::exception& e) {  // out_of_range.406: a number beyond double (1e5000)
    throw input_error(source + ": malformed JSON: " + e.what());
  }
}

nlohmann::json read_json_file(const std::filesystem::path& path) {
  return parse_json_text(read_text_file(path), path.string());
}

}  // namespace fb
