// `shardtune bench`: training throughput of a model shape on synthetic pairs of a fixed length
// (tokens/s, MFU, peak memory, step time), through the same trainer as `shardtune train`. The
// first --warmup steps are run but not counted; the figures are medians over the --steps after.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <vector>

#include "bench_profile.h"
#include "command_runner.h"
#include "commands.h"
#include "config/command_options.h"
#include "data/pair_table.h"
#include "distributed/world.h"
#include "exit_codes.h"
#include "hf/model_config.h"
#include "hf/presets.h"
#include "prep/synth_dataset.h"
#include "train/objective.h"
#include "train/train_arguments.h"
#include "train/train_config_validate.h"
#include "train/train_metrics.h"
#include "train/trainer.h"
#include "util/check.h"
#include "util/errors.h"
#include "util/log.h"
#include "util/torch_compat.h"

namespace st {
namespace {

struct BenchOptions {
  std::string preset = "llama-3.2-1b", work = "runs/bench";
  Stage stage = TrainOptions{}.stage;  // train.stage's default
  SynthLengths lengths = SynthLengths::uniform;  // uniform: every pair seq tokens long
  int64_t seq = 2048, micro_batch = 1, steps = 10, warmup = 3;
  double peak_tflops = 989.0;  // H100 SXM dense bf16
  bool phase_times = true;     // sync the GPU at phase ends for the breakdown (off: the throughput run)
  std::string profile;         // a directory: profile the measured steps (bench_profile.h)
};

double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// The run: `options` on synthetic rows of `seq` tokens, the config keys given on top.
TrainConfig bench_config(TrainConfig config, const BenchOptions& o, const std::string& data) {
  config.model.preset = o.preset;
  config.data.train = data;
  config.data.val.clear();
  config.data.cutoff_len = o.seq;
  config.train.stage = o.stage;
  config.train.micro_batch = o.micro_batch;
  config.train.grad_accum = 1;
  config.train.global_batch = 0;
  config.train.max_steps = o.warmup + o.steps;
  config.train.log_every = 1;
  config.train.eval_every = 0;
  config.train.output_dir = o.work + "/run";
  config.train.overwrite = true;
  config.train.peak_tflops = o.peak_tflops;
  config.ckpt.every = 0;
  return config;
}

}  // namespace

int run_bench(std::vector<std::string> args, int& argc, char**& argv) {
  World world(argc, argv);
  return run_guarded([&] {
    BenchOptions o;
    po::options_description own("bench options", 110, 55);
    own.add_options()
        ("preset", po::value(&o.preset)->default_value(o.preset), "model shape (model.preset), random init")
        ("seq", po::value(&o.seq)->default_value(o.seq), "tokens per sequence (prompt + completion)")
        ("micro-batch", po::value(&o.micro_batch)->default_value(o.micro_batch),
         "pairs (dpo) or sequences (sft) per rank per step")
        ("stage", enum_flag(&o.stage, "bench", "stage"), ("train.stage: " + enum_choices<Stage>()).c_str())
        ("lengths", enum_flag(&o.lengths, "bench", "lengths"),
         "pair lengths: uniform (every pair --seq tokens) | ultrafeedback | long_prompt (shardtune synth; "
         "then --seq is data.cutoff_len)")
        ("steps", po::value(&o.steps)->default_value(o.steps), "measured steps")
        ("warmup", po::value(&o.warmup)->default_value(o.warmup), "steps run first and not measured")
        ("peak-tflops", po::value(&o.peak_tflops)->default_value(o.peak_tflops),
         "per-device peak for MFU [TFLOP/s] (989 = H100 SXM bf16)")
        ("phase-times", po::value(&o.phase_times)->default_value(o.phase_times)->implicit_value(true),
         "sync the GPU at each phase's end for the step-time breakdown; false for throughput runs")
        ("profile", po::value(&o.profile), "profile the measured steps: DIR/trace.json and the top-20 kernels")
        ("work", po::value(&o.work)->default_value(o.work), "directory for the synthetic data and the run");
    const ConfigArguments parsed = parse_config_arguments(args, own);
    if (parsed.help) {
      if (world.rank() == 0) {
        std::cout << config_help("usage: shardtune bench [--preset NAME --seq N --micro-batch M --stage " + enum_choices<Stage>() +
                                 "] [--section.key=value ...]", own);
      }
      return kExitOk;
    }
    if (o.seq < 8 || o.micro_batch < 1 || o.steps < 1 || o.warmup < 0) {
      throw ConfigError("bench: need --seq >= 8, --micro-batch >= 1, --steps >= 1, --warmup >= 0");
    }
    const std::string data = o.work + "/data";
    if (world.rank() == 0) {
      SynthOptions synth;
      synth.kind = objective_for(o.stage).example_kind();
      synth.vocab_size = preset_config(o.preset).vocab_size;
      synth.min_length = synth.max_length = (o.seq - 3) / 2;  // BOS + prompt, completion + EOS
      synth.lengths = o.lengths;
      const auto pairs = static_cast<uint64_t>((o.warmup + o.steps) * o.micro_batch * world.size());
      write_synthetic_dataset(data, synth, pairs, 0.0, ShardingOptions{});
      // The shape as HF config.json, for bench/peer_transformers.py to build the same model.
      std::ofstream(o.work + "/config.json") << to_hf_config_json(preset_config(o.preset)).dump(2) << "\n";
    }
    ST_CHECK_MPI(MPI_Barrier(world.comm()));
    const TrainConfig config = bench_config(parsed.config, o, data + "/train");
    validate_config(config, world.size(), parsed.origins);
    world.watchdog().set_timeout(config.dist.timeout_s);

    RunOptions run;
    run.sync_phases = o.phase_times;
    run.save_at_end = false;  // a bench run keeps no state
    Trainer trainer(config, world, run);
    std::vector<TrainRecord> measured;
    TrainObserver observer;
    observer.train_record = [&](const TrainRecord& record) {
      log0(console_line(record.json, config.train.max_steps));
      if (record.step > o.warmup) measured.push_back(record);
    };
    std::string profile_table;
    if (!o.profile.empty()) {
      const bool cuda = ST_TORCH_CUDA && at::hasCUDA();
      if (o.warmup == 0) start_bench_profile(cuda);
      observer.step_done = [&](int64_t done, int64_t total, double) {
        if (done == o.warmup) start_bench_profile(cuda);
        if (done == total) profile_table = finish_bench_profile(o.profile + "/rank" + std::to_string(world.rank()), 20);
      };
    }
    trainer.run(observer);
    if (world.rank() == 0) {
      const auto median_of = [&](const std::function<double(const TrainRecord&)>& field) {
        std::vector<double> values;
        for (const TrainRecord& record : measured) values.push_back(field(record));
        return median(values);
      };
      double peak_memory = 0.0, saved = 0.0;
      for (const TrainRecord& record : measured) {
        peak_memory = std::max(peak_memory, record.peak_memory_gib);
        saved = std::max(saved, record.saved_activations_gib);
      }
      const bool shared = objective_for(o.stage).shares_prompts(config.dpo.share_prompt);
      const char* rows = config.data.packing ? (shared ? "packed+shared" : "packed") : (shared ? "shared" : "unpacked");
      std::printf("bench: %s %s, seq %lld, lengths %s, rows %s, micro-batch %lld, %d rank(s)%s, compute %s; median of "
                  "%zu steps after %lld warm-up\n", o.preset.c_str(), enum_name(o.stage), static_cast<long long>(o.seq),
                  enum_name(o.lengths), rows, static_cast<long long>(o.micro_batch), world.size(),
                  config.dist.context_parallel > 1
                      ? (", context parallel " + std::to_string(config.dist.context_parallel)).c_str()
                      : "",
                  enum_name(trainer.plan().compute_dtype), measured.size(), static_cast<long long>(o.warmup));
      std::printf("  step time     %.4f s\n  tokens/s      %.1f\n"
                  "  padding       %.1f%% of the row slots\n  MFU           %.1f%% (peak %.0f TFLOP/s)\n"
                  "  peak memory   %.2f GiB\n  saved activations %.4f GiB per rank (unit inputs kept for backward)\n",
                  median_of([](const TrainRecord& r) { return r.step_time_s; }),
                  median_of([](const TrainRecord& r) { return r.tokens_per_s; }),
                  100.0 * median_of([](const TrainRecord& r) { return r.padding_fraction; }),
                  100.0 * median_of([](const TrainRecord& r) { return r.mfu; }), o.peak_tflops, peak_memory, saved);
      std::printf("%s", profile_table.c_str());
      if (o.phase_times) {
        std::printf("  step time breakdown (medians; the rest is metrics and host work):\n");
        for (const StepPhases::Field& field : StepPhases::kFields) {
          const double seconds = median_of([&](const TrainRecord& r) { return r.phases ? (*r.phases).*field.seconds : 0.0; });
          std::printf("    %-18s %.4f s\n", (std::string(field.name) + "_s").c_str(), seconds);
        }
      }
    }
    return kExitOk;
  });
}

}  // namespace st
