// A subcommand's own options: no prefix guessing (--out is not --output), an unknown or
// misspelt flag refused with the nearest option.
#include <gtest/gtest.h>

#include <string>

#include "config/command_options.h"
#include "util/errors.h"

namespace st {
namespace {

namespace po = boost::program_options;

std::string refusal(const std::vector<std::string>& args) {
  std::string output, tokenizer;
  po::options_description options("prep");
  options.add_options()("help", "help")("output", po::value(&output), "out")("tokenizer", po::value(&tokenizer), "t");
  try {
    parse_command_options("prep", args, options, 0);
  } catch (const ConfigError& error) {
    return error.what();
  }
  return "(accepted)";
}

TEST(CommandOptions, APrefixIsNotGuessed) {
  EXPECT_EQ(refusal({"--out", "x"}), "prep: unrecognised option '--out'. Did you mean --output? (see shardtune prep --help)");
}

TEST(CommandOptions, AMisspeltFlagGetsTheNearestOption) {
  EXPECT_EQ(refusal({"--tokeniser", "m"}),
            "prep: unrecognised option '--tokeniser'. Did you mean --tokenizer? (see shardtune prep --help)");
  EXPECT_EQ(refusal({"--frobnicate"}), "prep: unrecognised option '--frobnicate'. (see shardtune prep --help)");
  EXPECT_EQ(refusal({"--output", "x", "--tokenizer", "m"}), "(accepted)");
}

}  // namespace
}  // namespace st
