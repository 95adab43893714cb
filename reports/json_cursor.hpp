#pragma once
// Reading JSON input (reports, compare rules, nccl-tests -J files) with its path at hand, so that every error
// names the file and the place: "mine.json: $.results[3].metrics.tflops: expected a number". Each reader
// derives its own cursor (CRTP) for the value checks of its format.
#include <cmath>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace fb::reports {

template <class Self>
struct JsonCursor {
  const nlohmann::json& j;
  std::string path;           // "$.results[3]"
  const std::string& source;  // the file (or label) the document came from

  [[noreturn]] void fail(const std::string& what) const {
    throw input_error(source + ": " + path + ": " + what);
  }
  Self child(const nlohmann::json& value, std::string child_path) const {
    return Self{{value, std::move(child_path), source}};
  }
  // A required field of an object.
  Self at(const std::string& key) const {
    if (!j.is_object()) fail("expected an object");
    if (!j.contains(key)) fail("missing required field \"" + key + "\"");
    return child(j.at(key), path + "." + key);
  }
  Self at(std::size_t i) const { return child(j.at(i), path + "[" + std::to_string(i) + "]"); }
  bool has(const std::string& key) const { return j.is_object() && j.contains(key) && !j.at(key).is_null(); }

  // An object whose schema closes it (additionalProperties: false): a field outside `known` is a typo or
  // another format, refused by name rather than silently dropped ("stat" for "stats" loses the noise band).
  void known_fields(std::initializer_list<std::string_view> known) const {
    for (const auto& item : object().items()) {
      bool ok = false;
      for (const auto k : known) ok = ok || item.key() == k;
      if (ok) continue;
      std::string list;
      for (const auto k : known) list += (list.empty() ? "" : ", ") + std::string(k);
      child(item.value(), path + "." + item.key()).fail("unknown field (known: " + list + ")");
    }
  }

  // Value checks shared by the formats.
  const nlohmann::json& object() const {
    if (!j.is_object()) fail("expected an object");
    return j;
  }
  const nlohmann::json& array() const {
    if (!j.is_array()) fail("expected an array");
    return j;
  }
  std::string str() const {
    if (!j.is_string()) fail("expected a string");
    return j.get<std::string>();
  }
  bool boolean() const {
    if (!j.is_boolean()) fail("expected true or false");
    return j.get<bool>();
  }
  // A figure of factorybench's own reports: JSON has no NaN, so a non-finite figure is written as null and
  // reads back as NaN.
  double num() const {
    if (j.is_null()) return std::nan("");
    if (!j.is_number()) fail("expected a number");
    return j.get<double>();
  }
};

}  // namespace fb::reports
