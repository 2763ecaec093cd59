#include "train/foreign_arguments.h"

#include <algorithm>
#include <optional>

#include <nlohmann/json.hpp>

#include "config/yaml_file.h"
#include "train/foreign_config.h"
#include "util/errors.h"
#include "util/text.h"

namespace st {
namespace {


// The subcommand's own option names (dry-run, world, ...) and the general ones.
std::vector<std::string> own_option_names(const po::options_description& command_options) {
  std::vector<std::string> names = {"config", "help"};
  for (const auto& option : command_options.options()) names.push_back(option->long_name());
  return names;
}

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::vector<std::string> schema_names(const ConfigSchema& schema) {
  std::vector<std::string> names;
  for (const auto& field : schema.fields()) names.push_back(field.name());
  return names;
}

// Whether `--name` (written without =) takes the token after it as its value: the config, a
// subcommand option with a value (not a switch such as --dry-run), a shardtune key, another
// tool's key (a bare one is a boolean, as Hugging Face's parser reads it, when a YAML follows).
bool takes_value(const std::string& name, const std::string& next, const po::options_description& command_options) {
  if (name == "config") return true;
  if (const po::option_description* own = command_options.find_nothrow(name, false)) {
    return own->semantic()->max_tokens() > 0;
  }
  if (name == "help") return false;
  return name.find('.') != std::string::npos || !is_yaml_path(next);
}

// Which tokens are the value of the option before them, so that switches, the YAML and the
// trainer word may come in any order.
std::vector<bool> option_values(const std::vector<std::string>& args, const po::options_description& command_options) {
  std::vector<bool> value(args.size(), false);
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    const std::string& arg = args[i];
    if (!starts_with(arg, "--") || arg.find('=') != std::string::npos || value[i] || starts_with(args[i + 1], "--")) {
      continue;
    }
    value[i + 1] = takes_value(arg.substr(2), args[i + 1], command_options);
  }
  return value;
}

// The TRL trainer word (`train dpo ...`, as `trl dpo ...`): the first word that is no option's
// value, when it names a trainer.
std::optional<TrlTrainer> trainer_word(const std::vector<std::string>& args, const std::vector<bool>& value,
                                       size_t& at) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (starts_with(args[i], "--") || value[i]) continue;
    TrlTrainer trainer{};
    if (!find_enum(args[i], trainer)) return std::nullopt;
    at = i;
    return trainer;
  }
  return std::nullopt;
}

// A mapping given as JSON on the command line, as Hugging Face's parser takes dict arguments: one
// setting per leaf, named key.child, as a YAML mapping gives them.
void add_json_mapping(const std::string& key, const std::string& text, std::vector<ForeignSetting>& out) {
  nlohmann::json mapping;
  try {
    mapping = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& error) {
    throw ConfigError("command line: --" + key + " " + text + ": not a JSON mapping (" + error.what() + ")");
  }
  for (const auto& [child, value] : mapping.items()) {
    const std::string name = key + "." + child;
    if (value.is_object()) {
      add_json_mapping(name, value.dump(), out);
    } else {
      out.push_back({name, value.is_string() ? value.get<std::string>() : value.dump(), "command line", value.is_null()});
    }
  }
}

}  // namespace

ForeignArguments split_foreign_arguments(const std::vector<std::string>& args,
                                         const po::options_description& command_options, const ConfigSchema& schema) {
  ForeignArguments out;
  const std::vector<std::string> own = own_option_names(command_options);
  const std::vector<std::string> natives = schema_names(schema);
  std::vector<ForeignSetting> foreign;
  bool yaml = false, ini = false;
  const std::vector<bool> value = option_values(args, command_options);
  size_t trainer_at = args.size();
  const std::optional<TrlTrainer> trl = trainer_word(args, value, trainer_at);
  auto read_yaml = [&](const std::string& path) {
    if (yaml) throw ConfigError("command line: more than one YAML config; give one (flags after it override its keys)");
    yaml = true;
    for (const YamlSetting& setting : read_yaml_settings(path)) {
      const std::string origin = path + ":" + std::to_string(setting.line);
      if (schema.find(setting.key)) {  // shardtune's own key written in the YAML
        if (!setting.null) out.settings.push_back({setting.key, setting.value, origin});
      } else {
        foreign.push_back({setting.key, setting.value, origin, setting.null});
      }
    }
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (i == trainer_at) continue;
    if (!starts_with(arg, "--")) {
      if (!value[i] && is_yaml_path(arg)) {
        read_yaml(arg);  // `shardtune train run.yaml`, as `llamafactory-cli train run.yaml`
        continue;
      }
      out.native_args.push_back(arg);
      continue;
    }
    const size_t equals = arg.find('=');
    const std::string name = arg.substr(2, equals == std::string::npos ? std::string::npos : equals - 2);
    const bool has_next = i + 1 < args.size() && value[i + 1];
    if (name == "config") {
      const std::string path = equals != std::string::npos ? arg.substr(equals + 1) : has_next ? args[i + 1] : "";
      if (is_yaml_path(path)) {
        read_yaml(path);
        if (equals == std::string::npos) ++i;
        continue;
      }
      ini = true;
    }
    if (name.find('.') != std::string::npos || contains(own, name)) {
      out.native_args.push_back(arg);
      continue;
    }
    if (trl ? !is_trl_key(name) : !is_llamafactory_key(name)) {
      std::vector<std::string> candidates = own;
      candidates.insert(candidates.end(), natives.begin(), natives.end());
      const std::vector<std::string> foreign_keys = trl ? trl_keys() : llamafactory_keys();
      candidates.insert(candidates.end(), foreign_keys.begin(), foreign_keys.end());
      const std::string near = did_you_mean(name, candidates, "--");
      throw ConfigError("command line: unknown option --" + name + "." +
                        (near.empty() ? " Run with --help for the list of options." : near));
    }
    std::string text = "true";  // a bare flag, as Hugging Face's argument parser reads booleans
    if (equals != std::string::npos) {
      text = arg.substr(equals + 1);
    } else if (has_next) {
      text = args[++i];
    }
    if (!text.empty() && text.front() == '{') {  // --gradient_checkpointing_kwargs '{"use_reentrant": false}'
      add_json_mapping(name, text, foreign);
      continue;
    }
    foreign.push_back({name, text, "command line", false});
  }
  if (trl && ini) {
    throw ConfigError("command line: `train " + std::string(enum_name(*trl)) + "` reads TRL's config (a YAML or " +
                      "TRL's flags), not an INI; drop the word to run the INI");
  }
  if (trl) {
    ForeignTranslation translation = translate_trl(*trl, foreign, natives);
    out.settings.insert(out.settings.end(), translation.settings.begin(), translation.settings.end());
    out.notes = std::move(translation.notes);
  } else if (!foreign.empty()) {
    // LlamaFactory's defaults come with its YAML or a command line of its keys, not over an INI.
    ForeignTranslation translation = translate_llamafactory(foreign, yaml || !ini, natives);
    out.settings.insert(out.settings.end(), translation.settings.begin(), translation.settings.end());
    out.notes = std::move(translation.notes);
  }
  if (yaml && ini) throw ConfigError("command line: give one --config, the YAML or the INI");
  return out;
}

}  // namespace st
