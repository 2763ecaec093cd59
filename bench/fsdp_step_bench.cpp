// Training-step time and memory of the FSDP engine next to plain single-process libtorch
// training of the same model (whole model, autograd keeping activations, torch AdamW).
// Both train DPO-style pairs from `shardtune synth` generation with the same global batch.
// Usage: bench_fsdp_step PRESET plain [steps=4] [pairs=8]
//        mpirun -np N bench_fsdp_step PRESET fsdp [steps=4] [pairs=8] [sharding=full] [optimizer=adamw]
//                                                [step_in_backward=0]
// bench/fsdp_step.sh runs both for several rank counts and prints one table; bench/optimizer_memory.sh
// the FSDP step with each optimizer choice (peak memory and step time side by side).
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/optim/adamw.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "data/collate.h"
#include "distributed/mpi_communicator.h"
#include "distributed/world.h"
#include "fsdp/fsdp_engine.h"
#include "hf/model_weights.h"
#include "hf/presets.h"
#include "model/llama_units.h"
#include "model/token_logp.h"
#include "prep/synth.h"
#include "util/check.h"
#include "util/cpu_threads.h"
#include "util/host_memory.h"
#include "util/timer.h"

namespace {

using namespace st;

std::vector<Pair> step_pairs(int step, int64_t count) {
  SynthOptions synth;
  synth.max_length = 30;
  const PairTable table = synthesize_pairs(synth, static_cast<uint64_t>(step * count), static_cast<uint64_t>(count));
  std::vector<Pair> pairs;
  for (size_t i = 0; i < table.size(); ++i) pairs.push_back(table.at(i));
  return pairs;
}

at::Tensor pair_loss(const at::Tensor& logps, int64_t pairs) {
  return -at::log_sigmoid(0.1 * (logps.narrow(0, 0, pairs) - logps.narrow(0, pairs, pairs))).mean();
}

struct Result {
  double median_step_s = 0;
  double tokens = 0;
  int64_t states_bytes = 0;
};

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

Result run_plain(const ModelConfig& config, int steps, int64_t pairs_per_step) {
  TensorMap whole = init_preset_weights(config, 1, at::kFloat);
  std::vector<at::Tensor> params;
  for (auto& [name, tensor] : whole) params.push_back(tensor.requires_grad_(true));
  torch::optim::AdamW adamw(params, torch::optim::AdamWOptions(1e-4));
  const LlamaWeights weights = llama_weights(whole, config);
  Result result;
  std::vector<double> times;
  for (int step = 0; step <= steps; ++step) {  // step 0 warms up
    const MicroBatch batch = collate_pairs(step_pairs(step, pairs_per_step), PairKind::dpo, {});
    const Timer timer;
    const at::Tensor hidden = llama_final_hidden(weights, config, batch.input_ids);
    const at::Tensor logps = chunked_token_logps(hidden.reshape({-1, hidden.size(2)}), weights.lm_head,
                                                 batch.targets.reshape({-1}), 1024).view(batch.targets.sizes()).sum(1);
    adamw.zero_grad();
    torch::autograd::backward({pair_loss(logps, pairs_per_step)});
    adamw.step();
    if (step > 0) times.push_back(timer.seconds());
    result.tokens = static_cast<double>(batch.input_ids.numel());
  }
  result.median_step_s = median(times);
  for (const auto& p : params) result.states_bytes += 4 * 4 * p.numel();  // param, grad, m, v
  return result;
}

Result run_fsdp(const ModelConfig& config, int steps, int64_t pairs_per_step, Sharding sharding,
                const OptimOptions& optim, World& world) {
  ShardingGroups groups = make_sharding_groups(world.comm(), sharding, world.topology(), [&](MPI_Comm comm) {
    return std::unique_ptr<Communicator>(new MpiCommunicator(comm, world.watchdog()));
  });
  EngineOptions options;
  options.model.logp_chunk_tokens = 1024;
  options.optim = optim;
  FsdpEngine engine(init_model_shards(config, 1, groups.shard->size(), groups.shard->rank(), shard_multiple_of(optim.name)),
                    groups, options);
  const int64_t mine = pairs_per_step / world.size();
  Result result;
  std::vector<double> times;
  for (int step = 0; step <= steps; ++step) {
    const auto pairs = step_pairs(step, pairs_per_step);
    const std::vector<Pair> share(pairs.begin() + world.rank() * mine, pairs.begin() + (world.rank() + 1) * mine);
    const MicroBatch batch = collate_pairs(share, PairKind::dpo, {});
    ST_CHECK_MPI(MPI_Barrier(world.comm()));
    const Timer timer;
    engine.step(1, [&](FsdpModel& model, int64_t) {
      // This rank's share of the step's mean: the engine sums the shares.
      return pair_loss(model.sequence_logps(batch.input_ids, batch.targets), mine) / static_cast<double>(world.size());
    }, 1e-4);
    double seconds = timer.seconds();
    ST_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, world.comm()));
    if (step > 0) times.push_back(seconds);
    double tokens = static_cast<double>(batch.input_ids.numel());
    ST_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, &tokens, 1, MPI_DOUBLE, MPI_SUM, world.comm()));
    result.tokens = tokens;
  }
  result.median_step_s = median(times);
  result.states_bytes = engine.memory().states();
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: bench_fsdp_step PRESET plain|fsdp [steps=4] [pairs=8] [sharding=full]\n");
    return 2;
  }
  keep_freed_host_memory();  // both modes: what the trainer does
  const std::string preset = argv[1], mode = argv[2];
  const int steps = argc > 3 ? std::atoi(argv[3]) : 4;
  const int64_t pairs = argc > 4 ? std::atoll(argv[4]) : 8;
  const std::string sharding = argc > 5 ? argv[5] : "full";
  OptimOptions optim;
  optim.name = parse_enum<OptimizerName>(argc > 6 ? argv[6] : "adamw", "optimizer");
  optim.step_in_backward = argc > 7 && std::string(argv[7]) == "1";
  if (optim.step_in_backward) optim.grad_clip = 0.0;
  const ModelConfig config = preset_config(preset);
  World world(argc, argv);
  // Ranks of a node share its cores.
  use_rank_share_of_cores(world.topology().local_size);
  if (pairs % world.size() != 0) {
    std::fprintf(stderr, "pairs (%lld) must divide over %d ranks\n", static_cast<long long>(pairs), world.size());
    return 2;
  }
  const Result result = mode == "plain" ? run_plain(config, steps, pairs)
                                        : run_fsdp(config, steps, pairs, parse_enum<Sharding>(sharding, "--sharding"), optim, world);
  double peak = static_cast<double>(peak_resident_bytes());
  ST_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, &peak, 1, MPI_DOUBLE, MPI_MAX, world.comm()));
  int64_t states = result.states_bytes;
  ST_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, &states, 1, MPI_INT64_T, MPI_MAX, world.comm()));
  if (world.rank() == 0) {
    const std::string label = mode == "plain" ? "plain libtorch"
                              : argc > 6      ? std::string(enum_name(optim.name)) + (optim.step_in_backward ? "+in-bwd" : "")
                                              : "fsdp " + sharding;
    std::printf("%-12s %-16s %5d %10.3f %12.0f %16.1f %18.1f\n", preset.c_str(), label.c_str(), world.size(),
                result.median_step_s, result.tokens / result.median_step_s, peak / 1e6, static_cast<double>(states) / 1e6);
  }
  return 0;
}
