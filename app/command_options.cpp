#include "command_options.h"

#include <iostream>

#include "util/errors.h"

namespace st {

bool parse_command_options(const std::string& command, const std::vector<std::string>& args,
                           const boost::program_options::options_description& options, int rank) {
  namespace po = boost::program_options;
  po::variables_map values;
  try {
    po::store(po::command_line_parser(args).options(options).run(), values);
    po::notify(values);
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
