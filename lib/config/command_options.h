// Parsing a subcommand's own options (score, prep, synth, env): Boost errors become a
// ConfigError naming the command; --help prints the options on rank 0.
#pragma once

#include <boost/program_options.hpp>

#include <optional>
#include <string>
#include <vector>

#include "util/enum_names.h"
#include "util/errors.h"

namespace st {

// --dtype of the inference commands (score, generate): the compute dtype.
enum class InferenceDtype { fp32, bf16 };
template <>
struct EnumNames<InferenceDtype> {
  static constexpr NamedValue<InferenceDtype> table[] = {{InferenceDtype::fp32, "fp32"}, {InferenceDtype::bf16, "bf16"}};
};

// A flag whose value is a word of Enum's name table, written into `*field` (its current value
// is the default). A word outside the table throws ConfigError naming `command`, the flag and
// the allowed words.
template <typename Enum>
boost::program_options::typed_value<std::string>* enum_flag(Enum* field, const std::string& command,
                                                            const std::string& flag) {
  return boost::program_options::value<std::string>()
      ->default_value(enum_name(*field))
      ->notifier([field, command, flag](const std::string& word) {
        if (!find_enum(word, *field)) {
          throw ConfigError(command + ": --" + flag + " '" + word + "' is not one of " + enum_choices<Enum>());
        }
      });
}

// Returns false when --help was given (the caller exits 0).
bool parse_command_options(const std::string& command, const std::vector<std::string>& args,
                           const boost::program_options::options_description& options, int rank);

// As enum_flag, for an optional choice: `automatic` (e.g. "auto") leaves `*field` empty.
template <typename Enum>
boost::program_options::typed_value<std::string>* optional_enum_flag(std::optional<Enum>* field, const std::string& command,
                                                                     const std::string& flag, const std::string& automatic) {
  return boost::program_options::value<std::string>()
      ->default_value(automatic)
      ->notifier([field, command, flag, automatic](const std::string& word) {
        Enum value{};
        if (word == automatic) {
          field->reset();
        } else if (find_enum(word, value)) {
          *field = value;
        } else {
          throw ConfigError(command + ": --" + flag + " '" + word + "' is not one of " + enum_choices<Enum>() + "|" +
                            automatic);
        }
      });
}

}  // namespace st
