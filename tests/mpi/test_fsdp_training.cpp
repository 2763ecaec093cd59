// Training with the FSDP engine: 10 optimizer steps on any rank count and every sharding
// strategy give the losses, gradient norms and final parameters of single-process libtorch
// training on the same global batches (hence the same results on 1, 2, 3 and 4 ranks);
// accumulation over micro-batches equals one larger micro-batch; optimizer offload equals the
// on-device update; dynamic loss scaling skips overflowing steps; bf16 compute and reduction
// stay close to fp32, and casting the compute copy per gather equals keeping it; a step reads nothing back to the host until the caller logs.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include "data/collate.h"
#include "fsdp/fsdp_engine.h"
#include "fsdp_test_support.h"
#include "hf/presets.h"
#include "mpi_test_main.h"
#include "objective_sections_for.h"
#include "optim/grad_clip.h"
#include "optim/lr_schedule.h"
#include "train/batch_loss.h"
#include "train/objective.h"
#include "util/host_sync.h"

namespace st {
namespace {

using namespace st::testing;

constexpr int64_t kGlobalPairs = 12;  // divides evenly over 1, 2, 3 and 4 ranks

OptimOptions test_optim() {
  OptimOptions optim;
  optim.lr = 3e-3;
  optim.weight_decay = 0.1;
  optim.warmup_steps = 2;
  optim.grad_clip = 0.05;  // small enough to clip
  // With eps 1e-8 Adam turns fp32 summation-order noise in near-zero gradients (rows of unused
  // tokens) into lr-sized steps; 1e-6 keeps the comparison about the engine, not about that.
  optim.eps = 1e-6;
  return optim;
}

EngineOptions engine_options(const OptimOptions& optim) {
  EngineOptions options;
  options.model = {at::kFloat, at::kFloat, at::kCPU, 64};
  options.optim = optim;
  return options;
}

// This rank's loss on its share of `batch`, split into `micro_batches` equal micro-batches.
MicroBatchLoss share_loss(const std::vector<Pair>& batch, int64_t micro_batches) {
  const std::vector<Pair> mine = my_share(batch);
  const auto per_micro = static_cast<int64_t>(mine.size()) / micro_batches;
  return [mine, per_micro, micro_batches](FsdpModel& model, int64_t index) {
    const std::vector<Pair> part(mine.begin() + index * per_micro, mine.begin() + (index + 1) * per_micro);
    const MicroBatch batch = collate_pairs(part, PairKind::dpo, {});
    // This rank's share of the global mean: the engine adds the shares up.
    return pair_loss(model.sequence_logps(batch.input_ids, batch.targets), per_micro) /
           static_cast<double>(micro_batches * world_communicator().size());
  };
}

FsdpEngine make_engine(const ModelConfig& config, ShardingGroups& groups, const EngineOptions& options,
                       uint64_t seed) {
  return FsdpEngine(init_model_shards(config, seed, groups.shard->size(), groups.shard->rank()), groups, options);
}

double global_sum(double local) {
  at::Tensor value = at::full({1}, local, at::kDouble);
  world_communicator().all_reduce(value, ReduceOp::sum);
  return value.item<double>();
}

// A step's loss (the global mean) and grad norm, read to the host.
struct StepValues {
  double loss = 0.0, grad_norm = 0.0;
};

// The losses and the grad norms of a run, each as one curve over its steps, within
// kOtherOrderRoundings of `expected` in the roundings `expected` carries (its distance from
// `in_float64`; relative_diff.h). A curve, not each step alone: one value's distance from
// float64 is a single sample that may happen to be nearly 0, the largest over the steps is not.
void expect_steps_within_roundings(const std::vector<StepValues>& got, const std::vector<StepValues>& expected,
                                   const std::vector<StepValues>& in_float64) {
  ASSERT_EQ(got.size(), expected.size());
  ASSERT_EQ(got.size(), in_float64.size());
  const auto curve = [](const std::vector<StepValues>& steps, double StepValues::*value) {
    std::vector<double> values;
    for (const StepValues& step : steps) values.push_back(step.*value);
    return at::tensor(values, at::kDouble);
  };
  constexpr double bound = kOtherOrderRoundings;
  EXPECT_LE(ST_ROUNDINGS(curve(got, &StepValues::loss), curve(expected, &StepValues::loss),
                         curve(in_float64, &StepValues::loss), bound),
            bound)
      << "losses";
  EXPECT_LE(ST_ROUNDINGS(curve(got, &StepValues::grad_norm), curve(expected, &StepValues::grad_norm),
                         curve(in_float64, &StepValues::grad_norm), bound),
            bound)
      << "grad norms";
}

class FsdpTraining : public ::testing::TestWithParam<Sharding> {};

TEST_P(FsdpTraining, TenStepsMatchSingleProcessTraining) {
  const ModelConfig config = preset_config("debug");
  const uint64_t seed = 3;
  const int steps = 10;
  const OptimOptions optim = test_optim();
  const auto pairs = global_pairs(kGlobalPairs * steps);
  ReferenceTrainer reference(config, seed, optim), exact(config, seed, optim, at::kDouble);
  ShardingGroups groups = test_groups(GetParam());
  FsdpEngine engine = make_engine(config, groups, engine_options(optim), seed);

  std::vector<StepValues> got, expected, in_float64;
  for (int step = 0; step < steps; ++step) {
    const double lr = learning_rate(optim, step, steps);
    const std::vector<Pair> batch(pairs.begin() + kGlobalPairs * step, pairs.begin() + kGlobalPairs * (step + 1));
    expected.push_back({reference.step(batch, lr), reference.last_grad_norm()});
    in_float64.push_back({exact.step(batch, lr), exact.last_grad_norm()});
    const StepOutcome outcome = engine.step(1, share_loss(batch, 1), lr);
    got.push_back({global_sum(outcome.read_loss()), outcome.read_grad_norm()});
  }
  // The engine and the single-process fp32 reference sum in other orders (shards, ranks,
  // reduce-scatter): judged in the roundings the reference carries (relative_diff.h).
  constexpr double bound = kOtherOrderRoundings;
  expect_steps_within_roundings(got, expected, in_float64);
  const auto& units = engine.model().units();
  for (size_t u = 0; u < units.size(); ++u) {
    const auto shard_of = [&](const ReferenceTrainer& trainer) {
      return expected_shard(units[u], groups.shard->rank(),
                            [&](const ParamSlot& slot) { return trainer.weights().at(slot.spec.name).detach(); });
    };
    EXPECT_LE(ST_ROUNDINGS(engine.model().master_shards()[u], shard_of(reference), shard_of(exact), bound), bound)
        << units[u].name << " on world rank " << world_communicator().rank() << " of " << world_communicator().size();
  }
}

// optim.step_in_backward: each unit updated as its gradient is reduced equals the ordinary step
// bit for bit (masters, losses, grad norms), fp32 and 8-bit moments, every strategy.
TEST_P(FsdpTraining, StepInBackwardEqualsTheOrdinaryStepBitForBit) {
  const ModelConfig config = preset_config("debug");
  for (OptimizerName name : {OptimizerName::adamw, OptimizerName::adamw8bit}) {
    std::vector<std::vector<at::Tensor>> masters;
    std::vector<std::vector<double>> values;
    for (bool in_backward : {false, true}) {
      EngineOptions options = engine_options(test_optim());
      options.optim.grad_clip = 0.0;
      options.optim.name = name;
      options.optim.step_in_backward = in_backward;
      ShardingGroups groups = test_groups(GetParam());
      FsdpEngine engine(init_model_shards(config, 7, groups.shard->size(), groups.shard->rank(), shard_multiple_of(name)),
                        groups, options);
      const auto pairs = global_pairs(kGlobalPairs * 3, 1);
      values.emplace_back();
      for (int step = 0; step < 3; ++step) {
        const std::vector<Pair> batch(pairs.begin() + kGlobalPairs * step, pairs.begin() + kGlobalPairs * (step + 1));
        const StepOutcome outcome = engine.step(1, share_loss(batch, 1), 1e-3 * (step + 1));
        values.back().push_back(outcome.read_loss());
        values.back().push_back(outcome.read_grad_norm());
      }
      masters.push_back(engine.model().master_shards());
      if (in_backward) {
        EXPECT_EQ(engine.memory().grads, 0) << "gradient shards left after the step";
      }
    }
    EXPECT_EQ(values[0], values[1]) << enum_name(name);
    for (size_t u = 0; u < masters[0].size(); ++u) {
      EXPECT_TRUE(at::equal(masters[0][u], masters[1][u])) << enum_name(name) << ", unit " << u;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllStrategies, FsdpTraining, ::testing::ValuesIn(kAllShardings),
                         [](const ::testing::TestParamInfo<Sharding>& info) { return enum_name(info.param); });


// Runs `steps` steps and returns this rank's master shards; with `outcomes`, also each step's
// loss and grad norm.
std::vector<at::Tensor> train(const EngineOptions& options, int64_t micro_batches, int steps,
                              std::vector<StepValues>* outcomes = nullptr, EngineMemory* memory = nullptr) {
  const ModelConfig config = preset_config("debug");
  ShardingGroups groups = test_groups(Sharding::full);
  FsdpEngine engine = make_engine(config, groups, options, 7);
  const int64_t per_step = 4 * world_communicator().size();  // 4 pairs per rank
  const auto pairs = global_pairs(per_step * steps, 1);
  for (int step = 0; step < steps; ++step) {
    const std::vector<Pair> batch(pairs.begin() + per_step * step, pairs.begin() + per_step * (step + 1));
    const StepOutcome outcome = engine.step(micro_batches, share_loss(batch, micro_batches), 1e-3);
    if (outcomes) outcomes->push_back({global_sum(outcome.read_loss()), outcome.read_grad_norm()});
  }
  if (memory) *memory = engine.memory();
  return engine.model().master_shards();
}

void expect_same_shards(const std::vector<at::Tensor>& got, const std::vector<at::Tensor>& expected, double tolerance) {
  ASSERT_EQ(got.size(), expected.size());
  for (size_t u = 0; u < got.size(); ++u) {
    EXPECT_LE(ST_RELATIVE_DIFF(got[u], expected[u], tolerance), tolerance) << "unit " << u;
  }
}

// Step by step: losses within `loss_tolerance` and grad norms within `norm_tolerance`, relative.
void expect_close_steps(const std::vector<StepValues>& got, const std::vector<StepValues>& expected,
                        double loss_tolerance, double norm_tolerance) {
  ASSERT_EQ(got.size(), expected.size());
  const auto scalar = [](double value) { return at::scalar_tensor(value, at::kDouble); };
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_LE(ST_RELATIVE_DIFF(scalar(got[i].loss), scalar(expected[i].loss), loss_tolerance), loss_tolerance)
        << "loss, step " << i;
    EXPECT_LE(ST_RELATIVE_DIFF(scalar(got[i].grad_norm), scalar(expected[i].grad_norm), norm_tolerance),
              norm_tolerance)
        << "grad norm, step " << i;
  }
}

// train()'s steps by the single-process reference in float64: each step's values and this
// rank's part of the final weights, laid out as train() returns its master shards.
std::vector<at::Tensor> train_in_float64(int steps, std::vector<StepValues>& outcomes) {
  const ModelConfig config = preset_config("debug");
  ReferenceTrainer exact(config, 7, test_optim(), at::kDouble);
  const int64_t per_step = 4 * world_communicator().size();
  const auto pairs = global_pairs(per_step * steps, 1);
  for (int step = 0; step < steps; ++step) {
    const std::vector<Pair> batch(pairs.begin() + per_step * step, pairs.begin() + per_step * (step + 1));
    const double loss = exact.step(batch, 1e-3);
    outcomes.push_back({loss, exact.last_grad_norm()});
  }
  ShardingGroups groups = test_groups(Sharding::full);
  const int rank = groups.shard->rank();
  std::vector<at::Tensor> shards;
  for (const UnitLayout& unit : init_model_shards(config, 7, groups.shard->size(), rank).units) {
    shards.push_back(
        expected_shard(unit, rank, [&](const ParamSlot& slot) { return exact.weights().at(slot.spec.name).detach(); }));
  }
  return shards;
}

// Accumulating over micro-batches sums in another order than one larger micro-batch: judged
// in the roundings the one-micro-batch run carries (its distance from the float64 reference).
TEST(FsdpAccumulation, FourMicroBatchesOfOneEqualOneOfFour) {
  const EngineOptions options = engine_options(test_optim());
  std::vector<StepValues> one_steps, four_steps, exact_steps;
  const auto one = train(options, 1, 3, &one_steps);
  const auto four = train(options, 4, 3, &four_steps);
  const auto exact = train_in_float64(3, exact_steps);
  constexpr double bound = kOtherOrderRoundings;
  expect_steps_within_roundings(four_steps, one_steps, exact_steps);
  ASSERT_EQ(four.size(), exact.size());
  for (size_t u = 0; u < four.size(); ++u) {
    EXPECT_LE(ST_ROUNDINGS(four[u], one[u], exact[u], bound), bound) << "unit " << u;
  }
}

TEST(FsdpOffload, HostUpdateEqualsOnDeviceUpdate) {
  EngineOptions options = engine_options(test_optim());
  const auto on_device = train(options, 1, 3);
  options.optim.offload = Offload::cpu;
  options.offload_threads = 3;
  const auto offloaded = train(options, 1, 3);
  expect_same_shards(offloaded, on_device, 1e-5);
}

// The step inside backward never holds every unit's gradient shard: each unit's is handed over
// once, as soon as it is final, and freed (at most the unit handed over and the one being
// reduced live).
TEST(FsdpStepInBackward, HandsEachUnitOverOnceWithoutAFullSetOfGradients) {
  ModelConfig config = preset_config("debug");
  config.num_hidden_layers = 6;
  EngineOptions options = engine_options(test_optim());
  options.optim.grad_clip = 0.0;
  ShardingGroups groups = test_groups(Sharding::full);
  FsdpEngine engine(init_model_shards(config, 7, groups.shard->size(), groups.shard->rank()), groups, options);
  FsdpModel& model = engine.model();
  int64_t all_shards = 0, largest = 0;
  for (const UnitLayout& unit : model.units()) {
    all_shards += unit.shard_numel * 4;
    largest = std::max(largest, unit.shard_numel * 4);
  }
  std::vector<size_t> order;
  int64_t most_alive = 0;
  model.zero_grad();
  model.consume_gradients([&](size_t unit, const at::Tensor& grad) {
    order.push_back(unit);
    most_alive = std::max(most_alive, model.memory().grads);
    EXPECT_EQ(grad.numel(), model.units()[unit].shard_numel);
  });
  const std::vector<Pair> batch = global_pairs(kGlobalPairs, 2);
  torch::autograd::backward({share_loss(batch, 1)(model, 0)});
  model.consume_gradients({});
  const std::vector<size_t> backward_order = {7, 6, 5, 4, 3, 2, 1, 0};
  EXPECT_EQ(order, backward_order);
  EXPECT_LE(most_alive, 2 * largest);
  EXPECT_LT(2 * largest, all_shards);
  EXPECT_EQ(model.memory().grads, 0);
}

TEST(FsdpLossScaling, OverflowingStepsAreSkippedAndTheScaleBacksOff) {
  const ModelConfig config = preset_config("debug");
  EngineOptions options = engine_options(test_optim());
  ShardingGroups plain_groups = test_groups(Sharding::full);
  FsdpEngine plain = make_engine(config, plain_groups, options, 9);
  options.loss_scaling = true;
  ShardingGroups scaled_groups = test_groups(Sharding::full);
  FsdpEngine scaled = make_engine(config, scaled_groups, options, 9);
  const auto pairs = global_pairs(kGlobalPairs, 2);
  const MicroBatchLoss loss = share_loss(pairs, 1);
  // Only world rank 0 overflows: every rank must still skip the step.
  const MicroBatchLoss overflowing = [&](FsdpModel& model, int64_t index) {
    const at::Tensor value = loss(model, index);
    return world_communicator().rank() == 0 ? value * std::numeric_limits<float>::infinity() : value;
  };

  const std::vector<at::Tensor> before = scaled.model().master_shards();
  std::vector<at::Tensor> snapshot;
  for (const auto& shard : before) snapshot.push_back(shard.clone());
  EXPECT_TRUE(scaled.step(1, overflowing, 1e-3).skipped);
  EXPECT_EQ(scaled.scaler().scale(), 65536.0) << "the first overflow spends the hysteresis";
  EXPECT_TRUE(scaled.step(1, overflowing, 1e-3).skipped);
  EXPECT_EQ(scaled.scaler().scale(), 32768.0);
  EXPECT_EQ(scaled.scaler().skipped_steps(), 2);
  expect_same_shards(scaled.model().master_shards(), snapshot, 0.0);
  // A clean step: scaling by a power of two and back is exact, so it equals unscaled training.
  EXPECT_FALSE(scaled.step(1, loss, 1e-3).skipped);
  plain.step(1, loss, 1e-3);
  expect_same_shards(scaled.model().master_shards(), plain.model().master_shards(), 0.0);
}

TEST(FsdpPrecision, Bf16ComputeAndReduceStayCloseToFp32) {
  const EngineOptions fp32 = engine_options(test_optim());
  EngineOptions bf16 = fp32;
  bf16.model.compute_dtype = at::kBFloat16;
  bf16.model.reduce_dtype = at::kBFloat16;
  std::vector<StepValues> fp32_steps, bf16_steps;
  EngineMemory fp32_memory, bf16_memory;
  const auto fp32_shards = train(fp32, 1, 3, &fp32_steps, &fp32_memory);
  const auto bf16_shards = train(bf16, 1, 3, &bf16_steps, &bf16_memory);
  expect_close_steps(bf16_steps, fp32_steps, 1e-2, 5e-2);
  for (const at::Tensor& shard : bf16_shards) EXPECT_EQ(shard.scalar_type(), at::kFloat) << "masters stay fp32";
  // Ranks that reduce accumulate bf16 gradient shards (train.reduce_dtype); a lone rank writes fp32.
  EXPECT_EQ(bf16_memory.grads * (world_communicator().size() > 1 ? 2 : 1), fp32_memory.grads);
}

// train.compute_copy = per_gather casts each unit's bf16 shard from its master at the gather:
// the values the kept copy holds, so the same training bit for bit, with 2 bytes per shard
// element less held between steps.
TEST(FsdpPrecision, CastingPerGatherEqualsTheKeptCopyWithLessMemory) {
  EngineOptions kept = engine_options(test_optim());
  kept.model.compute_dtype = at::kBFloat16;
  EngineOptions per_gather = kept;
  per_gather.model.compute_copy = ComputeCopy::per_gather;
  std::vector<StepValues> kept_steps, cast_steps;
  EngineMemory kept_memory, cast_memory;
  const auto kept_shards = train(kept, 1, 3, &kept_steps, &kept_memory);
  const auto cast_shards = train(per_gather, 1, 3, &cast_steps, &cast_memory);
  expect_close_steps(cast_steps, kept_steps, 0.0, 0.0);
  expect_same_shards(cast_shards, kept_shards, 0.0);
  int64_t elements = 0;
  for (const at::Tensor& shard : kept_shards) elements += shard.numel();
  EXPECT_EQ(kept_memory.params - cast_memory.params, 2 * elements);
}

// What the trainer does per step (the objective's loss and metric sums per micro-batch, the
// engine's accumulation, clipping and update) reads nothing back; a logged window reads its
// sums and the grad norm: two reads, however many steps and micro-batches it spans.
TEST(FsdpTrainingSyncs, AStepReadsNothingBackAndALogWindowReadsTwice) {
  const ModelConfig config = preset_config("debug");
  ShardingGroups groups = test_groups(Sharding::full);
  FsdpEngine engine = make_engine(config, groups, engine_options(test_optim()), 3);
  const int64_t per_step = 4 * world_communicator().size();
  const auto pairs = global_pairs(per_step * 3, 2);
  const int64_t before = host_reads();
  at::Tensor window_sums;
  StepOutcome last;
  for (int step = 0; step < 3; ++step) {
    const std::vector<Pair> mine = my_share({pairs.begin() + per_step * step, pairs.begin() + per_step * (step + 1)});
    last = engine.step(2, [&](FsdpModel& model, int64_t index) {
      const std::vector<Pair> part(mine.begin() + index * 2, mine.begin() + index * 2 + 2);
      const MicroBatch batch = collate_pairs(part, PairKind::dpo, {});
      const MicroBatchResult result = objective_for(Stage::dpo).micro_batch_loss(batch, model.sequence_logps(batch.input_ids, batch.targets),
                                                       {}, testing::dpo_sections(PreferenceLoss::simpo));
      window_sums = window_sums.defined() ? window_sums + result.output_sums : result.output_sums;
      return result.summed_loss;
    }, 1e-3);
  }
  EXPECT_EQ(host_reads() - before, 0) << "reads during 3 steps";
  const LossSums sums = with_output_sums({}, read_to_host(window_sums));
  EXPECT_TRUE(std::isfinite(sums.loss));
  EXPECT_GT(last.read_grad_norm(), 0.0);
  EXPECT_EQ(host_reads() - before, 2);
}

// The clip factor of torch's clip_grad_norm_ over the ranks' shards, with the fp16 loss-scale
// division folded in; the gradients themselves are left as they are (AdamW applies the factor).
TEST(GradClip, FactorClipsToTheGlobalMaxNormAndFoldsTheLossScale) {
  const std::vector<at::Tensor> grads = {at::full({4}, 3.0f), at::full({5}, 4.0f)};
  const double norm = std::sqrt((36.0 + 80.0) * world_communicator().size());  // every rank the same
  GradClip clip = global_grad_clip(grads, 1.0, world_communicator());
  ST_EXPECT_NEAR(clip.norm.item<double>(), norm, 1e-12 * norm);
  EXPECT_FLOAT_EQ(clip.scale.item<float>(), static_cast<float>(1.0 / (norm + 1e-6)));
  clip = global_grad_clip(grads, 1000.0, world_communicator());
  EXPECT_FLOAT_EQ(clip.scale.item<float>(), 1.0f);  // below the limit: no clipping
  clip = global_grad_clip(grads, 0.0, world_communicator(), 1.0 / 1024);  // fp16 unscale only
  ST_EXPECT_NEAR(clip.norm.item<double>(), norm / 1024, 1e-12 * norm);
  EXPECT_FLOAT_EQ(clip.scale.item<float>(), 1.0f / 1024);
  EXPECT_TRUE(grads[0].eq(3.0f).all().item<bool>());
}

}  // namespace
}  // namespace st
