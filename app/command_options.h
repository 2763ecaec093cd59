// Parsing a subcommand's own options (score, prep, synth, env): Boost errors become a
// ConfigError naming the command; --help prints the options on rank 0.
#pragma once

#include <boost/program_options.hpp>

#include <string>
#include <vector>

namespace st {

// Returns false when --help was given (the caller exits 0).
bool parse_command_options(const std::string& command, const std::vector<std::string>& args,
                           const boost::program_options::options_description& options, int rank);

}  // namespace st
