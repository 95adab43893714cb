#pragma once
// Escaping and small text helpers shared by the printers (Markdown, HTML, XML, Prometheus).
#include <string>
#include <string_view>

namespace fb::reports {

// &, <, >, " and ' as entities, tab and newline as character references (kept in attributes too); other
// control characters dropped (XML 1.0 forbids them).
std::string xml_escape(std::string_view text);
// A Markdown table cell that reads as its text: '|', '\\', '*', '`', '[' and ']' backslash-escaped, '<', '>'
// and '&' as entities (no raw HTML), newlines as spaces.
std::string md_cell(std::string_view text);
// The same text as a code span (a command line, a path), fenced so that backticks inside cannot close it.
std::string md_code_cell(std::string_view text);
// Text for a terminal line: control characters (C0, DEL and the C1 range, which includes the escape
// sequence introducers) become spaces, so a name from a report can neither split the line nor drive the
// terminal. Other UTF-8 is kept.
std::string terminal_text(std::string_view text);
// Whether `text` holds a C0 control character or DEL (a newline would split a one-line message or row).
bool has_control_character(std::string_view text);
// Left/right padding to a display width counted in code points (UTF-8 aware, so "±" counts as one).
std::string pad_right(std::string_view text, std::size_t width);
std::string pad_left(std::string_view text, std::size_t width);
std::size_t display_width(std::string_view text);

}  // namespace fb::reports
