// The FSDP model against plain single-process libtorch autograd on the unsharded model: the
// same per-row log-probs, and each rank's averaged gradient shard equals its slice of the
// reference gradient, on 1-4 ranks, untied and tied embeddings.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include <numeric>

#include "data/collate.h"
#include "data/sampler.h"
#include "data/synth.h"
#include "fsdp/fsdp_model.h"
#include "fsdp/unit_shards.h"
#include "model/model_weights.h"
#include "model/presets.h"
#include "model/token_logp.h"
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

at::Tensor padded_flat(const UnitLayout& unit, const TensorMap& tensors) {
  std::vector<at::Tensor> parts;
  for (const ParamSlot& slot : unit.params) {
    const at::Tensor& t = tensors.at(slot.spec.name);
    parts.push_back(t.grad().defined() ? t.grad().reshape({-1}) : at::zeros({slot.spec.numel()}));
  }
  parts.push_back(at::zeros({unit.padded_numel - unit.numel}));
  return at::cat(parts);
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
    const at::Tensor expected = padded_flat(units[u], whole).narrow(0, units[u].shard_offset(rank), units[u].shard_numel);
    const at::Tensor& got = model.grad_shards()[u];
    const double scale = expected.abs().max().item<double>() + 1e-12;
    EXPECT_LT((got - expected).abs().max().item<double>() / scale, 1e-5)
        << units[u].name << " on rank " << rank << " of " << ranks;
  }
}

TEST(FsdpModel, GradientsEqualSingleProcessAutograd) { check_against_autograd(false); }
TEST(FsdpModel, TiedEmbeddingsGetBothGradientContributions) { check_against_autograd(true); }

}  // namespace
}  // namespace st
