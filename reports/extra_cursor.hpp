#pragma once
// For the typed accessors of Result::extra (reports/*_extra.cpp) only. Reading back: a JsonCursor whose
// errors name the result and the place, "result train/tiny-dense/...: $.extra.peak: missing required field
// \"source\"". Writing: non-finite figures as null, as the report writer does.
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/json_cursor.hpp"
#include "reports/report.hpp"

namespace fb::reports {

struct ExtraCursor : JsonCursor<ExtraCursor> {
  template <class T>
  T integer() const {
    if (!j.is_number_integer()) fail("expected an integer");
    return j.get<T>();
  }
  // Each element of an array through `read(cursor)`.
  template <class F>
  auto each(F&& read) const {
    std::vector<decltype(read(std::declval<const ExtraCursor&>()))> out;
    for (std::size_t i = 0; i < array().size(); ++i) out.push_back(read(at(i)));
    return out;
  }
  std::vector<std::string> strings() const {
    return each([](const ExtraCursor& c) { return c.str(); });
  }
  std::vector<double> numbers() const {
    return each([](const ExtraCursor& c) { return c.num(); });
  }
  // An object of figures by name, {"gemm": 0.25, ...}.
  std::map<std::string, double> figures() const {
    std::map<std::string, double> out;
    for (const auto& [key, value] : object().items()) out[key] = child(value, path + "." + key).num();
    return out;
  }
};

// `read(cursor at $.extra)` with the result's identity as the errors' source.
template <class F>
auto read_extra(const Result& r, F&& read) {
  const std::string source = "result " + r.benchmark + "/" + r.name;
  return read(ExtraCursor{{r.extra, "$.extra", source}});
}

// A figure that JSON can hold: non-finite values are written as null (as the report writer does).
inline nlohmann::json finite_or_null(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

}  // namespace fb::reports
