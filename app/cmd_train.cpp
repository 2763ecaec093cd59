// `shardtune train`: config -> validation -> startup consistency check -> the training loop
// (lib/train/trainer.h) with console lines, a progress bar on terminals and metrics.jsonl;
// --dry-run stops after the checks and prints the plan (train_dry_run.h).
#include <cstdio>
#include <iostream>
#include <optional>
#include <memory>
#include <sstream>

#include "command_runner.h"
#include "commands.h"
#include "config/command_options.h"
#include "distributed/env_check.h"
#include "distributed/mpi_communicator.h"
#include "distributed/world.h"
#include "exit_codes.h"
#include "progress_bar.h"
#include "train/foreign_config.h"
#include "train/prepped_data.h"
#include "train/train_arguments.h"
#include "train/train_config_validate.h"
#include "train/train_metrics.h"
#include "train/trainer.h"
#include "train_dry_run.h"
#include "util/duration_text.h"
#include "util/errors.h"
#include "util/log.h"
#include "util/stop_signal.h"

namespace st {
namespace {

// What a run's records add up to, for its closing summary.
struct RunTally {
  double tokens = 0.0;  // logical tokens of this job's train records
  std::optional<double> best_eval_loss;
  int64_t best_eval_step = 0;

  void add(const nlohmann::ordered_json& record) {
    if (record.contains("tokens")) tokens += record.at("tokens").get<double>();
    if (record.contains("eval/loss") && record.contains("eval/samples")) {
      const double loss = record.at("eval/loss").get<double>();
      if (!best_eval_loss || loss < *best_eval_loss) {
        best_eval_loss = loss;
        best_eval_step = record.at("step").get<int64_t>();
      }
    }
  }
};

// The closing summary: steps, tokens, time and speed; the losses and the best evaluation; where
// the checkpoint, the export and the metrics are; the command that continues the run.
std::string final_summary(const TrainResult& result, const TrainConfig& config, const RunTally& tally) {
  std::ostringstream out;
  out.precision(4);
  out << "train: " << result.steps << " steps in " << result.seconds << " s (" << duration_text(result.seconds);
  if (result.first_step > 0) out << ", resumed at step " << result.first_step;
  out << "); " << static_cast<int64_t>(tally.tokens) << " tokens, "
      << static_cast<int64_t>(result.seconds > 0 ? tally.tokens / result.seconds : 0.0) << " tokens/s";
  if (result.last_train) {
    const LossSummary& losses = result.last_train->losses;
    out << "\ntrain: final loss " << losses.loss;
    if (losses.reward_accuracy) out << ", reward accuracy " << *losses.reward_accuracy;
  }
  if (result.last_eval && result.last_eval->samples > 0) {  // validation data, not tasks alone
    const LossSummary& losses = result.last_eval->losses;
    out << "; eval loss " << losses.loss;
    if (losses.reward_accuracy) out << ", eval reward accuracy " << *losses.reward_accuracy;
    if (tally.best_eval_loss) out << "; best eval loss " << *tally.best_eval_loss << " at step " << tally.best_eval_step;
  }
  const std::string& run = config.train.output_dir;
  char step[32];
  std::snprintf(step, sizeof(step), "/step_%08lld", static_cast<long long>(result.steps));
  out << "\ntrain: checkpoint " << (config.ckpt.dir.empty() ? run + "/checkpoints" : config.ckpt.dir) << step;
  if (config.ckpt.export_hf) out << "; export " << run << "/export";
  out << "; metrics " << run << "/metrics.jsonl";
  out << "\ntrain: more steps: shardtune train --config " << run << "/config.resolved.ini --resume auto "
      << "--train.max_steps=N (or sbatch slurm/launch.slurm " << run << "/config.resolved.ini)";
  return out.str();
}

int stop_exit_code(StopKind kind) { return kind == StopKind::requeue ? kExitPreempted : kExitStopped; }

}  // namespace

int run_train(std::vector<std::string> args, int& argc, char**& argv) {
  catch_stop_signals();  // first: a signal during start-up is a stop request, not a kill
  World world(argc, argv);
  return run_guarded([&] {
    po::options_description own("train options", 110, 55);
    std::string world_shape, resume, print_keys;
    ProgressMode progress = ProgressMode::automatic;
    own.add_options()
        ("dry-run", "check the config, data, batch geometry and ranks, print the shard plan and memory estimate, "
                    "write the resolved config, then stop")
        ("world", po::value(&world_shape), "with --dry-run: plan for a cluster of NODESxGPUS_PER_NODE (e.g. 2x8) "
                                           "instead of this job's ranks")
        ("resume", po::value(&resume), "same as --train.resume: auto (the newest complete checkpoint, else start "
                                       "fresh) or a checkpoint path")
        ("progress", enum_flag(&progress, "train", "progress"),
         "progress bar on rank 0: auto (when stdout is a terminal) | on | off")
        ("print-config", "print the resolved config (each key with where its value came from) and stop")
        ("print-keys", po::value(&print_keys),
         "print the keys of another tool's config this reads (llamafactory | trl) as a Markdown table, and stop");
    const ConfigArguments parsed = parse_config_arguments(args, own);
    if (parsed.help) {
      if (world.rank() == 0) {
        std::cout << config_help(
            "usage: shardtune train run.yaml [--key value ...]                 a LlamaFactory YAML, as llamafactory-cli train\n"
            "       shardtune train " + enum_choices<TrlTrainer>() +
                " --config x.yaml [...]   a TRL config, as trl dpo --config x.yaml\n"
            "       shardtune train --config run.ini [--section.key=value ...]  shardtune's own INI\n"
            "Switches (--dry-run, --print-config, --resume auto) go before or after the config; flags after it\n"
            "override its keys in the tool's words or shardtune's (--learning_rate 1e-4, --optim.lr=1e-4).\n"
            "The tools' keys and what each becomes: shardtune train --print-keys llamafactory|trl.",
            own);
      }
      return kExitOk;
    }
    if (!print_keys.empty()) {
      ForeignTool tool{};
      if (!find_enum(print_keys, tool)) {
        throw ConfigError("train: --print-keys '" + print_keys + "' is not one of " + enum_choices<ForeignTool>());
      }
      if (world.rank() == 0) std::cout << (tool == ForeignTool::trl ? trl_key_table() : llamafactory_key_table());
      return kExitOk;
    }
    for (const std::string& note : parsed.notes) log0("train: ", note);
    if (parsed.command_values.count("print-config")) {
      validate_config(parsed.config, world.size(), parsed.origins);
      if (world.rank() == 0) std::cout << format_resolved_config(parsed.config, parsed.origins) << std::flush;
      return kExitOk;
    }
    if (parsed.command_values.count("dry-run")) {
      train_dry_run(parsed, world, world_shape);
      return kExitOk;
    }
    if (!world_shape.empty()) throw ConfigError("train: --world plans a --dry-run only; add --dry-run");
    TrainConfig config = parsed.config;
    if (!resume.empty()) config.train.resume = resume;
    validate_config(config, world.size(), parsed.origins);
    world.watchdog().set_timeout(config.dist.timeout_s);
    {
      MpiCommunicator communicator(world.comm(), world.watchdog());
      enforce_consistent_env(communicator, local_env_fingerprint(world));
      for (const std::string& line : prep_config_data(config, communicator)) log0(line);
    }

    std::unique_ptr<Trainer> made;
    try {
      RunOptions options;
      options.config_text = format_resolved_config(config, parsed.origins);  // as config.resolved.ini
      options.origins = parsed.origins;
      made = std::make_unique<Trainer>(config, world, options);
    } catch (const StopBeforeTraining& stop) {
      log0(stop.what());
      return stop_exit_code(stop.kind());
    }
    Trainer& trainer = *made;
    if (world.rank() == 0) {
      write_resolved_config(config, parsed.origins, config.train.output_dir + "/config.resolved.ini");
    }
    const TrainPlan& plan = trainer.plan();
    log0("train: ", describe_objective(config, plan.reference), " on ", world.size(), " rank(s), sharding ",
         enum_name(config.dist.sharding), ", compute ", enum_name(plan.compute_dtype), "; ",
         plan.train_pairs, " training / ", plan.val_pairs, " validation pairs; global batch ", plan.global_batch,
         "; ", plan.total_steps, " steps");

    ProgressBar bar(plan.total_steps, world.rank() == 0 && progress != ProgressMode::off, progress == ProgressMode::on);
    TrainObserver observer;
    observer.step_done = [&](int64_t done, int64_t, double elapsed) { bar.update(done, elapsed); };
    RunTally tally;
    observer.record = [&](const nlohmann::ordered_json& record) {
      bar.clear();
      tally.add(record);
      log0(console_line(record, plan.total_steps));
    };
    const TrainResult result = trainer.run(observer);
    bar.clear();
    if (result.stopped != StopKind::none) return stop_exit_code(result.stopped);
    std::istringstream summary(final_summary(result, config, tally));
    for (std::string line; std::getline(summary, line);) log0(line);
    return kExitOk;
  });
}

}  // namespace st
