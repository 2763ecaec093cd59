// `shardtune prep`: token-id or text JSONL -> HDF5 pair dataset (lib/data/prep.h), on 1 or N
// ranks; text records are tokenized with the model's tokenizer.json and a chat template.
#include <boost/program_options.hpp>
#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>

#include "command_runner.h"
#include "commands.h"
#include "config/command_options.h"
#include "data/pair_shard.h"
#include "distributed/world.h"
#include "exit_codes.h"
#include "prep/dataset_info.h"
#include "prep/example_text.h"
#include "prep/prep.h"
#include "prep/prep_tokenizer.h"
#include "tokenizer/chat_template.h"
#include "util/errors.h"
#include "util/log.h"
#include "util/timer.h"

namespace st {

namespace {

// `prep --dataset-info DIR` alone: each entry, with the kind and shape prep reads it as, or
// why it cannot.
void print_dataset_info(const std::string& directory, int rank) {
  const std::vector<DatasetInfoListing> listing = list_dataset_info(directory);
  size_t readable = 0, width = 0;
  for (const DatasetInfoListing& item : listing) {
    readable += item.entry ? 1 : 0;
    width = std::max(width, item.name.size());
  }
  if (rank != 0) return;
  std::cout << directory << "/dataset_info.json: " << listing.size() << " entries, " << readable
            << " that prep reads (prep --dataset-info DIR --dataset NAME --kind KIND)\n";
  for (const DatasetInfoListing& item : listing) {
    std::cout << "  " << item.name << std::string(width + 2 - item.name.size(), ' ');
    if (item.entry) {
      std::cout << "--kind " << enum_name(item.entry->kind) << ", " << enum_name(item.entry->format) << ", "
                << item.entry->file << "\n";
    } else {
      std::cout << "refused: " << item.refusal << "\n";
    }
  }
}

}  // namespace

int run_prep(std::vector<std::string> args, int& argc, char**& argv) {
  World world(argc, argv);
  return run_guarded([&] {
    namespace po = boost::program_options;
    PrepOptions o;
    std::string tokenizer_path;
    std::optional<TemplateKind> template_kind;  // empty: auto
    JinjaOptions jinja;
    std::string dataset_info, dataset;
    po::options_description options(
        "shardtune prep (--input FILE | --dataset-info DIR --dataset NAME) --output DIR (--vocab N | --tokenizer "
        "MODEL_DIR [--template NAME]) [options]",
        110, 50);
    options.add_options()
        ("help", "print this help and exit")
        ("input", po::value(&o.input),
         "JSONL or a JSON array of records: token ids, or text as messages | trl | sharegpt | alpaca "
         "(docs/data-format.md)")
        ("format", optional_enum_flag(&o.format, "prep", "format", "auto"),
         "record shape: auto (from the file's first record) | ids | messages | trl | sharegpt | alpaca")
        ("dataset-info", po::value(&dataset_info),
         "directory of a LlamaFactory dataset_info.json (with --dataset; alone: lists which entries prep reads)")
        ("dataset", po::value(&dataset), "entry of --dataset-info to read: its file_name, formatting, columns, tags")
        ("train-on", enum_flag(&o.train_on, "prep", "train-on"),
         "sft conversations: all (every assistant turn carries loss) | last (only the final reply)")
        ("output", po::value(&o.output), "dataset directory to create (train/, val/ with manifest.json)")
        ("kind", enum_flag(&o.kind, "prep", "kind"), example_kinds_text().c_str())
        ("vocab", po::value(&o.vocab_size), "vocabulary size; ids must be below it (default with --tokenizer: its size)")
        ("cutoff-len", po::value(&o.cutoff_len)->default_value(1024), "max prompt + response tokens")
        ("truncation", enum_flag(&o.truncation, "prep", "truncation"),
         "truncate (prompt from the left, then responses from the right) | drop")
        ("val-size", po::value(&o.val_size)->default_value(0.0), "fraction held out in val/, [0, 1)")
        ("seed", po::value(&o.seed)->default_value(0), "seed of the validation split")
        ("max-samples", po::value(&o.max_records)->default_value(0),
         "only the input's first records (LlamaFactory max_samples); 0 = all")
        ("pairs-per-shard", po::value(&o.sharding.pairs_per_shard)->default_value(100000), "pairs per HDF5 file")
        ("compress", po::bool_switch(&o.sharding.layout.compress), "deflate-compress the shards")
        ("bos-id", po::value(&o.info.bos_id)->default_value(-1), "recorded in the shards (-1: none)")
        ("eos-id", po::value(&o.info.eos_id)->default_value(-1), "recorded in the shards (-1: none)")
        ("pad-id", po::value(&o.info.pad_id)->default_value(0), "padding id used by collation")
        ("tokenizer", po::value(&tokenizer_path), "model directory with tokenizer.json: tokenizes text records; recorded")
        ("template", optional_enum_flag(&template_kind, "prep", "template", "auto"),
         ("chat template of text records: " + enum_choices<TemplateKind>() +
          " | auto (the model's own: a built-in one where it renders as the model's chat_template, else jinja)")
             .c_str())
        ("template-kwargs", po::value(&jinja.kwargs_json),
         "jinja: extra template variables as a JSON object, e.g. '{\"enable_thinking\": false}'")
        ("template-file", po::value(&jinja.template_file),
         "jinja: render this Jinja chat template file instead of the tokenizer's chat_template")
        ("template-date", po::value(&jinja.date),
         "jinja: the day strftime_now writes, YYYY-MM-DD (default: today; fix it for reproducible data)")
        ("strict", po::bool_switch(&o.strict), "fail on the first malformed line instead of skipping")
        ("overwrite", po::bool_switch(&o.overwrite), "replace an existing output");
    if (!parse_command_options("prep", args, options, world.rank())) return kExitOk;
    if (!dataset_info.empty() && dataset.empty() && o.input.empty() && o.output.empty()) {
      print_dataset_info(dataset_info, world.rank());
      return kExitOk;
    }
    if (!dataset_info.empty() || !dataset.empty()) {
      if (dataset_info.empty() || dataset.empty() || !o.input.empty() || o.format) {
        throw ConfigError("prep: --dataset-info DIR and --dataset NAME go together, instead of --input and --format");
      }
      const DatasetInfoEntry entry = read_dataset_info(dataset_info, dataset, o.kind);
      o.input = entry.file;
      o.format = entry.format;
      o.schema = entry.schema;
    }
    std::unique_ptr<PrepTokenizer> tokenizer;
    if (!tokenizer_path.empty()) {
      tokenizer = attach_tokenizer(o, tokenizer_path, template_kind, jinja, "prep", "--template");
      if (!tokenizer->auto_choice.empty()) log0("prep: --template auto: ", tokenizer->auto_choice);
    } else if (template_kind) {
      throw ConfigError("prep: --template needs --tokenizer MODEL_DIR (the tokenizer.json to tokenize with)");
    }
    if (o.input.empty() || o.output.empty() || o.vocab_size <= 0) {
      throw ConfigError("prep: --input, --output and --vocab (> 0) are required (with --tokenizer, --vocab defaults "
                        "to the tokenizer's size)");
    }
    if (o.sharding.pairs_per_shard == 0) throw ConfigError("prep: --pairs-per-shard must be > 0");
    const Timer timer;
    MpiCommunicator communicator(world.comm(), world.watchdog());
    const PrepReport report = run_prep(o, communicator);
    if (report.format_detected) log0("prep: --format auto: ", enum_name(report.format), " (from the first record)");
    uint64_t malformed = 0;
    std::string reasons;
    for (const auto& [reason, count] : report.malformed) {
      malformed += count;
      reasons += (reasons.empty() ? "" : ", ") + reason + ": " + std::to_string(count);
    }
    const std::string first_only = o.max_records > 0 && report.lines > o.max_records
                                       ? " (the first " + std::to_string(o.max_records) + ": --max-samples)"
                                       : "";
    log0("prep: ", report.lines, " lines", first_only, " -> ", report.train_pairs, " train + ", report.val_pairs,
         " val pairs in ", o.output, " (", timer.seconds(), " s, ", world.size(), " rank(s)); ",
         report.truncated, " truncated, ", report.dropped_too_long, " dropped as longer than ",
         o.cutoff_len, " tokens, ", malformed, " malformed skipped", reasons.empty() ? "" : " (" + reasons + ")");
    for (const auto& example : report.examples) log0("  skipped ", example);
    if (report.first && tokenizer) {
      log0("prep: the first example as the model sees it (loss on the tokens in [[ ]]):");
      for (const std::string& line : example_lines(*report.first, o.kind, tokenizer->tokenizer)) log0("  ", line);
    }
    return kExitOk;
  });
}

}  // namespace st
