// `shardtune synth`: a learnable synthetic pair dataset (see lib/data/synth.h), written as a
// dataset directory (train/ and optionally val/) or as prep-input JSONL. Rank 0 does the work.
#include <boost/program_options.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "command_runner.h"
#include "commands.h"
#include "config/command_options.h"
#include "data/pair_shard.h"
#include "distributed/world.h"
#include "exit_codes.h"
#include "prep/dataset_writer.h"
#include "prep/synth.h"
#include "prep/synth_dataset.h"
#include "util/errors.h"
#include "util/log.h"

namespace st {
namespace {

namespace po = boost::program_options;
namespace fs = std::filesystem;

struct SynthCommand {
  SynthOptions synth;
  std::string output, jsonl;
  uint64_t pairs = 1000;
  double val_size = 0.0;
  ShardingOptions sharding;
  bool overwrite = false;
};

void write_jsonl(const SynthCommand& c) {
  const PairTable table = synthesize_pairs(c.synth, 0, c.pairs);
  std::ofstream out(c.jsonl + ".tmp");
  for (size_t i = 0; i < table.size(); ++i) {
    const Pair pair = table.at(i);
    nlohmann::json line = {{"prompt_ids", pair.prompt}};
    if (c.synth.kind == PairKind::dpo) {
      line["chosen_ids"] = pair.chosen;
      line["rejected_ids"] = pair.rejected;
    } else {
      line["completion_ids"] = pair.chosen;
    }
    if (pair.label) line["label"] = *pair.label;
    out << line.dump() << "\n";
  }
  out.close();
  fs::rename(c.jsonl + ".tmp", c.jsonl);
}

}  // namespace

int run_synth(std::vector<std::string> args, int& argc, char**& argv) {
  World world(argc, argv);
  return run_guarded([&] {
    SynthCommand c;
    po::options_description options("shardtune synth --output DIR [options]", 110, 50);
    options.add_options()
        ("help", "print this help and exit")
        ("output", po::value(&c.output), "dataset directory to create (train/, val/ with manifests)")
        ("jsonl", po::value(&c.jsonl), "instead of --output: write prep-input JSONL here")
        ("kind", enum_flag(&c.synth.kind, "synth", "kind"),
         (example_kinds_text() + "; labelled kinds: a third undesirable").c_str())
        ("pairs", po::value(&c.pairs)->default_value(1000), "number of pairs")
        ("vocab", po::value(&c.synth.vocab_size)->default_value(512), "vocabulary size (ids 0-2: pad, BOS, EOS)")
        ("min-len", po::value(&c.synth.min_length)->default_value(4), "shortest prompt content [tokens]")
        ("max-len", po::value(&c.synth.max_length)->default_value(24), "longest prompt content [tokens]")
        ("lengths", enum_flag(&c.synth.lengths, "synth", "lengths"),
         "uniform (--min-len/--max-len) | ultrafeedback (short prompts, long responses) | long_prompt "
         "(prompts ~1500, responses ~200 tokens); docs/data-format.md")
        ("task", enum_flag(&c.synth.task, "synth", "task"), "chosen = copy | reverse | sort of the prompt")
        ("corrupt", po::value(&c.synth.corrupt)->default_value(0.5), "fraction of rejected tokens replaced, (0, 1]")
        ("noise-band", po::value(&c.synth.noise_band)->default_value(0.25),
         "top fraction of the vocabulary used only for rejected-token replacements, [0, 0.5]")
        ("val-size", po::value(&c.val_size)->default_value(0.0), "fraction of pairs in val/, [0, 1)")
        ("seed", po::value(&c.synth.seed)->default_value(0), "generator seed")
        ("pairs-per-shard", po::value(&c.sharding.pairs_per_shard)->default_value(100000), "pairs per HDF5 file")
        ("compress", po::bool_switch(&c.sharding.layout.compress), "deflate-compress the shards")
        ("overwrite", po::bool_switch(&c.overwrite), "replace an existing output");
    if (!parse_command_options("synth", args, options, world.rank())) return kExitOk;
    if (c.output.empty() == c.jsonl.empty()) throw ConfigError("synth: give exactly one of --output or --jsonl");
    const std::string target = c.output.empty() ? c.jsonl : c.output;
    if (!c.overwrite && fs::exists(target)) {
      throw ConfigError("synth: " + target + " exists; pass --overwrite or choose another path");
    }
    if (c.pairs == 0 || c.sharding.pairs_per_shard == 0 || c.val_size < 0 || c.val_size >= 1) {
      throw ConfigError("synth: need --pairs > 0, --pairs-per-shard > 0, 0 <= --val-size < 1");
    }
    if (world.rank() == 0) {
      if (c.jsonl.empty()) {
        write_synthetic_dataset(c.output, c.synth, c.pairs, c.val_size, c.sharding);  // replaces only with --overwrite
      } else {
        write_jsonl(c);
      }
      log0("synth: ", c.pairs, " ", enum_name(c.synth.kind), " pairs (task ", enum_name(c.synth.task), ", vocab ",
           c.synth.vocab_size, ") written to ", target);
    }
    return kExitOk;
  });
}

}  // namespace st
