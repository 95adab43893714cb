// The command line: the input split at newlines into argv, parsed with the same command table as main
// (every subcommand's options and validators). Nothing is run: a parse either succeeds or is a CLI11
// ParseError, which main prints as one line with exit 2.
#include <vector>

#include <CLI/CLI.hpp>

#include "tests/fuzz/fuzz_common.hpp"
#include "tools/commands.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string s = fb::fuzz::text(data, size);
  std::vector<std::string> args;
  std::size_t begin = 0;
  while (args.size() < 64) {
    const auto end = s.find('\n', begin);
    args.push_back(s.substr(begin, end - begin));
    if (end == std::string::npos) break;
    begin = end + 1;
  }
  CLI::App app{"factorybench", "factorybench"};
  app.require_subcommand(1);
  app.fallthrough();
  fb::tools::GlobalOptions global;
  fb::tools::add_global_options(app, global);
  const auto commands = fb::tools::add_all_commands(app);
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 parses a reversed vector
  fb::fuzz::expect_clean([&] {
    try {
      app.parse(reversed);
    } catch (const CLI::ParseError&) {
    }
  });
  return 0;
}
