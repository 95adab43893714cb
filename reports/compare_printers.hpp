#pragma once
// Renderings of a Comparison, one file each: compare_table.cpp (terminal), compare_markdown.cpp,
// compare_json.cpp, compare_junit.cpp (one testcase per compared metric, for CI test views).
#include <string>
#include <string_view>

#include "reports/compare.hpp"

namespace fb::reports {

enum class CompareFormat { table, markdown, json_document, junit };
// "table", "md" (or "markdown"), "json", "junit"; throws a usage Error naming --format otherwise.
CompareFormat parse_compare_format(std::string_view text);

std::string render_compare_table(const Comparison& c);
std::string render_compare_markdown(const Comparison& c);
std::string render_compare_json(const Comparison& c);
std::string render_compare_junit(const Comparison& c);
std::string render_compare(const Comparison& c, CompareFormat format);

}  // namespace fb::reports
