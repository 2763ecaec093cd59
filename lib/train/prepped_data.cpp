#include "train/prepped_data.h"

#include <zlib.h>

#include <filesystem>
#include <memory>

#include "data/dataset_mixture.h"
#include "data/manifest.h"
#include "prep/dataset_info.h"
#include "prep/example_text.h"
#include "prep/prep.h"
#include "prep/prep_tokenizer.h"
#include "train/objective.h"
#include "util/errors.h"
#include "util/file_io.h"

namespace st {
namespace {

namespace fs = std::filesystem;

std::string tokenizer_directory(const TrainConfig& config) {
  return config.prep.tokenizer.empty() ? config.model.path : config.prep.tokenizer;
}

// An entry of prep.dataset as prep reads it: a dataset_info.json entry, or (without
// prep.dataset_dir) a JSON / JSONL file whose record shape prep detects (TRL's dataset_name).
DatasetInfoEntry source_of(const TrainConfig& config, const std::string& entry) {
  const PairKind kind = objective_for(config.train.stage).example_kind();
  if (!config.prep.dataset_dir.empty()) return read_dataset_info(config.prep.dataset_dir, entry, kind);
  if (!fs::is_regular_file(entry)) {
    throw ConfigError("prep.dataset = " + entry + ": no such file; name a JSON or JSONL file, or entries of a "
                      "dataset_info.json with prep.dataset_dir");
  }
  DatasetInfoEntry file;
  file.file = entry;
  file.kind = kind;
  return file;
}

// The directory name of an entry: a file's name without its extension.
std::string entry_name(const std::string& entry) { return fs::path(entry).stem().string(); }

// What an entry's pairs depend on, as text: the files' CRCs and every key prep reads.
std::string content_description(const TrainConfig& config, const std::string& entry, const DatasetInfoEntry& info) {
  const PairKind kind = objective_for(config.train.stage).example_kind();
  std::string text = "entry=" + entry + "\nkind=" + enum_name(kind) + "\ninput=" + crc32_hex(file_crc32(info.file));
  if (!config.prep.dataset_dir.empty()) {
    text += "\nindex=" + crc32_hex(file_crc32(config.prep.dataset_dir + "/dataset_info.json"));
  }
  const std::string tokenizer = tokenizer_directory(config);
  for (const char* name : {"tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "tokenizer.model"}) {
    const fs::path file = fs::path(tokenizer) / name;
    if (fs::exists(file)) text += std::string("\n") + name + "=" + crc32_hex(file_crc32(file.string()));
  }
  text += "\ntemplate=" + format_config_value(config.prep.chat_template) +
          "\ntemplate_kwargs=" + config.prep.template_kwargs + "\ncutoff_len=" + std::to_string(config.data.cutoff_len) +
          "\nmax_samples=" + std::to_string(config.prep.max_samples) + "\ntrain_on=" + enum_name(config.prep.train_on);
  return text;
}

// The entries of prep.dataset; weights where the user gave them ("a:0.3, b:0.7"), else none.
std::vector<MixtureEntry> entries_of(const TrainConfig& config, bool& weighted) {
  weighted = config.prep.dataset.find(':') != std::string::npos;
  return parse_mixture(config.prep.dataset, "prep.dataset");
}

// The directory an entry is prepped into: its name and a hash of everything the pairs depend on.
std::string prepped_entry_directory(const TrainConfig& config, const std::string& entry, const DatasetInfoEntry& info) {
  const std::string description = content_description(config, entry, info);
  const uLong crc = crc32(0L, reinterpret_cast<const Bytef*>(description.data()), static_cast<uInt>(description.size()));
  return config.train.output_dir + "/data/" + entry_name(entry) + "-" + crc32_hex(static_cast<uint32_t>(crc));
}

}  // namespace

std::vector<std::string> prep_config_data(TrainConfig& config, MpiCommunicator& comm) {
  std::vector<std::string> lines;
  if (!config.prep.wanted()) return lines;
  if (!config.data.train.empty()) {
    throw ConfigError("data.train and prep.dataset are both set: keep data.train (data made by `shardtune prep`) "
                      "or prep.dataset (data train preps itself), not both");
  }
  if (tokenizer_directory(config).empty()) {
    throw ConfigError("prep.dataset needs a tokenizer: set model.path (a model directory with tokenizer.json) or "
                      "prep.tokenizer");
  }
  bool weighted = false;
  const std::vector<MixtureEntry> entries = entries_of(config, weighted);
  std::string train;
  for (const MixtureEntry& entry : entries) {
    const DatasetInfoEntry info = source_of(config, entry.directory);  // read once: hashed, then prepped
    const std::string directory = prepped_entry_directory(config, entry.directory, info);
    uint64_t pairs = 0;
    if (fs::exists(directory + "/train/manifest.json")) {
      lines.push_back("prep: " + entry_name(entry.directory) + ": reusing " + directory + " (same files and keys)");
    } else {
      PrepOptions options;
      options.kind = objective_for(config.train.stage).example_kind();
      options.input = info.file;
      if (!config.prep.dataset_dir.empty()) {
        options.format = info.format;
        options.schema = info.schema;
      }
      options.output = directory;
      options.cutoff_len = config.data.cutoff_len;
      options.train_on = config.prep.train_on;
      options.max_records = static_cast<uint64_t>(config.prep.max_samples);
      options.overwrite = true;  // a prep cut short leaves only <directory>.tmp, which prep replaces
      JinjaOptions jinja;
      jinja.kwargs_json = config.prep.template_kwargs;
      const std::unique_ptr<PrepTokenizer> tokenizer =
          attach_tokenizer(options, tokenizer_directory(config), config.prep.chat_template, jinja, "train",
                           "prep.template");
      const PrepReport report = run_prep(options, comm);
      pairs = report.train_pairs;
      uint64_t malformed = 0;
      for (const auto& [reason, count] : report.malformed) malformed += count;
      lines.push_back("prep: " + entry_name(entry.directory) + ": " + std::to_string(report.lines) + " records -> " +
                      std::to_string(report.train_pairs) + " pairs in " + directory + " (template " +
                      (tokenizer->auto_choice.empty() ? options.info.chat_template : "auto: " + tokenizer->auto_choice) +
                      "; " + std::to_string(report.truncated) + " truncated to " + std::to_string(options.cutoff_len) +
                      " tokens, " + std::to_string(malformed) + " malformed skipped)");
      for (const std::string& example : report.examples) lines.push_back("  skipped " + example);
      if (report.first) {
        lines.push_back("prep: " + entry_name(entry.directory) +
                        ": the first example as the model sees it (loss on the tokens in [[ ]]):");
        for (const std::string& line : example_lines(*report.first, options.kind, tokenizer->tokenizer)) {
          lines.push_back("  " + line);
        }
      }
    }
    if (pairs == 0) pairs = read_manifest(directory + "/train").total_pairs();
    const double weight = weighted ? entry.weight : static_cast<double>(pairs);
    train += (train.empty() ? "" : ", ") + directory + "/train" +
             (entries.size() > 1 ? ":" + format_config_value(weight) : "");
  }
  config.data.train = train;
  return lines;
}

}  // namespace st
