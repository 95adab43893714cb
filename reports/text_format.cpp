#include "reports/text_format.hpp"

#include <algorithm>

namespace fb::reports {

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    // U+FFFE and U+FFFF (UTF-8 EF BF BE/BF) are valid JSON but not XML characters: a JUnit file holding one
    // is rejected by its readers. They become U+FFFD, the replacement character.
    if (static_cast<unsigned char>(ch) == 0xEF && i + 2 < text.size() &&
        static_cast<unsigned char>(text[i + 1]) == 0xBF &&
        (static_cast<unsigned char>(text[i + 2]) == 0xBE ||
         static_cast<unsigned char>(text[i + 2]) == 0xBF)) {
      out += "\xEF\xBF\xBD";
      i += 2;
      continue;
    }
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      // As character references, so an attribute keeps them: a parser normalises a literal tab or newline in
      // an attribute value (a JUnit failure message) to a space.
      case '\t':
        out += "&#9;";
        break;
      case '\n':
        out += "&#10;";
        break;
      default:
        if (static_cast<unsigned char>(ch) < 0x20) continue;
        out += ch;
    }
  }
  return out;
}

std::string md_cell(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    switch (ch) {
      case '|':  // ends the cell (GitHub's tables split cells before inline parsing)
      case '\\':
      case '`':
      case '*':  // ('_' is left: GitHub's Markdown does not emphasise inside words like busbw_gbps)
      case '[':
      case ']':
        out += '\\';
        out += ch;
        break;
      case '<':  // raw HTML would pass through (<script>, <b>)
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '\n':
      case '\r':
      case '\t':
        out += ' ';
        break;
      default:
        // Other control characters (an ESC would recolour a terminal showing the file) are left out.
        if (static_cast<unsigned char>(ch) < 0x20 || ch == '\x7f') continue;
        out += ch;
    }
  }
  return out;
}

std::string md_code_cell(std::string_view text) {
  // A code span shows its text literally, so only '|' (the cell's end) is escaped; the fence is one
  // backtick longer than the longest run inside, padded with spaces when the text starts or ends with one.
  std::size_t longest = 0, run = 0;
  std::string body;
  for (const char ch : text) {
    run = ch == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
    if (ch == '|')
      body += "\\|";
    else if (ch == '\n' || ch == '\r')
      body += ' ';
    else
      body += ch;
  }
  const std::string fence(longest + 1, '`');
  const bool pad = !body.empty() && (body.front() == '`' || body.back() == '`');
  return fence + (pad ? " " : "") + body + (pad ? " " : "") + fence;
}

bool has_control_character(std::string_view text) {
  return std::any_of(text.begin(), text.end(),
                     [](char ch) { return static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f; });
}

std::string terminal_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) {
      out += ' ';
    } else if (c == 0xc2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
      out += ' ';  // U+0080..U+009F
      ++i;
    } else {
      out += text[i];
    }
  }
  return out;
}

std::size_t display_width(std::string_view text) {
  std::size_t n = 0;
  for (const char ch : text) n += (static_cast<unsigned char>(ch) & 0xC0) != 0x80 ? 1 : 0;
  return n;
}

std::string pad_right(std::string_view text, std::size_t width) {
  std::string s(text);
  const std::size_t w = display_width(text);
  if (w < width) s.append(width - w, ' ');
  return s;
}

std::string pad_left(std::string_view text, std::size_t width) {
  const std::size_t w = display_width(text);
  return (w < width ? std::string(width - w, ' ') : std::string()) + std::string(text);
}

}  // namespace fb::reports
