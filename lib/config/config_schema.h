// Every config key in one table: section, name, help with units, allowed values, and a binding
// into a TrainConfig. The parser, --help and the resolved-config writer all read this table, so
// a new option is one line in config_schema.cpp.
#pragma once

#include <boost/program_options/options_description.hpp>
#include <functional>
#include <string>
#include <vector>

#include "config/train_config.h"

namespace st {

namespace po = boost::program_options;

struct ConfigField {
  std::string section;               // "optim"
  std::string key;                   // "lr"
  std::string help;                  // one line, with units
  std::string type_name;             // "number", "integer", "text", "true|false"
  std::vector<std::string> choices;  // allowed values of an enumeration; empty = any
  std::function<std::string()> current_value;  // the bound config's value, as written in INI
  std::string name() const { return section + "." + key; }
};

class ConfigSchema {
 public:
  // Binds every option to a field of `config`; po::notify() writes parsed values there.
  explicit ConfigSchema(TrainConfig& config);

  const std::vector<ConfigField>& fields() const { return fields_; }
  const ConfigField* find(const std::string& name) const;
  // One description per section, in display order, for grouped --help.
  const std::vector<po::options_description>& sections() const { return sections_; }
  po::options_description all_options() const;

 private:
  // Starts a section; add() appends options to the newest one.
  void section(const std::string& name, const std::string& title);
  template <typename T>
  void add(T* field, const char* key, const char* help, std::vector<std::string> choices = {});

  std::vector<po::options_description> sections_;
  std::vector<std::string> section_names_;
  std::vector<ConfigField> fields_;
};

// Shortest text that parses back to the same value ("1e-05", "0.9", "42", "true").
std::string format_config_value(double value);
std::string format_config_value(int64_t value);
std::string format_config_value(uint64_t value);
std::string format_config_value(bool value);
std::string format_config_value(const std::string& value);

}  // namespace st
