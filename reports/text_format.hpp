#pragma once
// Escaping and small text helpers shared by the printers (Markdown, HTML, XML, Prometheus).
#include <string>
#include <string_view>

namespace fb::reports {

// &, <, >, " and ' as entities; control characters other than tab/newline dropped (XML 1.0 forbids them).
std::string xml_escape(std::string_view text);
// A Markdown table cell: '|' escaped, newlines as spaces.
std::string md_cell(std::string_view text);
// Left/right padding to a display width counted in code points (UTF-8 aware, so "±" counts as one).
std::string pad_right(std::string_view text, std::size_t width);
std::string pad_left(std::string_view text, std::size_t width);
std::size_t display_width(std::string_view text);

}  // namespace fb::reports
