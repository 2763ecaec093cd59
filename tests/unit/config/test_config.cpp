// Config parsing: precedence (command line > file > defaults), error messages with file:line,
// help text, and the resolved-config round trip.
#include <gtest/gtest.h>

#include <sstream>

#include "config_test_helpers.h"
#include "train/train_arguments.h"
#include "train/train_config_schema.h"
#include "util/errors.h"

namespace st {
namespace {

using st::testing::parse;
using st::testing::TempIni;

std::string config_error_of(const std::vector<std::string>& args) {
  try {
    parse(args);
  } catch (const ConfigError& error) {
    return error.what();
  }
  ADD_FAILURE() << "no ConfigError was thrown";
  return "";
}

TEST(ConfigParse, DefaultsWithoutArguments) {
  const auto parsed = parse({});
  EXPECT_DOUBLE_EQ(parsed.config.optim.lr, 1e-5);
  EXPECT_EQ(parsed.config.train.stage, Stage::dpo);
  EXPECT_DOUBLE_EQ(parsed.config.dist.timeout_s, 1800.0);
  EXPECT_TRUE(parsed.origins.empty());
  EXPECT_FALSE(parsed.help);
}

TEST(ConfigParse, FileBeatsDefaultsAndCommandLineBeatsFile) {
  TempIni ini("# comment line\n[optim]\nlr = 3e-4   # trailing comment\nbeta2 = 0.95\n"
              "[train]\nmicro_batch = 4\nstage = sft\n");
  const auto parsed = parse({"--config", ini.path(), "--optim.lr=2e-5", "--train.grad_accum", "8"});
  EXPECT_DOUBLE_EQ(parsed.config.optim.lr, 2e-5);       // command line
  EXPECT_DOUBLE_EQ(parsed.config.optim.beta2, 0.95);    // file
  EXPECT_EQ(parsed.config.train.micro_batch, 4);        // file
  EXPECT_EQ(parsed.config.train.grad_accum, 8);         // command line
  EXPECT_EQ(parsed.config.train.stage, Stage::sft);          // file
  EXPECT_DOUBLE_EQ(parsed.config.optim.beta1, 0.9);     // default
  EXPECT_EQ(parsed.origins.at("optim.lr"), "command line");
  EXPECT_EQ(parsed.origins.at("optim.beta2"), ini.path() + ":4");
  EXPECT_EQ(parsed.origins.count("optim.beta1"), 0u);
}

TEST(ConfigParse, UnknownKeyInFileNamesFileLineAndSuggestion) {
  TempIni ini("[optim]\nlr = 1e-4\nlrr = 2e-4\n");
  const std::string message = config_error_of({"--config", ini.path()});
  EXPECT_NE(message.find(ini.path() + ":3"), std::string::npos) << message;
  EXPECT_NE(message.find("optim.lrr"), std::string::npos) << message;
  EXPECT_NE(message.find("Did you mean optim.lr?"), std::string::npos) << message;
}

TEST(ConfigParse, UnknownSectionKeyOnCommandLine) {
  const std::string message = config_error_of({"--train.micro_btach=2"});
  EXPECT_NE(message.find("command line: unknown option --train.micro_btach"), std::string::npos)
      << message;
  EXPECT_NE(message.find("Did you mean --train.micro_batch?"), std::string::npos) << message;
}

TEST(ConfigParse, PrefixesAreNotGuessed) {
  const std::string message = config_error_of({"--optim.l=1"});
  EXPECT_NE(message.find("unknown option --optim.l"), std::string::npos) << message;
}

TEST(ConfigParse, MalformedValueInFileNamesKeyValueAndLine) {
  TempIni ini("[train]\nmicro_batch = 4\n\n[optim]\nlr = fast\n");
  const std::string message = config_error_of({"--config", ini.path()});
  EXPECT_NE(message.find(ini.path() + ":5: optim.lr = 'fast' is not valid"), std::string::npos)
      << message;
  EXPECT_NE(message.find("Expected a number"), std::string::npos) << message;
}

TEST(ConfigParse, MalformedIntegerOnCommandLine) {
  const std::string message = config_error_of({"--train.micro_batch=1.5"});
  EXPECT_NE(message.find("command line"), std::string::npos) << message;
  EXPECT_NE(message.find("train.micro_batch"), std::string::npos) << message;
  EXPECT_NE(message.find("Expected an integer"), std::string::npos) << message;
}

TEST(ConfigParse, RepeatedKeyNamesTheLine) {
  TempIni ini("[optim]\nlr = 1e-4\nlr = 2e-4\n");
  const std::string message = config_error_of({"--config", ini.path()});
  EXPECT_NE(message.find("optim.lr is set more than once"), std::string::npos) << message;
  EXPECT_NE(message.find(ini.path() + ":3"), std::string::npos) << message;
  TempIni datasets("[data]\ntrain = a\ntrain = b\n");
  const std::string mixture = config_error_of({"--config", datasets.path()});
  EXPECT_NE(mixture.find("list the datasets in it: data.train = dir_a:0.7, dir_b:0.3"), std::string::npos) << mixture;
}

TEST(ConfigParse, SyntaxErrorNamesTheLine) {
  TempIni ini("[optim]\nlr 1e-4\n");
  const std::string message = config_error_of({"--config", ini.path()});
  EXPECT_NE(message.find(ini.path() + ":2: cannot parse 'lr 1e-4'"), std::string::npos) << message;
}

TEST(ConfigParse, MissingConfigFileNamesThePath) {
  const std::string message = config_error_of({"--config", "/nonexistent/run.ini"});
  EXPECT_NE(message.find("/nonexistent/run.ini: cannot open config file"), std::string::npos)
      << message;
}

TEST(ConfigParse, KeyOutsideAnySectionIsUnknown) {
  TempIni ini("lr = 1e-4\n");
  const std::string message = config_error_of({"--config", ini.path()});
  EXPECT_NE(message.find(ini.path() + ":1: unknown key 'lr'"), std::string::npos) << message;
}

TEST(ConfigParse, BooleanFlagsAndHelpRequest) {
  EXPECT_TRUE(parse({"--help"}).help);
}

TEST(ConfigParse, SubcommandOptionsAreParsedAlongside) {
  po::options_description own("own");
  own.add_options()("dry-run", "stop early");
  const auto parsed = parse_config_arguments({"--dry-run", "--optim.lr=1e-3"}, own);
  EXPECT_EQ(parsed.command_values.count("dry-run"), 1u);
  EXPECT_DOUBLE_EQ(parsed.config.optim.lr, 1e-3);
}

TEST(ConfigHelp, GroupsBySectionWithDefaults) {
  const std::string help = config_help("usage: test", po::options_description("own"));
  for (const char* section : {"[model]", "[data]", "[train]", "[optim]", "[dist]"}) {
    EXPECT_NE(help.find(section), std::string::npos) << section;
  }
  EXPECT_NE(help.find("--optim.lr arg (=1e-05)"), std::string::npos) << help;
  EXPECT_NE(help.find("--dist.timeout_s arg (=1800)"), std::string::npos) << help;
  EXPECT_NE(help.find("[s]"), std::string::npos);  // units are shown
  EXPECT_NE(help.find("constant|linear|cosine|cosine_with_min_lr"), std::string::npos) << help;
}

TEST(ResolvedConfig, RoundTripsThroughTheParser) {
  TempIni ini("[optim]\nlr = 3e-4\nschedule = linear\n[model]\npath = /models/llama\n");
  const auto first = parse({"--config", ini.path(), "--train.seed=7", "--dist.timeout_s=12.5"});
  const std::string text = format_resolved_config(first.config);
  EXPECT_NE(text.find("lr = 0.0003"), std::string::npos) << text;
  EXPECT_NE(text.find("seed = 7"), std::string::npos) << text;
  EXPECT_NE(text.find("timeout_s = 12.5"), std::string::npos) << text;
  TempIni resolved(text);
  const auto second = parse({"--config", resolved.path()});
  EXPECT_EQ(format_resolved_config(second.config), text);
  EXPECT_EQ(second.config.model.path, "/models/llama");
  EXPECT_EQ(second.config.data.train, "");
}

TEST(ResolvedConfig, WriteIsAtomicAndCreatesTheRunDirectory) {
  char directory[] = "/tmp/st_run_XXXXXX";
  ASSERT_NE(mkdtemp(directory), nullptr);
  const std::string path = std::string(directory) + "/nested/config.resolved.ini";
  TrainConfig config;
  config.optim.lr = 5e-5;
  const ConfigOrigins origins = {{"optim.lr", "run.ini:3"}};
  write_resolved_config(config, origins, path);
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, format_resolved_config(config, origins));
  EXPECT_NE(text.find("lr = 5e-05  # run.ini:3: peak learning rate\n"), std::string::npos) << text;
  EXPECT_NE(text.find("beta1 = 0.9  # default: "), std::string::npos) << text;
  std::ifstream leftover(path + ".tmp");
  EXPECT_FALSE(leftover.good());
}

TEST(ResolvedConfig, UnwritableDirectoryIsAClearError) {
  TrainConfig config;
  try {
    write_resolved_config(config, {}, "/proc/st_forbidden/config.resolved.ini");
    FAIL() << "expected IoError";
  } catch (const IoError& error) {
    EXPECT_NE(std::string(error.what()).find("train.output_dir"), std::string::npos)
        << error.what();
  }
}

// A key's rule is declared once, beside its help: --help shows the unit and range, and the
// checks read the same rule.
TEST(KeyRule, UnitRangeAndWordsReachHelpAndChecks) {
  struct Section {
    double rate = -1.0;
    int64_t tokens = 0;
    double share = 1.0;
    std::string mode = "x";
  } values;
  ConfigSchema schema;
  schema.section("t", "test");
  schema.add(&values.rate, "rate", "a rate", above(0));
  schema.add(&values.tokens, "tokens", "a count", at_least(1).unit("tokens"));
  schema.add(&values.share, "share", "a share", within(0, 1, true));
  schema.add(&values.mode, "mode", "a mode", any_value().choices({"a", "b"}));
  std::ostringstream help;
  help << schema.all_options();
  EXPECT_NE(help.str().find("a count [tokens]; >= 1"), std::string::npos) << help.str();
  EXPECT_NE(help.str().find("a share; in [0, 1)"), std::string::npos) << help.str();
  const std::vector<std::string> lines = schema.rule_violations({});
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0], "t.rate = -1 (default) must be > 0");
  EXPECT_EQ(lines[1], "t.tokens = 0 (default) must be >= 1 [tokens]");
  EXPECT_EQ(lines[2], "t.share = 1 (default) must be in [0, 1)");
  EXPECT_EQ(lines[3], "t.mode = x (default) is not one of a|b");
  values = {0.5, 1, 0.0, "b"};
  EXPECT_TRUE(schema.rule_violations({}).empty());
}

// Every numeric train key with a bound says so in --help, and every range in the help text is a
// declared rule (so no help text restates a range the checks do not enforce).
TEST(KeyRule, TrainKeysDeclareTheirRangesOnce) {
  TrainConfig config;
  ConfigSchema schema;
  bind_train_config(schema, config);
  int ranged = 0;
  for (const ConfigField& field : schema.fields()) {
    ranged += field.rule.has_range();
    EXPECT_EQ(field.help.find("[0, 1)"), std::string::npos) << field.name() << ": a range in the help text";
    EXPECT_EQ(field.help.find(", >= "), std::string::npos) << field.name() << ": a range in the help text";
    EXPECT_EQ(field.help.find(", > 0"), std::string::npos) << field.name() << ": a range in the help text";
  }
  EXPECT_GE(ranged, 30);
  EXPECT_TRUE(schema.rule_violations({}).empty()) << "a default outside its own range";
}

}  // namespace
}  // namespace st
