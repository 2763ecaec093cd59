// A micro-batch through the objective: summed losses and metric sums on hand-made log-probs,
// and the padding batch that must weigh nothing.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <torch/csrc/autograd/autograd.h>

#include <algorithm>
#include <cmath>

#include "fsdp/engine_stats.h"
#include "hf/presets.h"
#include "model/token_logp.h"
#include "train/batch_loss.h"
#include "objective_sections_for.h"
#include "train/objective.h"
#include "util/errors.h"

namespace st {
namespace {

// Two DPO pairs; completions of 2 and 3 tokens (chosen), 2 and 1 (rejected).
MicroBatch two_pairs() {
  std::vector<Pair> pairs(2);
  pairs[0] = {{1, 5}, {6, 7}, {8, 9}, std::nullopt, std::nullopt};
  pairs[1] = {{1}, {6, 7, 2}, {9}, std::nullopt, std::nullopt};
  return collate_pairs(pairs, PairKind::dpo, {});
}

TEST(MicroBatchLoss, DpoSumsLossesRewardsAndCounts) {
  const MicroBatch batch = two_pairs();
  // rows: chosen0, chosen1, rejected0, rejected1
  const at::Tensor policy = at::tensor({-3.0f, -4.0f, -6.0f, -3.0f});
  const at::Tensor reference = at::tensor({-3.5f, -4.0f, -5.0f, -3.5f});
  const MicroBatchResult micro = objective_for(Stage::dpo).micro_batch_loss(batch, policy, reference, testing::dpo_sections(PreferenceLoss::sigmoid));
  const struct {
    at::Tensor summed_loss;
    LossSums sums;
  } result{micro.summed_loss, micro.read_sums()};
  // h0 = (-3 + 6) - (-3.5 + 5) = 1.5; h1 = (-4 + 3) - (-4 + 3.5) = -0.5
  const double expected = std::log1p(std::exp(-0.15)) + std::log1p(std::exp(0.05));
  EXPECT_NEAR(result.summed_loss.item<double>(), expected, 1e-6);
  EXPECT_NEAR(result.sums.loss, expected, 1e-6);
  EXPECT_EQ(result.sums.pairs, 2.0);
  EXPECT_NEAR(result.sums.chosen_rewards, 0.1 * (0.5 + 0.0), 1e-6);
  EXPECT_NEAR(result.sums.rejected_rewards, 0.1 * (-1.0 + 0.5), 1e-6);
  EXPECT_EQ(result.sums.correct, 1.0);  // pair 0 only
  EXPECT_NEAR(result.sums.chosen_logps, -7.0, 1e-6);
  EXPECT_EQ(result.sums.target_tokens, static_cast<double>(batch.target_tokens));
}

// TRL averages its "sft" term over each micro-batch's chosen tokens, then over micro-batches:
// a micro-batch of fewer pairs than the step's mean must weigh as much as a full one.
// KTO: each example's second row is its prompt with its mismatched partner's completion (here
// the previous example's, the first taking the last's: PairDataset::example); the reference point
// z is the mean of those rows' log-ratios, clamped at 0, and carries no gradient; desirable and
// undesirable examples are weighed apart.
TEST(MicroBatchLoss, KtoAgainstItsFormulaWithTheBatchsMismatchedPairs) {
  std::vector<Pair> pairs(3);
  pairs[0] = {{1, 5}, {6, 7}, {9, 9, 2}, std::nullopt, std::nullopt};
  pairs[1] = {{1}, {8}, {6, 7}, std::nullopt, std::nullopt};
  pairs[2] = {{1, 4}, {9, 9, 2}, {8}, std::nullopt, std::nullopt};
  for (size_t i = 0; i < pairs.size(); ++i) pairs[i].label = i != 1;
  const MicroBatch batch = collate_pairs(pairs, PairKind::kto, {});
  ASSERT_EQ(batch.input_ids.size(0), 6);
  // Row 3 + i is prompt i with completion i - 1: prompt 0 with completion 2, 1 with 0, 2 with 1.
  auto values = [](const at::Tensor& t) {
    const at::Tensor longs = t.to(at::kLong).contiguous();
    return std::vector<int64_t>(longs.data_ptr<int64_t>(), longs.data_ptr<int64_t>() + longs.numel());
  };
  EXPECT_EQ(values(batch.input_ids[3].slice(0, 0, 5)), (std::vector<int64_t>{1, 5, 9, 9, 2}));
  EXPECT_EQ(values(batch.input_ids[4].slice(0, 0, 3)), (std::vector<int64_t>{1, 6, 7}));
  EXPECT_EQ(values(batch.input_ids[5].slice(0, 0, 3)), (std::vector<int64_t>{1, 4, 8}));
  EXPECT_EQ(values(batch.labels), (std::vector<int64_t>{1, 0, 1}));

  const at::Tensor policy = at::tensor({-3.0, -4.0, -6.0, -5.0, -2.0, -7.0}, at::kDouble).requires_grad_(true);
  const at::Tensor reference = at::tensor({-3.5, -3.0, -6.0, -5.5, -3.0, -6.5}, at::kDouble);
  ObjectiveSections options;
  options.kto.beta = 0.5;
  options.kto.desirable_weight = 1.0;
  options.kto.undesirable_weight = 2.0;
  const MicroBatchResult micro = objective_for(Stage::kto).micro_batch_loss(batch, policy, reference, options);
  const double z = std::max(0.0, ((0.5) + (1.0) + (-0.5)) / 3.0);  // mismatched rows' log-ratios
  auto sigmoid = [](double x) { return 1.0 / (1.0 + std::exp(-x)); };
  const double r0 = 0.5, r1 = -1.0, r2 = 0.0;
  const double expected = (1.0 - sigmoid(0.5 * (r0 - z))) + 2.0 * (1.0 - sigmoid(0.5 * (z - r1))) +
                          (1.0 - sigmoid(0.5 * (r2 - z)));
  EXPECT_NEAR(micro.summed_loss.item<double>(), expected, 1e-12);
  const LossSums sums = micro.read_sums();
  EXPECT_EQ(sums.pairs, 3.0);
  EXPECT_EQ(sums.positive_labels, 2.0);
  EXPECT_NEAR(sums.kl, z, 1e-12);
  EXPECT_NEAR(sums.chosen_rewards, 0.5 * (r0 + r2), 1e-12);
  EXPECT_NEAR(sums.rejected_rewards, 0.5 * r1, 1e-12);
  EXPECT_NEAR(sums.chosen_logps, -3.0 - 6.0, 1e-12);
  torch::autograd::backward({micro.summed_loss});
  const at::Tensor grad = policy.grad();
  for (int64_t row = 3; row < 6; ++row) EXPECT_EQ(grad[row].item<double>(), 0.0) << "row " << row;
  EXPECT_NE(grad[0].item<double>(), 0.0);
  // A batch whose mismatched rows score below the reference: z clamps at 0.
  const at::Tensor low = at::tensor({-3.0, -4.0, -6.0, -9.0, -9.0, -9.0}, at::kDouble);
  EXPECT_EQ(objective_for(Stage::kto).micro_batch_loss(batch, low, reference, options).read_sums().kl, 0.0);
}

TEST(MicroBatchLoss, MicroBatchTokenNllWeighsEveryMicroBatchAlike) {
  const MicroBatch batch = two_pairs();
  const at::Tensor policy = at::tensor({-3.0f, -4.0f, -6.0f, -3.0f});
  ObjectiveSections options = testing::dpo_sections(PreferenceLoss::simpo);
  options.dpo.ftx = 1.0;
  options.dpo.nll_mean = NllMean::micro_batch_tokens;
  const double without = objective_for(Stage::dpo).micro_batch_loss(batch, policy, {}, testing::dpo_sections(PreferenceLoss::simpo))
                             .summed_loss.item<double>();
  // chosen -3 over 2 tokens and -4 over 3: token mean 7 / 5. The step has 3 pairs per
  // micro-batch, this one 2: its pairs carry 3 / 2 of that mean, 3 x 7 / 5 in all.
  const double with = objective_for(Stage::dpo).micro_batch_loss(batch, policy, {}, options, 3.0).summed_loss.item<double>();
  EXPECT_NEAR(with - without, 3.0 * 7.0 / 5.0, 1e-5);
  const double own = objective_for(Stage::dpo).micro_batch_loss(batch, policy, {}, options).summed_loss.item<double>();
  EXPECT_NEAR(own - without, 2.0 * 7.0 / 5.0, 1e-5) << "0: weighed by its own pairs";
}

TEST(MicroBatchLoss, SftIsTheSummedNegativeLogLikelihood) {
  std::vector<Pair> pairs(1);
  pairs[0] = {{1, 5}, {6, 7, 2}, {}, std::nullopt, std::nullopt};
  const MicroBatch batch = collate_pairs(pairs, PairKind::sft, {});
  const MicroBatchResult result = objective_for(Stage::sft).micro_batch_loss(batch, at::tensor({-4.5f}), {}, ObjectiveSections{});
  EXPECT_NEAR(result.summed_loss.item<double>(), 4.5, 1e-6);
  EXPECT_EQ(result.read_sums().target_tokens, 3.0);
  EXPECT_NEAR(result.read_sums().loss, 4.5, 1e-6);
  EXPECT_EQ(objective_for(Stage::sft).loss_denominator(result.read_sums()), 3.0);
}

// TRL's RewardTrainer: -log sigmoid(r_c - r_r), plus center_rewards_coefficient (r_c + r_r)^2.
TEST(MicroBatchLoss, RewardModelIsBradleyTerryWithCentredRewards) {
  const MicroBatch batch = two_pairs();
  const at::Tensor rewards = at::tensor({0.5f, -1.0f, -0.25f, 0.5f}).requires_grad_(true);  // chosen0, chosen1, rejected0, rejected1
  ObjectiveSections sections;
  const Objective& rm = objective_for(Stage::rm);
  EXPECT_EQ(rm.model_head(), ModelHead::score);
  EXPECT_FALSE(rm.needs_reference({}));
  const MicroBatchResult plain = rm.micro_batch_loss(batch, rewards, {}, sections);
  const double bt = std::log1p(std::exp(-0.75)) + std::log1p(std::exp(1.5));
  EXPECT_NEAR(plain.summed_loss.item<double>(), bt, 1e-6);
  const LossSums sums = plain.read_sums();
  EXPECT_EQ(sums.correct, 1.0);
  EXPECT_NEAR(sums.chosen_rewards, -0.5, 1e-6);
  EXPECT_NEAR(sums.rejected_rewards, 0.25, 1e-6);
  EXPECT_EQ(rm.loss_denominator(sums), 2.0);
  nlohmann::ordered_json record;
  rm.add_derived_metrics(sums, "", record);
  EXPECT_NEAR(record["rewards/margins"].get<double>(), -0.375, 1e-6);
  for (const LossSums::Field& field : LossSums::kFields) {
    const bool logps = field.value == &LossSums::chosen_logps || field.value == &LossSums::rejected_logps;
    EXPECT_EQ(rm.reports(field), !logps) << (field.metric ? field.metric : "");
  }
  sections.rm.center_rewards_coefficient = 0.1;
  const MicroBatchResult centred = rm.micro_batch_loss(batch, rewards, {}, sections);
  EXPECT_NEAR(centred.summed_loss.item<double>(), bt + 0.1 * (0.25 * 0.25 + 0.5 * 0.5), 1e-6);
  // d/dr_c0 of -log sigmoid(r_c0 - r_r0) + 0.1 (r_c0 + r_r0)^2 = -sigmoid(-(0.75)) + 0.2 * 0.25
  centred.summed_loss.backward();
  EXPECT_NEAR(rewards.grad()[0].item<double>(), -1.0 / (1.0 + std::exp(0.75)) + 0.05, 1e-6);
  // A pair's margin (TRL's margin column) is taken off its reward gap.
  MicroBatch with_margins = two_pairs();
  with_margins.margins = at::tensor({0.25f, -1.0f});
  sections.rm.center_rewards_coefficient = 0.0;
  EXPECT_NEAR(rm.micro_batch_loss(with_margins, rewards, {}, sections).summed_loss.item<double>(),
              std::log1p(std::exp(-0.5)) + std::log1p(std::exp(0.5)), 1e-6);
  const MicroBatch padding = padding_micro_batch(PairKind::dpo, 0, false);
  const at::Tensor none = at::zeros({2}).requires_grad_(true);
  const MicroBatchResult empty = rm.micro_batch_loss(padding, none, {}, sections);
  EXPECT_EQ(empty.summed_loss.item<double>(), 0.0);
  empty.summed_loss.backward();
  EXPECT_EQ(none.grad().abs().sum().item<double>(), 0.0);
}

TEST(TrainedModelConfig, TheObjectiveGivesTheHeadAndARewardModelIsNoCausalLm) {
  TrainConfig config;
  config.train.stage = Stage::rm;
  const ModelConfig base = preset_config("debug");
  const ModelConfig reward = trained_model_config(config, base, 3);
  EXPECT_EQ(reward.head, ModelHead::score);
  EXPECT_EQ(reward.pad_token_id, 3);  // the data's, as TRL takes the tokenizer's
  config.train.stage = Stage::dpo;
  EXPECT_EQ(trained_model_config(config, base, 3).head, ModelHead::lm);
  config.model.path = "runs/rm/export";
  try {
    trained_model_config(config, reward, 3);
    FAIL() << "a reward model trained as a causal LM";
  } catch (const ConfigError& error) {
    EXPECT_NE(std::string(error.what()).find("model.path runs/rm/export holds a reward model "
                                             "(LlamaForSequenceClassification); train.stage = dpo trains a causal LM"),
              std::string::npos)
        << error.what();
  }
}

TEST(MicroBatchLoss, PaddingBatchWeighsNothingButKeepsTheGraph) {
  const MicroBatch padding = padding_micro_batch(PairKind::dpo, 0, true);
  EXPECT_EQ(padding.pairs, 0);
  EXPECT_EQ(padding.input_ids.size(0), 2);
  EXPECT_TRUE(padding.targets.eq(kIgnoreTarget).all().item<bool>());
  const at::Tensor policy = at::zeros({2}).requires_grad_(true);
  const MicroBatchResult result =
      objective_for(Stage::dpo).micro_batch_loss(padding, policy, padding.ref_logps, testing::dpo_sections(PreferenceLoss::sigmoid));
  EXPECT_EQ(result.summed_loss.item<double>(), 0.0);
  EXPECT_EQ(result.read_sums().pairs, 0.0);
  EXPECT_EQ(result.read_sums().loss, 0.0);
  result.summed_loss.backward();
  EXPECT_EQ(policy.grad().abs().sum().item<double>(), 0.0);
}

TEST(LossSums, PackRoundTripsAndAdds) {
  LossSums a;
  a.loss = 1, a.pairs = 2, a.target_tokens = 3, a.real_tokens = 4, a.computed_tokens = 5, a.padded_tokens = 6;
  a.chosen_rewards = 7, a.rejected_rewards = 8, a.correct = 9, a.chosen_logps = 10, a.rejected_logps = 11;
  a.micro_batches = 12, a.positive_labels = 13, a.kl = 14;
  a.router_loss = 15, a.weighted_router_loss = 16, a.router_forwards = 17;
  const std::vector<double> packed = a.pack();
  ASSERT_EQ(packed.size(), LossSums::kPacked);
  LossSums b = LossSums::unpack(packed.data());
  b += a;
  EXPECT_EQ(b.pack(), (std::vector<double>{2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34}));
}

// The table decides the device-side sums: one slot per model-output field, in table order.
TEST(LossSums, OutputSumsFollowTheFieldTable) {
  EXPECT_EQ(kOutputSums, 9u);
  EXPECT_EQ(output_slot(&LossSums::loss), 0u);
  EXPECT_EQ(output_slot(&LossSums::rejected_logps), 5u);
  EXPECT_EQ(output_slot(&LossSums::kl), 6u);
  EXPECT_EQ(output_slot(&LossSums::router_loss), 7u);
  EXPECT_EQ(output_slot(&LossSums::weighted_router_loss), 8u);
  EXPECT_EQ(output_slot(&LossSums::pairs), kOutputSums);  // counted on the host
  EXPECT_EQ(output_slot(&LossSums::positive_labels), kOutputSums);
  EXPECT_EQ(output_slot(&LossSums::router_forwards), kOutputSums);
  const LossSums sums = with_output_sums({}, at::arange(1, 10, at::kDouble));
  EXPECT_EQ(sums.loss, 1.0);
  EXPECT_EQ(sums.chosen_rewards, 2.0);
  EXPECT_EQ(sums.correct, 4.0);
  EXPECT_EQ(sums.rejected_logps, 6.0);
  EXPECT_EQ(sums.kl, 7.0);
  EXPECT_EQ(sums.router_loss, 8.0);
  EXPECT_EQ(sums.weighted_router_loss, 9.0);
  EXPECT_EQ(sums.pairs, 0.0);
}

TEST(EngineStats, AddAndTotalFollowTheirTables) {
  CommBytes a{1, 2, 3};
  a += CommBytes{10, 20, 30};
  EXPECT_EQ(a.all_gather, 11);
  EXPECT_EQ(a.all_reduce, 33);
  EXPECT_EQ(a.total(), 66);
  StepPhases phases;
  phases.forward = 1.0;
  StepPhases more;
  more.forward = 2.0;
  more.optimizer = 0.5;
  phases += more;
  EXPECT_EQ(phases.forward, 3.0);
  EXPECT_EQ(phases.optimizer, 0.5);
}

}  // namespace
}  // namespace st
