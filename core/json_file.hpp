#pragma once
// A JSON file read whole, with one error wording for every reader: "PATH: malformed JSON at byte N".
#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace fb {

// Throws an input Error naming the path when the file is missing, unreadable or not JSON, or when an object
// names a key twice (nlohmann keeps the last, so `"tolerance": "5%", "tolerance": "500%"` would loosen a
// gate without a word).
nlohmann::json read_json_file(const std::filesystem::path& path);
// The same for text already read; `source` names it in errors (a number beyond double, 1e5000, is malformed
// JSON too, not an internal error).
nlohmann::json parse_json_text(std::string_view text, const std::string& source);
// For readers with their own parse errors: throws "SOURCE: $.path.key: duplicate key" when an object of
// `text` names a key twice; nothing for text that is not JSON (the reader reports that).
void reject_duplicate_keys(std::string_view text, const std::string& source);

}  // namespace fb
