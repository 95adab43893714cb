#pragma once
// Option values that hold a command line's words (resilience --launcher-args, --preflight-args).
#include <string>
#include <vector>

namespace fb::tools {

// Words as a POSIX shell splits them: blanks separate; '...' is literal; "..." keeps \" \\ \$ \` escapes;
// a backslash outside quotes escapes the next character. No expansions. --launcher-args "-x NAME='a b'"
// gives -x and NAME=a b. An unterminated quote is a usage error naming `option`.
std::vector<std::string> split_shell_words(const std::string& text, const char* option);
// One word as a shell reads it back: as is when it holds nothing a shell treats specially, else in single
// quotes. split_shell_words(shell_quote(w)) == {w}.
std::string shell_quote(const std::string& word);

}  // namespace fb::tools
