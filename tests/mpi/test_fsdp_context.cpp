// Context parallelism (model/context_split.h) through the sharded units: for every context size
// C > 1 that divides the world (so 2, 3, 4 and 2 data-parallel x 2 context-parallel), each
// sequence's log-prob sum (or its per-token lines, with entropies and a temperature) and every
// gradient shard equal the whole model's under single-process autograd, in plain, packed and
// prompt-shared rows (row lengths seldom a multiple of 2C), under full and grad_op sharding, each
// recompute policy and a sliding window.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include <numeric>

#include "data/collate.h"
#include "data/sampler.h"
#include "distributed/mpi_communicator.h"
#include "distributed/parallel_layout.h"
#include "fsdp/shard_source.h"
#include "fsdp_test_support.h"
#include "hf/model_weights.h"
#include "hf/presets.h"
#include "model/context_split.h"
#include "model/llama_units.h"
#include "mpi_test_main.h"

namespace st {
namespace {

using namespace st::testing;

enum class Rows { plain, packed, shared };

struct ContextCase {
  Sharding sharding;
  Recompute recompute;
  Rows rows;
  int64_t window;
  HeadOutput output = HeadOutput::sequence_sums;
  double temperature = 1.0;
};

std::string case_name(const ::testing::TestParamInfo<ContextCase>& info) {
  const char* rows[] = {"plain", "packed", "shared"};
  const bool sums = info.param.output == HeadOutput::sequence_sums;
  return std::string(enum_name(info.param.sharding)) + "_" + enum_name(info.param.recompute) + "_" +
         rows[static_cast<int>(info.param.rows)] + (info.param.window ? "_window" : "") +
         (sums ? "" : std::string("_") + enum_name(info.param.output));
}

// Small enough that each sequence's term keeps its gradient in range. Of lines, only the
// log-probs' carry a gradient (the entropies are detached, the target marks constant).
at::Tensor test_loss(const at::Tensor& logps) { return logps.pow(2).sum() / 1000.0; }

// Of per-sequence values over all `pairs` (SFT: one per pair; DPO: chosen of every pair, then
// rejected; sequences along `dim`), the ones of the pairs [first, first + count), in the engine's order.
at::Tensor rows_of_pairs(const at::Tensor& all, PairKind kind, int64_t pairs, int64_t first, int64_t count,
                         int64_t dim) {
  if (sequences_of(kind) == 1) return all.narrow(dim, first, count);
  return at::cat({all.narrow(dim, first, count), all.narrow(dim, pairs + first, count)}, dim);
}

// Per-token lines [k, S, L] -> [k, targets]: each line's values at the target slots (line
// HeadLine::targets), sequence by sequence in position order.
at::Tensor target_values(const at::Tensor& lines) {
  const at::Tensor at_targets = lines[static_cast<int64_t>(HeadLine::targets)].to(at::kBool);
  return lines.masked_select(at_targets).view({lines.size(0), -1});
}

class FsdpContextParallel : public ::testing::TestWithParam<ContextCase> {};

TEST_P(FsdpContextParallel, LogpsAndGradientsEqualSingleProcessAutograd) {
  const auto [sharding, recompute, rows, window, output, temperature] = GetParam();
  const bool sums = output == HeadOutput::sequence_sums;
  const int world = world_communicator().size(), rank = world_communicator().rank();
  if (world < 2) GTEST_SKIP() << "context parallelism needs 2 or more ranks";
  ModelConfig config = preset_config("debug");
  config.sliding_window = window;
  const PairKind kind = rows == Rows::packed ? PairKind::sft : PairKind::dpo;
  CollateOptions collate;
  collate.packing = rows == Rows::packed;
  collate.share_prompt = rows == Rows::shared;
  const std::vector<Pair> pairs = global_pairs(8, 3);
  const auto pair_count = static_cast<int64_t>(pairs.size());

  // The reference in fp32, and in float64 as the judge of both (ST_ROUNDINGS).
  const MicroBatch all = collate_pairs(pairs, kind, collate);
  const auto whole_model = [&](at::ScalarType dtype) {
    TensorMap whole = init_preset_weights(config, 11, dtype);
    for (auto& [name, tensor] : whole) tensor.requires_grad_(true);
    TokenBatch batch = make_token_batch(all.input_ids, all.targets, rope_inverse_frequencies(config), dtype, 64,
                                        all.layout, config.sliding_window);
    batch.head_output = output;
    batch.logit_temperature = temperature;
    const at::Tensor logps = llama_sequence_logps(llama_weights(whole, config), config, batch);
    torch::autograd::backward({test_loss(logps)});
    return std::make_pair(logps.detach(), whole);
  };
  const auto [reference, whole] = whole_model(at::kFloat);
  const auto [exact, exact_whole] = whole_model(at::kDouble);
  // The split rows sum in other orders (each rank's chunks, the gathered keys): judged in the
  // roundings the reference carries (relative_diff.h).
  constexpr double bound = kOtherOrderRoundings;

  int tried = 0;
  for (int parts = 2; parts <= world; ++parts) {
    if (world % parts != 0) continue;
    ++tried;
    const ParallelLayout layout = parallel_layout(rank, world, parts);
    ShardingGroups groups = test_groups(sharding);
    const MpiComm split = split_context_group(test_world().comm(), layout);
    groups.context = std::make_unique<MpiCommunicator>(split.get(), test_world().watchdog());
    ModelShards shards = init_model_shards(config, 11, groups.shard->size(), groups.shard->rank());
    const auto units = shards.units;
    FsdpModelOptions options{at::kFloat, at::kFloat, at::kCPU, 64};
    options.recompute.assign(units.size(), recompute);
    FsdpModel model(config, units, groups, std::move(shards.masters), options);

    std::vector<uint64_t> indices(pairs.size());
    std::iota(indices.begin(), indices.end(), 0);
    const std::vector<uint64_t> slice = rank_slice(indices, layout.data_rank, layout.data_size);
    std::vector<Pair> mine;
    for (uint64_t i : slice) mine.push_back(pairs[i]);
    const MicroBatch local = collate_pairs(mine, kind, collate);
    TokenBatch batch = model.make_batch(local.input_ids, local.targets, local.layout);
    batch.head_output = output;
    batch.logit_temperature = temperature;
    const at::Tensor group_output = model.sequence_logps(batch);
    torch::autograd::backward({test_loss(group_output)});
    // Lines span this rank's rows padded to 2C chunks, a target where its row holds it: compared
    // as the values at the targets, sequence by sequence in position order, and the targets' count.
    const at::Tensor logps = sums ? group_output.detach() : target_values(group_output.detach());

    const std::string where = "C = " + std::to_string(parts) + " of " + std::to_string(world);
    const auto my_part = [&](const at::Tensor& all_rows) {
      return rows_of_pairs(all_rows, kind, pair_count, static_cast<int64_t>(slice.front()),
                           static_cast<int64_t>(slice.size()), sums ? 0 : 1);
    };
    if (!sums) {
      EXPECT_EQ(group_output.size(-1), context_row_length(local.input_ids.size(1), parts)) << where;
      EXPECT_TRUE(at::equal(group_output[1].sum(-1), my_part(reference)[1].sum(-1))) << where;
    }
    const at::Tensor expected = sums ? my_part(reference) : target_values(my_part(reference));
    const at::Tensor expected_exact = sums ? my_part(exact) : target_values(my_part(exact));
    ASSERT_EQ(logps.numel(), expected.numel()) << where;
    EXPECT_LE(ST_ROUNDINGS(logps, expected, expected_exact, bound), bound) << where;
    for (size_t u = 0; u < units.size(); ++u) {
      const int rank_in_shard = groups.shard->rank();
      EXPECT_LE(ST_ROUNDINGS(model.grad_shards()[u], expected_grad_shard(units[u], rank_in_shard, whole),
                             expected_grad_shard(units[u], rank_in_shard, exact_whole), bound),
                bound)
          << units[u].name << ", " << where;
    }
    // Each rank saved the unit inputs of its own tokens only: about 1/C of the rows.
    EXPECT_GT(model.memory().saved_inputs_peak, 0) << where;
  }
  EXPECT_GT(tried, 0);
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, FsdpContextParallel,
    ::testing::Values(ContextCase{Sharding::full, Recompute::full, Rows::plain, 0},
                      ContextCase{Sharding::full, Recompute::full, Rows::packed, 0},
                      ContextCase{Sharding::full, Recompute::full, Rows::shared, 0},
                      ContextCase{Sharding::grad_op, Recompute::none, Rows::shared, 0},
                      ContextCase{Sharding::full, Recompute::selective, Rows::plain, 0},
                      ContextCase{Sharding::full, Recompute::full, Rows::plain, 8},
                      ContextCase{Sharding::full, Recompute::full, Rows::shared, 8},
                      ContextCase{Sharding::full, Recompute::full, Rows::packed, 0,
                                  HeadOutput::token_lines_with_entropies, 0.7},
                      ContextCase{Sharding::full, Recompute::selective, Rows::shared, 8, HeadOutput::token_lines, 1.3}),
    case_name);

}  // namespace
}  // namespace st
