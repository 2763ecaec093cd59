#include "prep/dataset_info.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>

#include "util/errors.h"

namespace st {
namespace {

using nlohmann::json;

// LlamaFactory column names -> the schema's fields (alpaca's prompt/query/response are our
// instruction/input/output).
std::map<std::string, std::string RecordSchema::*> column_fields() {
  return {{"prompt", &RecordSchema::instruction}, {"query", &RecordSchema::input},
          {"response", &RecordSchema::output},    {"history", &RecordSchema::history},
          {"system", &RecordSchema::system},      {"chosen", &RecordSchema::chosen},
          {"rejected", &RecordSchema::rejected},  {"messages", &RecordSchema::conversations},
          {"kto_tag", &RecordSchema::label}};
}

std::map<std::string, std::string RecordSchema::*> tag_fields() {
  return {{"role_tag", &RecordSchema::role_tag},         {"content_tag", &RecordSchema::content_tag},
          {"user_tag", &RecordSchema::user_tag},         {"assistant_tag", &RecordSchema::assistant_tag},
          {"system_tag", &RecordSchema::system_tag},     {"observation_tag", &RecordSchema::observation_tag},
          {"function_tag", &RecordSchema::function_tag}};
}

// DIR/dataset_info.json, its entries in file order.
nlohmann::ordered_json read_index(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError(path + ": cannot open (--dataset-info names the directory that holds it)");
  nlohmann::ordered_json info;
  try {
    info = nlohmann::ordered_json::parse(in);
  } catch (const json::exception& e) {
    throw ConfigError(path + ": not valid JSON (" + e.what() + ")");
  }
  if (!info.is_object()) throw ConfigError(path + ": not a JSON object of dataset entries");
  return info;
}

// One entry as prep would read it; throws ConfigError naming `where` and the field.
DatasetInfoEntry read_entry(const std::string& directory, const nlohmann::ordered_json& entry,
                            const std::string& where) {
  auto field = [&](const std::string& key) { return where + " field '" + key + "'"; };
  if (!entry.is_object()) throw ConfigError(where + " is not an object");
  if (!entry.contains("file_name") || !entry["file_name"].is_string()) {
    throw ConfigError(field("file_name") + " is missing: shardtune reads local files only (hf_hub_url, ms_hub_url "
                      "and script_url entries need the data downloaded and named by file_name)");
  }
  DatasetInfoEntry out;
  out.file = (std::filesystem::path(directory) / entry["file_name"].get<std::string>()).string();
  std::error_code unreadable;  // a name too long for the file system is not a file either
  if (!std::filesystem::is_regular_file(out.file, unreadable)) {
    throw ConfigError(field("file_name") + ": " + out.file + " is not a file (directories of files are not read; "
                      "concatenate them into one JSON or JSONL file)");
  }
  if (entry.contains("formatting") && !entry["formatting"].is_string()) {
    throw ConfigError(field("formatting") + " is " + entry["formatting"].dump() + ", not a string (alpaca or sharegpt)");
  }
  if (entry.contains("ranking") && !entry["ranking"].is_boolean()) {
    throw ConfigError(field("ranking") + " is " + entry["ranking"].dump() + ", not true or false");
  }
  const std::string formatting = entry.value("formatting", std::string("alpaca"));
  const bool known = find_enum(formatting, out.format);
  if (!known || (out.format != RecordFormat::alpaca && out.format != RecordFormat::sharegpt)) {
    throw ConfigError(field("formatting") + " is '" + formatting + "'; expected alpaca or sharegpt");
  }
  out.kind = entry.value("ranking", false) ? PairKind::dpo : PairKind::sft;
  const bool labelled = entry.contains("columns") && entry["columns"].is_object() && entry["columns"].contains("kto_tag") &&
                        !entry["columns"]["kto_tag"].is_null();
  if (labelled) out.kind = labelled_kind();  // LlamaFactory's KTO datasets: a kto_tag column
  for (const auto& [section, fields] : {std::pair{"columns", column_fields()}, std::pair{"tags", tag_fields()}}) {
    if (!entry.contains(section)) continue;
    if (!entry[section].is_object()) throw ConfigError(field(section) + " is not an object");
    for (const auto& [key, value] : entry[section].items()) {
      if (value.is_null()) continue;
      const auto known = fields.find(key);
      if (known == fields.end()) {
        throw ConfigError(field(std::string(section) + "." + key) + " is not supported (images, videos, audios "
                          "and tools are not; remove it to train on the text alone)");
      }
      if (!value.is_string()) throw ConfigError(field(std::string(section) + "." + key) + " is not a string");
      out.schema.*(known->second) = value.get<std::string>();
    }
  }
  return out;
}

}  // namespace

DatasetInfoEntry read_dataset_info(const std::string& directory, const std::string& name, PairKind kind) {
  const std::string path = directory + "/dataset_info.json";
  const nlohmann::ordered_json info = read_index(path);
  const std::string where = path + ": dataset '" + name + "'";
  if (!info.contains(name)) {
    std::string names;
    for (const auto& [key, value] : info.items()) names += (names.empty() ? "" : ", ") + key;
    throw ConfigError(where + " is not there; it has: " + (names.empty() ? "nothing" : names));
  }
  const DatasetInfoEntry entry = read_entry(directory, info[name], where);
  if (entry.kind != kind) {
    const std::string what =
        entry.kind == PairKind::dpo         ? " is a ranking (preference) dataset"
        : schema_of(entry.kind).labelled ? std::string(" is a ") + enum_name(entry.kind) + " dataset (a kto_tag column)"
                                          : " is neither a ranking dataset (\"ranking\": true) nor a labelled one (a "
                                            "kto_tag column)";
    throw ConfigError(where + what + "; prep it with --kind " + enum_name(entry.kind));
  }
  return entry;
}

std::vector<DatasetInfoListing> list_dataset_info(const std::string& directory) {
  const std::string path = directory + "/dataset_info.json";
  std::vector<DatasetInfoListing> listing;
  const nlohmann::ordered_json info = read_index(path);  // items() must not outlive it
  for (const auto& [name, entry] : info.items()) {
    DatasetInfoListing item{name, std::nullopt, ""};
    try {
      item.entry = read_entry(directory, entry, "dataset '" + name + "'");
    } catch (const ConfigError& e) {
      item.refusal = e.what();
    }
    listing.push_back(std::move(item));
  }
  return listing;
}

}  // namespace st
