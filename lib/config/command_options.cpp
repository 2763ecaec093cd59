#include "config/command_options.h"

#include <iostream>

#include "config/config_parser.h"
#include "util/errors.h"

namespace st {
namespace {

// "--out" names no option: the nearest one, if any is near.
std::string unknown_option_hint(const boost::program_options::unknown_option& error,
                                const boost::program_options::options_description& options) {
  std::string name = error.get_option_name();
  while (!name.empty() && name.front() == '-') name.erase(name.begin());
  name = name.substr(0, name.find('='));
  std::vector<std::string> names;
  for (const auto& option : options.options()) names.push_back(option->long_name());
  return did_you_mean(name, names, "--");
}

}  // namespace

bool parse_command_options(const std::string& command, const std::vector<std::string>& args,
                           const boost::program_options::options_description& options, int rank) {
  namespace po = boost::program_options;
  po::variables_map values;
  try {
    // No prefix guessing: "--out" must not silently mean --output.
    const auto style = po::command_line_style::default_style & ~po::command_line_style::allow_guessing;
    po::store(po::command_line_parser(args).options(options).style(style).run(), values);
    po::notify(values);
  } catch (const po::unknown_option& error) {
    throw ConfigError(command + ": " + error.what() + "." + unknown_option_hint(error, options) + " (see shardtune " +
                      command + " --help)");
  } catch (const po::error& error) {
    throw ConfigError(command + ": " + error.what() + " (see shardtune " + command + " --help)");
  }
  if (values.count("help")) {
    if (rank == 0) std::cout << options;
    return false;
  }
  return true;
}

}  // namespace st
