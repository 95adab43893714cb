#pragma once
// Comma-separated option values ("--tests p2p,bisection", "-b 1K,1M", "--sweep-gpus 8,16").
#include <string>
#include <vector>

namespace fb::tools {

// The items of `text`; an empty one ("8,,16", a leading or trailing comma) is a usage error naming `option`.
std::vector<std::string> split_comma_list(const std::string& text, const std::string& option);

}  // namespace fb::tools
