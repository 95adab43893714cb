#pragma once
// Option values that hold a command line's words (resilience --launcher-args, --preflight-args).
#include <string>
#include <vector>

namespace fb::tools {

// Words as a POSIX shell splits them: blanks separate; '...' is literal; "..." keeps \" \\ \$ \` escapes;
// a backslash outside quotes escapes the next character. No expansions. --launcher-args "-x NAME='a b'"
// gives -x and NAME=a b. An unterminated quote is a usage error naming `option`.
std::vector<std::string> split_shell_words(const std::string& text, const char* option);

}  // namespace fb::tools
