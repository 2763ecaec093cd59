// Is the synthetic dataset learnable? A minimal single-process DPO loop (no sharding; the real
// trainer comes with the FSDP engine) trains the `debug` preset on `shardtune synth` pairs and
// prints reward accuracy and loss as it goes, with the wall time.
// Usage: bench_synth_dpo DATASET_DIR [steps=150] [pairs_per_step=16] [lr=1e-3] [beta=0.1]
#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/optim/adamw.h>

#include <cstdio>
#include <cstdlib>

#include "data/pair_loader.h"
#include "model/model_source.h"
#include "model/llama_units.h"
#include "model/token_logp.h"
#include "util/timer.h"

namespace {

// Summed response log-probs per row of a micro-batch: [rows].
at::Tensor row_logps(const st::LlamaWeights& weights, const st::ModelConfig& config,
                     const st::MicroBatch& batch) {
  const at::Tensor hidden = st::llama_final_hidden(weights, config, batch.input_ids);
  const at::Tensor logps = st::chunked_token_logps(hidden.view({-1, hidden.size(2)}), weights.lm_head,
                                                   batch.targets.view({-1}), 1024);
  return logps.view(batch.targets.sizes()).sum(1);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_synth_dpo DATASET_DIR [steps] [pairs_per_step] [lr] [beta]\n");
    return 2;
  }
  const int steps = argc > 2 ? std::atoi(argv[2]) : 150;
  const int64_t pairs_per_step = argc > 3 ? std::atoll(argv[3]) : 16;
  const double lr = argc > 4 ? std::atof(argv[4]) : 1e-3;
  const double beta = argc > 5 ? std::atof(argv[5]) : 0.1;
  at::manual_seed(0);

  st::LoadedModel policy = st::load_model("", "debug", 1, at::kFloat);
  const st::LoadedModel reference = st::load_model("", "debug", 1, at::kFloat);
  std::vector<at::Tensor> parameters;
  for (auto& [name, tensor] : policy.tensors) parameters.push_back(tensor.set_requires_grad(true));
  const st::LlamaWeights policy_weights = st::llama_weights(policy.tensors, policy.config);
  const st::LlamaWeights reference_weights = st::llama_weights(reference.tensors, reference.config);
  torch::optim::AdamW optimizer(parameters, torch::optim::AdamWOptions(lr).weight_decay(0.0));

  st::LoaderOptions options;
  options.global_batch = pairs_per_step;
  options.collate.micro_batch = pairs_per_step;
  options.collate.cutoff_len = 256;
  auto dataset = std::make_shared<const st::PairDataset>(argv[1], st::DatasetExpectations{st::PairKind::dpo, 512, false});
  st::PairLoader loader(dataset, options, 0, 1);
  std::printf("DPO on %s: debug preset (%lld parameters), %lld pairs/step, lr %g, beta %g\n", argv[1],
              (long long)policy.config.parameter_count(), (long long)pairs_per_step, lr, beta);
  std::printf("%6s %8s %10s %14s %8s\n", "step", "loss", "accuracy", "margin (nats)", "time");
  const st::Timer timer;
  double recent_accuracy = 0;
  for (int step = 1; step <= steps; ++step) {
    const st::MicroBatch batch = loader.next().micro_batches.at(0);
    const int64_t pairs = batch.pairs;
    at::Tensor reference_logps;
    {
      c10::NoGradGuard no_grad;
      reference_logps = row_logps(reference_weights, reference.config, batch);
    }
    const at::Tensor policy_logps = row_logps(policy_weights, policy.config, batch);
    const at::Tensor rewards = beta * (policy_logps - reference_logps);  // [2P]
    const at::Tensor margin = rewards.narrow(0, 0, pairs) - rewards.narrow(0, pairs, pairs);
    const at::Tensor loss = -at::log_sigmoid(margin).mean();
    optimizer.zero_grad();
    torch::autograd::backward({loss});
    optimizer.step();
    const double accuracy = margin.gt(0).to(at::kFloat).mean().item<double>();
    recent_accuracy = step <= 10 ? accuracy : 0.9 * recent_accuracy + 0.1 * accuracy;
    if (step % 10 == 0 || step == 1) {
      std::printf("%6d %8.4f %9.1f%% %14.3f %7.1fs\n", step, loss.item<double>(), 100 * accuracy,
                  margin.mean().item<double>() / beta, timer.seconds());
    }
  }
  std::printf("final: moving-average reward accuracy %.1f%% after %d steps in %.1f s\n",
              100 * recent_accuracy, steps, timer.seconds());
  return 0;
}
