// The FSDP model against plain single-process libtorch autograd on the unsharded model: the
// same per-row log-probs, and each rank's averaged gradient shard equals its slice of the
// reference gradient, on 1-4 ranks, untied and tied embeddings.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/optim/adamw.h>

#include <functional>
#include <numeric>

#include "data/collate.h"
#include "data/sampler.h"
#include "data/synth.h"
#include "fsdp/fsdp_model.h"
#include "fsdp/unit_shards.h"
#include "model/model_weights.h"
#include "model/presets.h"
#include "model/token_logp.h"
#include "optim/lr_schedule.h"
#include "optim/sharded_adamw.h"
#include "mpi_test_main.h"

namespace st {
namespace {

using st::testing::world_communicator;

std::vector<Pair> global_pairs(size_t count) {
  SynthOptions synth;
  synth.max_length = 30;
  const PairTable table = synthesize_pairs(synth, 0, count);
  std::vector<Pair> pairs;
  for (size_t i = 0; i < table.size(); ++i) pairs.push_back(table.at(i));
  return pairs;
}

// Rank `rank`'s slice of the unit's flat vector assembled from `value(slot)` (a parameter or
// its gradient) in HF order, zero-padded: what that rank's shard must equal.
at::Tensor expected_shard(const UnitLayout& unit, int rank,
                          const std::function<at::Tensor(const ParamSlot&)>& value) {
  std::vector<at::Tensor> parts;
  for (const ParamSlot& slot : unit.params) parts.push_back(value(slot).reshape({-1}));
  parts.push_back(at::zeros({unit.padded_numel - unit.numel}));
  return at::cat(parts).narrow(0, unit.shard_offset(rank), unit.shard_numel);
}

void check_against_autograd(bool tied) {
  MpiCommunicator& comm = world_communicator();
  const int rank = comm.rank(), ranks = comm.size();
  ModelConfig config = preset_config("debug");
  config.tie_word_embeddings = tied;
  const uint64_t seed = 11;
  const auto pairs = global_pairs(8);
  const int64_t total_rows = 2 * static_cast<int64_t>(pairs.size());

  // Reference: the whole model, the whole batch, one process.
  TensorMap whole = init_preset_weights(config, seed, at::kFloat);
  for (auto& [name, tensor] : whole) tensor.requires_grad_(true);
  const MicroBatch all = collate_pairs(pairs, PairKind::dpo, {});
  const LlamaWeights weights = llama_weights(whole, config);
  const at::Tensor hidden = llama_final_hidden(weights, config, all.input_ids);
  const at::Tensor reference_logps =
      chunked_token_logps(hidden.reshape({-1, hidden.size(2)}), weights.lm_head, all.targets.reshape({-1}), 64)
          .view(all.targets.sizes()).sum(1);
  torch::autograd::backward({reference_logps.sum() / total_rows});

  // FSDP: this rank's slice of the pairs, its shards of the parameters.
  const auto units = build_unit_layouts(config, ranks);
  std::vector<at::Tensor> shards;
  for (const auto& unit : units) shards.push_back(init_unit_shard(unit, rank, seed));
  FsdpModel model(config, units, comm, shards, {at::kFloat, 64});
  std::vector<uint64_t> indices(pairs.size());
  std::iota(indices.begin(), indices.end(), 0);
  std::vector<Pair> mine;
  for (uint64_t i : rank_slice(indices, rank, ranks)) mine.push_back(pairs[i]);
  const MicroBatch local = collate_pairs(mine, PairKind::dpo, {});
  const at::Tensor logps = model.sequence_logps(local.input_ids, local.targets);
  // The group averages gradients, so each rank scales its part of the global mean by ranks.
  torch::autograd::backward({logps.sum() * ranks / total_rows});

  const int64_t first = rank_slice(indices, rank, ranks).front();
  const int64_t count = static_cast<int64_t>(mine.size());
  for (int64_t i = 0; i < count; ++i) {  // chosen rows, then rejected rows
    EXPECT_NEAR(logps[i].item<double>(), reference_logps[first + i].item<double>(), 1e-4);
    EXPECT_NEAR(logps[count + i].item<double>(),
                reference_logps[pairs.size() + first + i].item<double>(), 1e-4);
  }
  for (size_t u = 0; u < units.size(); ++u) {
    const at::Tensor expected = expected_shard(units[u], rank, [&](const ParamSlot& slot) {
      const at::Tensor& grad = whole.at(slot.spec.name).grad();
      return grad.defined() ? grad : at::zeros(slot.spec.shape);
    });
    const at::Tensor& got = model.grad_shards()[u];
    const double scale = expected.abs().max().item<double>() + 1e-12;
    EXPECT_LT((got - expected).abs().max().item<double>() / scale, 1e-5)
        << units[u].name << " on rank " << rank << " of " << ranks;
  }
}

TEST(FsdpModel, GradientsEqualSingleProcessAutograd) { check_against_autograd(false); }
TEST(FsdpModel, TiedEmbeddingsGetBothGradientContributions) { check_against_autograd(true); }

// DPO-style loss without a reference model: the mean of -log sigmoid(chosen - rejected) over the
// global batch, as this rank's share (gradients are averaged over ranks).
at::Tensor pair_loss(const at::Tensor& logps, int64_t pairs, double weight) {
  const at::Tensor margin = 0.1 * (logps.narrow(0, 0, pairs) - logps.narrow(0, pairs, pairs));
  return -at::log_sigmoid(margin).sum() * weight;
}

// 10 optimizer steps (AdamW with weight decay, warmup + cosine, clipping that engages) on any
// rank count give the losses and final parameters of single-process libtorch training.
TEST(FsdpTraining, TenStepsMatchSingleProcessTrainingOnAnyRankCount) {
  MpiCommunicator& comm = world_communicator();
  const int rank = comm.rank(), ranks = comm.size();
  const ModelConfig config = preset_config("debug");
  const uint64_t seed = 3;
  const int steps = 10;
  const auto pairs = global_pairs(8 * steps);
  OptimOptions optim;
  optim.lr = 3e-3;
  optim.weight_decay = 0.1;
  optim.warmup_steps = 2;
  optim.grad_clip = 0.05;  // small enough to clip
  // With eps 1e-8 Adam turns fp32 summation-order noise in near-zero gradients (rows of unused
  // tokens) into lr-sized steps; 1e-6 keeps the comparison about the engine, not about that.
  optim.eps = 1e-6;

  // Reference: whole model, torch::optim::AdamW with decay on matrices only.
  TensorMap whole = init_preset_weights(config, seed, at::kFloat);
  std::vector<at::Tensor> decayed, not_decayed;
  for (const auto& spec : all_params(config)) {
    at::Tensor& t = whole.at(spec.name);
    t.requires_grad_(true);
    (spec.shape.size() >= 2 ? decayed : not_decayed).push_back(t);
  }
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(decayed, std::make_unique<torch::optim::AdamWOptions>(
                                   torch::optim::AdamWOptions(optim.lr).weight_decay(optim.weight_decay).eps(optim.eps)));
  groups.emplace_back(not_decayed, std::make_unique<torch::optim::AdamWOptions>(
                                       torch::optim::AdamWOptions(optim.lr).weight_decay(0.0).eps(optim.eps)));
  torch::optim::AdamW reference(groups, torch::optim::AdamWOptions(optim.lr));
  const LlamaWeights weights = llama_weights(whole, config);

  // FSDP.
  const auto units = build_unit_layouts(config, ranks);
  std::vector<at::Tensor> shards;
  for (const auto& unit : units) shards.push_back(init_unit_shard(unit, rank, seed));
  FsdpModel model(config, units, comm, shards, {at::kFloat, 64});
  ShardedAdamW adamw(units, rank, optim);
  std::vector<uint64_t> slice_of(8);
  std::iota(slice_of.begin(), slice_of.end(), 0);

  for (int step = 0; step < steps; ++step) {
    const double lr = learning_rate(optim, step, steps);
    const std::vector<Pair> batch(pairs.begin() + 8 * step, pairs.begin() + 8 * (step + 1));
    // reference step
    const MicroBatch all = collate_pairs(batch, PairKind::dpo, {});
    const at::Tensor hidden = llama_final_hidden(weights, config, all.input_ids);
    const at::Tensor logps = chunked_token_logps(hidden.reshape({-1, hidden.size(2)}), weights.lm_head,
                                                 all.targets.reshape({-1}), 64).view(all.targets.sizes()).sum(1);
    const at::Tensor loss = pair_loss(logps, 8, 1.0 / 8);
    reference.zero_grad();
    torch::autograd::backward({loss});
    std::vector<at::Tensor> reference_grads;
    for (auto& [name, t] : whole) reference_grads.push_back(t.mutable_grad());
    double squares = 0;
    for (const auto& g : reference_grads) squares += g.to(at::kDouble).pow(2).sum().item<double>();
    const double clip = optim.grad_clip / (std::sqrt(squares) + 1e-6);
    if (clip < 1.0) for (auto& g : reference_grads) g.mul_(clip);
    for (auto& group : reference.param_groups()) group.options().set_lr(lr);
    reference.step();
    // FSDP step
    std::vector<Pair> mine;
    for (uint64_t i : rank_slice(slice_of, rank, ranks)) mine.push_back(batch[i]);
    const MicroBatch local = collate_pairs(mine, PairKind::dpo, {});
    model.zero_grad();
    const at::Tensor local_logps = model.sequence_logps(local.input_ids, local.targets);
    const at::Tensor local_loss = pair_loss(local_logps, static_cast<int64_t>(mine.size()), 1.0 / 8);
    torch::autograd::backward({local_loss * ranks});
    at::Tensor global_loss = local_loss.detach().clone();
    comm.all_reduce(global_loss, ReduceOp::sum);
    EXPECT_NEAR(global_loss.item<double>(), loss.item<double>(), 1e-5 * std::abs(loss.item<double>()))
        << "step " << step;
    const double norm = clip_grad_norm(model.grad_shards(), optim.grad_clip, comm);
    EXPECT_NEAR(norm, std::sqrt(squares), 1e-5 * std::sqrt(squares)) << "step " << step;
    adamw.step(model.master_shards(), model.grad_shards(), lr);
    model.refresh_compute_shards();
  }
  for (size_t u = 0; u < units.size(); ++u) {
    const at::Tensor expected = expected_shard(units[u], rank, [&](const ParamSlot& slot) {
      return whole.at(slot.spec.name).detach();
    });
    const double scale = expected.abs().max().item<double>();
    EXPECT_LT((model.master_shards()[u] - expected).abs().max().item<double>() / scale, 1e-5)
        << units[u].name << " on rank " << rank << " of " << ranks;
  }
}

}  // namespace
}  // namespace st
