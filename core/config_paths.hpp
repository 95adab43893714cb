#pragma once
// Where configs/ (hardware peaks, models, suites, failure models, references) is found at run time:
// $FACTORYBENCH_CONFIG_DIR, else <prefix>/share/factorybench/configs beside an installed binary, else the
// source tree's configs/ this binary was built from.
#include <filesystem>
#include <string_view>

namespace fb {

std::filesystem::path config_dir();
// config_dir()/category/name.json when `name_or_path` is a bare name, else the path itself. Throws an input
// Error listing the available names when neither exists.
std::filesystem::path resolve_config(std::string_view category, std::string_view name_or_path);

}  // namespace fb
