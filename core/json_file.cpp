#include "core/json_file.hpp"

#include <string>

#include "core/atomic_file.hpp"
#include "core/error.hpp"

namespace fb {

nlohmann::json read_json_file(const std::filesystem::path& path) {
  const std::string text = read_text_file(path);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw input_error(path.string() + ": malformed JSON at byte " + std::to_string(e.byte));
  }
}

}  // namespace fb
