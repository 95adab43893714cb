#include "tools/comma_list.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace fb::tools {

std::vector<std::string> split_comma_list(const std::string& text, const std::string& option) {
  std::vector<std::string> out;
  std::size_t begin = 0;
  while (true) {
    const std::size_t end = text.find(',', begin);
    std::string item = text.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
    if (item.empty()) throw usage_error(fmt::format("invalid {} '{}': an empty item", option, text));
    out.push_back(std::move(item));
    if (end == std::string::npos) return out;
    begin = end + 1;
  }
}

}  // namespace fb::tools
