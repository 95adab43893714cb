// Command-line words in option values (resilience --launcher-args, --preflight-args), split as a POSIX shell
// splits them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.hpp"
#include "tools/shell_words.hpp"

namespace fb::tools {
namespace {

using Words = std::vector<std::string>;

TEST(ShellWords, SplitsOnBlanksAndKeepsQuotedBlanks) {
  EXPECT_EQ(split_shell_words("", "--x"), Words{});
  EXPECT_EQ(split_shell_words("  --hostfile  hosts\t-x A=1 ", "--x"),
            (Words{"--hostfile", "hosts", "-x", "A=1"}));
  EXPECT_EQ(split_shell_words("-x NAME='a b'", "--x"), (Words{"-x", "NAME=a b"}));
  EXPECT_EQ(split_shell_words("--gemm-floor \"0.5\" --note \"say \\\"hi\\\" \\$HOME\"", "--x"),
            (Words{"--gemm-floor", "0.5", "--note", "say \"hi\" $HOME"}));
  EXPECT_EQ(split_shell_words("'it'\\''s' a\\ b \"\"", "--x"), (Words{"it's", "a b", ""}));
  EXPECT_EQ(split_shell_words("'a\\b' \"c\\d\"", "--x"), (Words{"a\\b", "c\\d"}));  // no escape there
}

TEST(ShellWords, AnUnterminatedQuoteIsAUsageErrorNamingTheOption) {
  for (const char* bad : {"unterminated \"", "-x 'a b", "\"a\\\""}) {
    try {
      split_shell_words(bad, "--launcher-args");
      ADD_FAILURE() << "accepted " << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::usage);
      EXPECT_NE(std::string(e.what()).find("invalid --launcher-args"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("unterminated"), std::string::npos) << e.what();
    }
  }
}

// suite --list prints each step's words quoted so that the line pastes into a shell as it ran.
TEST(ShellWords, QuotedWordsSplitBackToThemselves) {
  EXPECT_EQ(shell_quote("--m"), "--m");
  EXPECT_EQ(shell_quote("crash@step=3;hang@step=5"), "'crash@step=3;hang@step=5'");
  EXPECT_EQ(shell_quote(""), "''");
  for (const std::string w :
       {"plain", "a b", "it's", "$HOME", "x\\y", "\"q\"", "crash@step=3;nan@rank=1", ""})
    EXPECT_EQ(split_shell_words(shell_quote(w), "--x"), Words{w}) << w;
}

}  // namespace
}  // namespace fb::tools
