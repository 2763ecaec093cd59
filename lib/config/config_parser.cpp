// Boost.Program_options does the parsing and typing; this file orders the sources and turns
// Boost's errors into ConfigErrors that point at the exact key and file:line.
#include "config/config_parser.h"

#include <boost/program_options/errors.hpp>
#include <boost/program_options/parsers.hpp>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "config/config_schema.h"
#include "config/ini_locator.h"
#include "util/errors.h"

namespace st {
namespace {

// Boost reports command-line names as typed ("--optim.lrr=3"); keep only the key.
std::string strip_dashes(std::string name) {
  while (!name.empty() && name.front() == '-') name.erase(name.begin());
  return name.substr(0, name.find('='));
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1] ? 1 : 0)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// " Did you mean optim.lr?" when some key is close, else a pointer to --help.
std::string suggestion(const std::string& unknown, const ConfigSchema& schema,
                       const std::string& prefix) {
  // "optim.learning_rate" or "learning_rate": another tool's name for a key.
  const std::string alias = schema.alias_of(unknown.substr(unknown.rfind('.') + 1));
  if (!alias.empty()) return " " + alias + ".";
  std::vector<std::string> names;
  for (const auto& field : schema.fields()) names.push_back(field.name());
  const std::string near = did_you_mean(unknown, names, prefix);
  return near.empty() ? " Run with --help for the list of options." : near;
}

std::string expected_value(const std::string& name, const ConfigSchema& schema) {
  const ConfigField* field = schema.find(name);
  if (!field) return "";
  std::string expected = "text";
  switch (field->type) {
    case ValueType::integer: expected = "an integer"; break;
    case ValueType::number: expected = "a number"; break;
    case ValueType::boolean: expected = "true or false"; break;
    case ValueType::text: break;
  }
  return " Expected " + expected + " (" + field->help + ").";
}

ConfigError command_line_error(const po::error& error, const ConfigSchema& schema) {
  if (const auto* unknown = dynamic_cast<const po::unknown_option*>(&error)) {
    const std::string name = strip_dashes(unknown->get_option_name());
    return ConfigError("command line: unknown option --" + name + "." +
                       suggestion(name, schema, "--"));
  }
  if (const auto* invalid = dynamic_cast<const po::validation_error*>(&error)) {
    const std::string name = strip_dashes(invalid->get_option_name());
    return ConfigError("command line: " + std::string(error.what()) + "." +
                       expected_value(name, schema));
  }
  return ConfigError("command line: " + std::string(error.what()) + ".");
}

ConfigError config_file_error(const po::error& error, const std::string& path,
                              const ConfigSchema& schema) {
  auto where = [&](const std::string& name) {
    const auto location = locate_ini_key(path, name);
    return path + (location ? ":" + std::to_string(location->line) : std::string()) + ": ";
  };
  if (const auto* unknown = dynamic_cast<const po::unknown_option*>(&error)) {
    const std::string name = strip_dashes(unknown->get_option_name());
    return ConfigError(where(name) + "unknown key '" + name + "'." + suggestion(name, schema, ""));
  }
  if (const auto* repeated = dynamic_cast<const po::multiple_occurrences*>(&error)) {
    const std::string name = strip_dashes(repeated->get_option_name());
    // A key whose one value lists several items (datasets of a mixture) is not repeated.
    const ConfigField* field = schema.find(name);
    const bool listed = field != nullptr && !field->rule.list_items.empty();
    return ConfigError(where(name) + name + " is set more than once; keep one assignment" +
                       (listed ? " and list the " + field->rule.list_items + " in it: " + name + " = " +
                                     field->rule.list_example + "."
                               : "."));
  }
  if (const auto* invalid = dynamic_cast<const po::validation_error*>(&error)) {
    const std::string name = strip_dashes(invalid->get_option_name());
    const auto location = locate_ini_key(path, name);
    const std::string value = location ? location->raw_value : "?";
    return ConfigError(where(name) + name + " = '" + value + "' is not valid." +
                       expected_value(name, schema));
  }
  if (const auto* syntax = dynamic_cast<const po::invalid_config_file_syntax*>(&error)) {
    const auto line = locate_ini_line(path, syntax->tokens());
    return ConfigError(path + (line ? ":" + std::to_string(*line) : std::string()) +
                       ": cannot parse '" + syntax->tokens() +
                       "'; expected 'key = value', '[section]' or a '# comment'.");
  }
  return ConfigError(path + ": " + error.what());
}

po::options_description general_options(std::string* config_file) {
  po::options_description general("General", 110, 55);
  general.add_options()
      ("config", po::value<std::string>(config_file),
       "the config: shardtune's INI ([section] headers, key = value lines), or where the usage says so a "
       "LlamaFactory YAML or a TRL config; --section.key=value (and the tool's own --key value) overrides it")
      ("help", "print this help and exit");
  return general;
}

// A translated setting's value the key cannot hold, named by where it was written; any other
// error as the command line's.
ConfigError setting_error(const po::error& error, const std::vector<ConfigSetting>& settings,
                          const ConfigSchema& schema) {
  if (const auto* invalid = dynamic_cast<const po::validation_error*>(&error)) {
    const std::string name = strip_dashes(invalid->get_option_name());
    for (const ConfigSetting& setting : settings) {
      if (setting.name == name) {
        return ConfigError(setting.origin + ": '" + setting.value + "' is not valid for " + name + "." +
                           expected_value(name, schema));
      }
    }
  }
  return command_line_error(error, schema);
}

}  // namespace

std::string did_you_mean(const std::string& unknown, const std::vector<std::string>& names, const std::string& prefix) {
  const std::string* best = nullptr;
  for (const std::string& name : names) {  // a prefix of one name ("--out"): that name, the shortest
    if (!unknown.empty() && name.rfind(unknown, 0) == 0 && (!best || name.size() < best->size())) best = &name;
  }
  if (best) return " Did you mean " + prefix + *best + "?";
  size_t best_distance = 4;
  for (const std::string& name : names) {
    const size_t distance = edit_distance(unknown, name);
    if (distance < best_distance) {
      best_distance = distance;
      best = &name;
    }
  }
  return best ? " Did you mean " + prefix + *best + "?" : "";
}

ParsedArguments parse_arguments(const std::vector<std::string>& args, const po::options_description& command_options,
                                ConfigSchema& schema, const std::vector<ConfigSetting>& settings) {
  ParsedArguments result;
  po::options_description command_line;
  command_line.add(general_options(&result.config_file)).add(command_options);
  command_line.add(schema.all_options());

  po::variables_map values;
  try {
    // No prefix guessing: "--optim.l" must not silently mean --optim.lr.
    const auto style = po::command_line_style::default_style &
                       ~po::command_line_style::allow_guessing;
    const po::parsed_options parsed =
        po::command_line_parser(args).options(command_line).style(style).run();
    po::store(parsed, values);
    for (const auto& option : parsed.options) {
      if (schema.find(option.string_key)) result.origins[option.string_key] = "command line";
    }
  } catch (const po::error& error) {
    throw command_line_error(error, schema);
  }
  result.help = values.count("help") > 0;
  if (result.help) return result;

  if (!settings.empty()) {
    const po::options_description setting_options = schema.all_options();
    po::parsed_options parsed(&setting_options);
    for (const ConfigSetting& setting : settings) {
      if (result.origins.count(setting.name)) continue;  // the command line won
      po::option option(setting.name, {setting.value});
      option.original_tokens = {setting.name, setting.value};
      parsed.options.push_back(option);
      result.origins[setting.name] = setting.origin;
    }
    try {
      po::store(parsed, values);
    } catch (const po::error& error) {
      throw setting_error(error, settings, schema);
    }
  }

  if (values.count("config")) {
    const std::string path = values["config"].as<std::string>();
    std::ifstream file(path);
    if (!file) {
      throw ConfigError(path + ": cannot open config file (" + std::strerror(errno) +
                        "). Check the --config path.");
    }
    // parsed_options keeps a pointer to its description: it must outlive store().
    const po::options_description file_options = schema.all_options();
    try {
      const po::parsed_options parsed = po::parse_config_file(file, file_options, false);
      po::store(parsed, values);
      for (const auto& option : parsed.options) {
        if (result.origins.count(option.string_key)) continue;  // the command line won
        const auto location = locate_ini_key(path, option.string_key);
        result.origins[option.string_key] =
            path + (location ? ":" + std::to_string(location->line) : std::string());
      }
    } catch (const po::error& error) {
      throw config_file_error(error, path, schema);
    }
  }
  try {
    po::notify(values);
  } catch (const po::error& error) {
    throw setting_error(error, settings, schema);
  }
  schema.apply_enum_words(result.origins);
  result.command_values = std::move(values);
  return result;
}

std::string arguments_help(const std::string& usage, const po::options_description& command_options,
                           const ConfigSchema& schema) {
  std::string unused;
  std::ostringstream out;
  out << usage << "\n\n" << general_options(&unused) << "\n";
  if (!command_options.options().empty()) out << command_options << "\n";
  out << "Config keys (shardtune's own): in an INI under [section] as 'key = value', in a YAML as\n"
         "'section.key: value', or on the command line as --section.key=value. Defaults shown as (=value).\n\n";
  for (const auto& section : schema.sections()) out << section << "\n";
  return out.str();
}

std::string format_config_file(const ConfigSchema& schema, const std::string& header, const ConfigOrigins* origins) {
  std::string text = header;
  std::string section;
  for (const auto& field : schema.fields()) {
    if (field.section != section) {
      section = field.section;
      text += "\n[" + section + "]\n";
    }
    std::string comment = field.help;
    if (origins) {
      const auto origin = origins->find(field.name());
      comment = (origin == origins->end() ? std::string("default") : origin->second) + ": " + comment;
    }
    text += field.key + " = " + field.current_value() + "  # " + comment + "\n";
  }
  return text;
}

}  // namespace st
