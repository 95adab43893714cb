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

// Deeper than any report, suite or model we write (under 10 levels): nlohmann's parser is iterative, but
// copying and walking the value recurse, and 150,000 nested arrays overflowed the stack (exit 139).
constexpr std::size_t kMaxJsonDepth = 512;

struct TooDeep {};

// Parses `text` once, watching each object's keys as the parser reads them: `duplicate` is set to the path
// of the first key an object names twice. Throws nlohmann's exceptions for text that is not JSON, TooDeep
// for nesting beyond kMaxJsonDepth.
nlohmann::json parse_watching_keys(std::string_view text, std::string& duplicate) {
  using json = nlohmann::json;
  std::vector<Frame> frames;
  const json::parser_callback_t seen = [&](int, json::parse_event_t event, json& parsed) {
    const auto element = [&] {
      if (!frames.empty() && frames.back().array) ++frames.back().index;
    };
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        element();
        if (frames.size() >= kMaxJsonDepth) throw TooDeep{};
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
  return json::parse(text, seen);
}

void reject_nul(std::string_view text, const std::string& source) {
  if (const auto nul = text.find('\0'); nul != std::string_view::npos)
    throw input_error(fmt::format("{}: malformed JSON: a NUL byte at byte {}", source, nul + 1));
}

}  // namespace

void reject_duplicate_keys(std::string_view text, const std::string& source) {
  std::string duplicate;
  try {
    (void)parse_watching_keys(text, duplicate);
  } catch (const nlohmann::json::exception&) {
    return;  // not JSON: the reader's own parse says so
  } catch (const TooDeep&) {
    throw input_error(fmt::format("{}: JSON nested deeper than {} levels", source, kMaxJsonDepth));
  }
  if (!duplicate.empty()) throw input_error(fmt::format("{}: {}: duplicate key", source, duplicate));
}

nlohmann::json parse_json_text(std::string_view text, const std::string& source) {
  // nlohmann's lexer reads a NUL byte as the end of its input: whatever follows one (a file's damaged tail,
  // another file appended) would be dropped unseen. JSON text has no place for one.
  reject_nul(text, source);
  std::string duplicate;
  nlohmann::json parsed;
  try {
    parsed = parse_watching_keys(text, duplicate);
  } catch (const nlohmann::json::parse_error& e) {
    // nlohmann's byte is 1-based and one past the end when the text stops inside a value: a truncated file
    // (a write cut short) is said as such rather than pointed at a byte it does not have.
    std::string_view body = text;
    if (body.starts_with("\xEF\xBB\xBF")) body.remove_prefix(3);  // a UTF-8 byte order mark, alone
    if (body.find_first_not_of(" \t\r\n") == std::string_view::npos)
      throw input_error(source + ": empty: no JSON value in it");
    if (e.byte > text.size())
      throw input_error(fmt::format("{}: malformed JSON: it ends inside a value, after {} bytes (truncated?)",
                                    source, text.size()));
    throw input_error(source + ": malformed JSON at byte " + std::to_string(e.byte));
  } catch (const nlohmann::json::exception& e) {  // out_of_range.406: a number beyond double (1e5000)
    // nlohmann quotes the whole number, however long: the first digits say which one it is.
    std::string what = e.what();
    if (const auto at = what.find("number overflow parsing '"); e.id == 406 && at != std::string::npos) {
      std::string number = what.substr(at + 25);
      if (!number.empty() && number.back() == '\'') number.pop_back();
      if (number.size() > 24)
        number = number.substr(0, 20) + fmt::format("... ({} characters)", number.size());
      what = fmt::format("the number {} is beyond the range of a double", number);
    }
    throw input_error(source + ": malformed JSON: " + what);
  } catch (const TooDeep&) {
    throw input_error(fmt::format("{}: JSON nested deeper than {} levels", source, kMaxJsonDepth));
  }
  if (!duplicate.empty()) throw input_error(fmt::format("{}: {}: duplicate key", source, duplicate));
  return parsed;
}

nlohmann::json read_json_file(const std::filesystem::path& path) {
  return parse_json_text(read_text_file(path), path.string());
}

}  // namespace fb
