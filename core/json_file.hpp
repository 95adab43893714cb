#pragma once
// A JSON file read whole, with one error wording for every reader: "PATH: malformed JSON at byte N".
#include <filesystem>

#include <nlohmann/json.hpp>

namespace fb {

// Throws an input Error naming the path when the file is missing, unreadable or not JSON.
nlohmann::json read_json_file(const std::filesystem::path& path);

}  // namespace fb
