#include "tools/shell_words.hpp"

#include <algorithm>
#include <cctype>
#include <string_view>

#include <fmt/format.h>

#include "core/error.hpp"

namespace fb::tools {

std::vector<std::string> split_shell_words(const std::string& s, const char* option) {
  std::vector<std::string> out;
  std::string word;
  bool in_word = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) out.push_back(std::move(word));
      word.clear();
      in_word = false;
      continue;
    }
    in_word = true;
    if (c == '\\' && i + 1 < s.size()) {
      word += s[++i];
    } else if (c == '\'') {
      const std::size_t end = s.find('\'', i + 1);
      if (end == std::string::npos)
        throw usage_error(fmt::format("invalid {} '{}': unterminated single quote", option, s));
      word.append(s, i + 1, end - i - 1);
      i = end;
    } else if (c == '"') {
      std::size_t k = i + 1;
      for (; k < s.size() && s[k] != '"'; ++k) {
        if (s[k] == '\\' && k + 1 < s.size() &&
            std::string_view("\"\\$`").find(s[k + 1]) != std::string_view::npos)
          ++k;
        word += s[k];
      }
      if (k == s.size())
        throw usage_error(fmt::format("invalid {} '{}': unterminated double quote", option, s));
      i = k;
    } else {
      word += c;
    }
  }
  if (in_word) out.push_back(std::move(word));
  return out;
}

std::string shell_quote(const std::string& word) {
  const bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string_view("_@%+=:,./-").find(c) != std::string_view::npos;
  });
  if (plain) return word;
  std::string out = "'";
  for (const char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace fb::tools
