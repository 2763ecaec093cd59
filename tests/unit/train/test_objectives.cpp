// The preference losses and the SFT loss on inputs small enough to compute by hand.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>

#include "train/objectives.h"
#include "util/errors.h"

namespace st {
namespace {

at::Tensor values(std::initializer_list<double> list) {
  return at::tensor(std::vector<double>(list), at::kDouble);
}

// Policy: chosen -10 over 4 tokens, rejected -14 over 2; reference: -11 and -12, same counts.
PairLogps policy() { return {values({-10.0}), values({-14.0}), values({4}), values({2})}; }
PairLogps reference() { return {values({-11.0}), values({-12.0}), values({4}), values({2})}; }

double loss_of(PreferenceLossOptions options, const PairLogps& pol = policy()) {
  return preference_loss(pol, reference(), options).losses.item<double>();
}

TEST(PreferenceLoss, SigmoidIsDpo) {
  // h = (-10 + 14) - (-11 + 12) = 3; loss = -log sigmoid(0.1 * 3) = log(1 + e^-0.3)
  EXPECT_NEAR(loss_of({PreferenceLoss::sigmoid, 0.1}), 0.5543552, 1e-7);
  const PreferenceTerms terms = preference_loss(policy(), reference(), {PreferenceLoss::sigmoid, 0.1});
  EXPECT_NEAR(terms.chosen_rewards.item<double>(), 0.1, 1e-12);     // 0.1 * (-10 + 11)
  EXPECT_NEAR(terms.rejected_rewards.item<double>(), -0.2, 1e-12);  // 0.1 * (-14 + 12)
  EXPECT_EQ(terms.chosen_logps.item<double>(), -10.0) << "sigmoid reports summed log-probs";
}

TEST(PreferenceLoss, LabelSmoothingMixesTheFlippedLabel) {
  // 0.9 * log(1 + e^-0.3) + 0.1 * log(1 + e^0.3)
  EXPECT_NEAR(loss_of({PreferenceLoss::sigmoid, 0.1, 0.1}), 0.9 * 0.5543552 + 0.1 * 0.8543552, 1e-7);
}

TEST(PreferenceLoss, SigmoidGradientIsMinusBetaTimesSigmoidOfMinusBetaH) {
  PairLogps pol = policy();
  pol.chosen.requires_grad_(true);
  preference_loss(pol, reference(), {PreferenceLoss::sigmoid, 0.1}).losses.sum().backward();
  EXPECT_NEAR(pol.chosen.grad().item<double>(), -0.1 / (1.0 + std::exp(0.3)), 1e-9);
}

TEST(PreferenceLoss, HingeIsReluOfOneMinusBetaH) {
  EXPECT_NEAR(loss_of({PreferenceLoss::hinge, 0.1}), 0.7, 1e-12);
  EXPECT_EQ(loss_of({PreferenceLoss::hinge, 0.5}), 0.0);  // margin beyond 1/beta
}

TEST(PreferenceLoss, IpoUsesPerTokenAveragesAndASquare) {
  // averages: policy -2.5, -7; reference -2.75, -6: h = 4.5 - 3.25 = 1.25; (1.25 - 1/(2*0.1))^2
  EXPECT_NEAR(loss_of({PreferenceLoss::ipo, 0.1}), 14.0625, 1e-12);
  const PreferenceTerms terms = preference_loss(policy(), reference(), {PreferenceLoss::ipo, 0.1});
  EXPECT_EQ(terms.chosen_logps.item<double>(), -2.5) << "ipo reports averaged log-probs";
}

TEST(PreferenceLoss, SimpoNeedsNoReferenceAndSubtractsTheMargin) {
  PreferenceLossOptions options{PreferenceLoss::simpo, 2.0};
  options.simpo_gamma = 1.0;
  // 2 * (-2.5 + 7) - 1 = 8: loss = log(1 + e^-8)
  const PreferenceTerms terms = preference_loss(policy(), {}, options);
  EXPECT_NEAR(terms.losses.item<double>(), std::log1p(std::exp(-8.0)), 1e-12);
  EXPECT_NEAR(terms.chosen_rewards.item<double>(), -5.0, 1e-12);  // beta * average
  EXPECT_FALSE(needs_reference(PreferenceLoss::simpo));
}

TEST(PreferenceLoss, OrpoIsSftPlusBetaTimesOddsRatioLoss) {
  // one token each, p(chosen) = 1/2, p(rejected) = 1/4: odds 1 and 1/3, log odds ratio ln 3;
  // loss = -ln(1/2) - 0.1 * ln sigmoid(ln 3) = ln 2 + 0.1 ln(4/3)
  const PairLogps pol{values({std::log(0.5)}), values({std::log(0.25)}), values({1}), values({1})};
  const PreferenceTerms terms = preference_loss(pol, {}, {PreferenceLoss::orpo, 0.1});
  EXPECT_NEAR(terms.losses.item<double>(), std::log(2.0) + 0.1 * std::log(4.0 / 3.0), 1e-12);
  EXPECT_FALSE(needs_reference(PreferenceLoss::orpo));
}

// The padding micro-batch has empty rows: mean log-probs of 0 (p = 1), where log(1 - p) is -inf.
// Its loss weighs nothing but must stay finite (NaN x 0 is NaN), gradients too; and near p = 1
// the odds stay accurate where log1p(-exp(x)) cancels.
TEST(PreferenceLoss, OrpoStaysFiniteOnEmptyRowsAndAccurateNearCertainty) {
  PairLogps empty{values({0.0}), values({0.0}), values({0}), values({0})};
  empty.chosen.requires_grad_(true);
  const PreferenceTerms terms = preference_loss(empty, {}, {PreferenceLoss::orpo, 0.1});
  EXPECT_TRUE(std::isfinite(terms.losses.item<double>()));
  (terms.losses * 0.0).sum().backward();
  EXPECT_TRUE(std::isfinite(empty.chosen.grad().item<double>()));
  // chosen log p = -1e-4 (one token), rejected ln(1/2): log odds = ln(p/(1-p)) - ln 1
  const double x = -1e-4;
  const PairLogps near{values({x}), values({std::log(0.5)}), values({1}), values({1})};
  const double odds = x - std::log(-std::expm1(x));
  const double expected = -x - 0.1 * std::log(1.0 / (1.0 + std::exp(-odds)));
  EXPECT_NEAR(preference_loss(near, {}, {PreferenceLoss::orpo, 0.1}).losses.item<double>(), expected, 1e-12);
}

// dpo.label_smoothing is cDPO's label-flip rate and sigmoid's only (TRL's `sigmoid` formula; its
// `robust` and `exo_pair` use the same key otherwise and are not offered here). The value is
// checked above; the gradient is -beta ((1 - eps) sigmoid(-beta h) - eps sigmoid(beta h)).
TEST(PreferenceLoss, LabelSmoothingGradientWeighsBothLabels) {
  PairLogps pol = policy();
  pol.chosen.requires_grad_(true);
  const double eps = 0.2, beta = 0.1, h = 3.0;
  preference_loss(pol, reference(), {PreferenceLoss::sigmoid, beta, eps}).losses.sum().backward();
  const auto sigmoid = [](double a) { return 1.0 / (1.0 + std::exp(-a)); };
  EXPECT_NEAR(pol.chosen.grad().item<double>(), -beta * ((1 - eps) * sigmoid(-beta * h) - eps * sigmoid(beta * h)),
              1e-12);
}

TEST(PreferenceLoss, FtxAddsTheChosenMeanTokenNll) {
  PreferenceLossOptions options{PreferenceLoss::sigmoid, 0.1};
  options.ftx = 1.0;
  EXPECT_NEAR(loss_of(options), 0.5543552 + 2.5, 1e-7);  // chosen: -10 over 4 tokens
}

// dpo.nll_mean = micro_batch_tokens (TRL's "sft" loss term and ORPO trainer): the NLL over all
// chosen tokens of the batch, each pair carrying that mean x the micro-batch weight.
TEST(PreferenceLoss, FtxOverTheMicroBatchTokensIsTheBatchTokenMean) {
  // chosen -10 over 4 tokens and -2 over 1: pair means 2.5 and 2, token mean 12 / 5 = 2.4
  const PairLogps pol{values({-10.0, -2.0}), values({-14.0, -5.0}), values({4, 1}), values({2, 1})};
  const PairLogps ref{values({-11.0, -2.0}), values({-12.0, -5.0}), values({4, 1}), values({2, 1})};
  PreferenceLossOptions options{PreferenceLoss::sigmoid, 0.1};
  const at::Tensor dpo = preference_loss(pol, ref, options).losses;
  options.ftx = 0.5;
  const at::Tensor per_pair = preference_loss(pol, ref, options).losses - dpo;
  EXPECT_NEAR(per_pair[0].item<double>(), 0.5 * 2.5, 1e-12);
  EXPECT_NEAR(per_pair[1].item<double>(), 0.5 * 2.0, 1e-12);
  options.nll_mean = NllMean::micro_batch_tokens;
  const at::Tensor tokens = preference_loss(pol, ref, options).losses - dpo;
  EXPECT_NEAR(tokens[0].item<double>(), 0.5 * 2.4, 1e-12);
  EXPECT_NEAR(tokens[1].item<double>(), 0.5 * 2.4, 1e-12);
  const at::Tensor weighted = preference_loss(pol, ref, options, 1.5).losses - dpo;
  EXPECT_NEAR(weighted[0].item<double>(), 1.5 * 0.5 * 2.4, 1e-12) << "x the micro-batch weight";
}

// ORPO's own NLL term follows dpo.nll_mean too (TRL's ORPOTrainer: cross-entropy over the batch).
TEST(PreferenceLoss, OrpoNllOverTheMicroBatchTokens) {
  const PairLogps pol{values({-10.0, -2.0}), values({-14.0, -5.0}), values({4, 1}), values({2, 1})};
  PreferenceLossOptions options{PreferenceLoss::orpo, 0.1};
  const at::Tensor per_pair = preference_loss(pol, {}, options).losses;
  options.nll_mean = NllMean::micro_batch_tokens;
  const at::Tensor tokens = preference_loss(pol, {}, options).losses;
  EXPECT_NEAR((tokens - per_pair)[0].item<double>(), 2.4 - 2.5, 1e-12);
  EXPECT_NEAR((tokens - per_pair)[1].item<double>(), 2.4 - 2.0, 1e-12);
}

// dpo.logged_logps = sum (TRL's DPOTrainer): ipo trains on averages but reports sums, and its
// rewards are beta x the summed log-ratios; the loss is unchanged.
TEST(PreferenceLoss, LoggedSumsChangeTheReportNotTheLoss) {
  PreferenceLossOptions options{PreferenceLoss::ipo, 0.1};
  const PreferenceTerms averaged = preference_loss(policy(), reference(), options);
  options.logged_logps = LoggedLogps::sum;
  const PreferenceTerms summed = preference_loss(policy(), reference(), options);
  EXPECT_EQ(summed.losses.item<double>(), averaged.losses.item<double>());
  EXPECT_EQ(summed.chosen_logps.item<double>(), -10.0);
  EXPECT_EQ(summed.rejected_logps.item<double>(), -14.0);
  EXPECT_NEAR(summed.chosen_rewards.item<double>(), 0.1 * (-10.0 + 11.0), 1e-12);
  EXPECT_NEAR(summed.rejected_rewards.item<double>(), 0.1 * (-14.0 + 12.0), 1e-12);
  EXPECT_NEAR(averaged.rejected_rewards.item<double>(), 0.1 * (-7.0 + 6.0), 1e-12);
  options.loss = PreferenceLoss::simpo;
  EXPECT_NEAR(preference_loss(policy(), {}, options).chosen_rewards.item<double>(), 0.1 * -10.0, 1e-12);
}

TEST(PreferenceLoss, WorksPerPairOnBatches) {
  const PairLogps pol{values({-10.0, -5.0}), values({-14.0, -5.0}), values({4, 1}), values({2, 1})};
  const PairLogps ref{values({-11.0, -5.0}), values({-12.0, -5.0}), values({4, 1}), values({2, 1})};
  const at::Tensor losses = preference_loss(pol, ref, {PreferenceLoss::sigmoid, 0.1}).losses;
  ASSERT_EQ(losses.numel(), 2);
  EXPECT_NEAR(losses[0].item<double>(), 0.5543552, 1e-7);
  EXPECT_NEAR(losses[1].item<double>(), std::log(2.0), 1e-12);  // h = 0
}

TEST(PreferenceLoss, UnknownNameNamesTheKey) {
  EXPECT_THROW(parse_enum<PreferenceLoss>("kto", "dpo.loss"), ConfigError);
  try {
    parse_enum<PreferenceLoss>("kto", "dpo.loss");
  } catch (const ConfigError& error) {
    EXPECT_NE(std::string(error.what()).find("dpo.loss = 'kto' is not one of sigmoid|ipo|hinge|simpo|orpo"),
              std::string::npos);
  }
  for (const std::string& name : enum_names<PreferenceLoss>()) {
    EXPECT_STREQ(enum_name(parse_enum<PreferenceLoss>(name, "dpo.loss")), name.c_str()) << "the table reads both ways";
  }
}

TEST(SftLoss, IsTheMeanNllPerCompletionToken) {
  // sequences of 3 and 2 tokens with summed log-probs -6 and -4: 10 / 5
  EXPECT_NEAR(sft_loss(values({-6.0, -4.0}), values({3, 2})).item<double>(), 2.0, 1e-12);
}

}  // namespace
}  // namespace st
