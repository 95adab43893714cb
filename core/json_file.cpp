#include "core/json_file.hpp"

#include <fmt/format.h>

#include <set>
#include <string>
#include <vector>

#include "core/atomic_file.hpp"
#include "core/error.hpp"

namespace fb {

namespace {

// One open object or array while parsing: its keys so far, or the index of its current element.
struct Frame {
  bool array = false;
  std::set<std::string> keys;
  std::string key;
  long index = -1;
};

std::string frame_path(const std::vector<Frame>& frames) {
  // Appended piece by piece: GCC 12 warns a false -Wrestrict on a chain of string temporaries.
  std::string path = "$";
  for (std::size_t i = 0; i + 1 < frames.size(); ++i) {
    if (frames[i].array) {
      path += '[';
      path += std::to_string(frames[i].index);
      path += ']';
    } else {
      path += '.';
      path += frames[i].key;
    }
  }
  return path;
}

}  // namespace

void reject_duplicate_keys(std::string_view text, const std::string& source) {
  using json = nlohmann::json;
  std::vector<Frame> frames;
  std::string duplicate;
  const json::parser_callback_t seen = [&](int, json::parse_event_t event, json& parsed) {
    const auto element = [&] {
      if (!frames.empty() && frames.back().array) ++frames.back().index;
    };
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        element();
        frames.push_back({event == json::parse_event_t::array_start, {}, {}, -1});
        break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        if (!frames.empty()) frames.pop_back();
        break;
      case json::parse_event_t::key:
        if (!frames.empty() && parsed.is_string()) {
          auto& f = frames.back();
          f.key = parsed.get<std::string>();
          if (!f.keys.insert(f.key).second && duplicate.empty()) duplicate = frame_path(frames) + "." + f.key;
        }
        break;
      case json::parse_event_t::value:
        element();
        break;
    }
    return true;
  };
  try {
    const json whole = json::parse(text, seen);
    (void)whole;
  } catch (const json::exception&) {
    return;  // not JSON: the reader's own parse says so
  }
  if (!duplicate.empty()) throw input_error(fmt::format("{}: {}: duplicate key", source, duplicate));
}

nlohmann::json parse_json_text(std::string_view text, const std::string& source) {
  reject_duplicate_keys(text, source);
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
