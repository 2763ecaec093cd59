// Packed and prompt-shared rows against the plain ones through the whole model (fp32, CPU):
// the same per-token log-probs for every sequence, and for every preference loss (and SFT, KTO
// and a reward model's) the same loss and parameter gradients, with a precomputed and an online
// reference. Also: no
// token sees another sequence, and a shared segment's rejected branch never sees chosen.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include <algorithm>
#include <cstdio>
#include <map>

#include "data/collate.h"
#include "data/pair_dataset.h"
#include "hf/model_weights.h"
#include "hf/presets.h"
#include "model/llama_units.h"
#include "model/reward_positions.h"
#include "prep/synth.h"
#include "objective_sections_for.h"
#include "relative_diff.h"
#include "train/batch_loss.h"
#include "train/objective.h"

namespace st {
namespace {

constexpr double kTolerance = 1e-5;  // relative, fp32

struct Model {
  ModelConfig config = preset_config("debug");
  TensorMap tensors;
  at::Tensor inverse;
  at::ScalarType dtype = at::kFloat;

  // A score head (a reward model) pads with token 0, as collate_pairs does by default.
  explicit Model(uint64_t seed, int64_t sliding_window = 0, ModelHead head = ModelHead::lm)
      : config(with_head(preset_config("debug"), head)), tensors(init_preset_weights(config, seed, at::kFloat)) {
    config.sliding_window = sliding_window;
    inverse = rope_inverse_frequencies(config);
  }
  // The same weights computed in `type` (float64: the judge of two fp32 layouts).
  Model in(at::ScalarType type) const {
    Model copy = *this;
    copy.dtype = type;
    for (auto& [name, tensor] : copy.tensors) tensor = tensor.to(type);
    return copy;
  }
  static ModelConfig with_head(ModelConfig config, ModelHead head) {
    config.head = head;
    config.pad_token_id = 0;
    return config;
  }
  TokenBatch batch(const MicroBatch& micro) const {
    TokenBatch batch = make_token_batch(micro.input_ids, micro.targets, inverse, dtype, 16, micro.layout,
                                        config.sliding_window);
    if (config.head == ModelHead::score) {
      batch.reward_positions = reward_positions(micro.input_ids, micro.targets, micro.layout, config.pad_token_id);
    }
    return batch;
  }
  // Summed log-probs per sequence, or a reward model's rewards.
  at::Tensor sequence_logps(const MicroBatch& micro) const { return outputs(llama_weights(tensors, config), micro); }
  at::Tensor outputs(const LlamaWeights& weights, const MicroBatch& micro) const {
    if (config.head == ModelHead::score) return llama_sequence_rewards(weights, config, batch(micro));
    return llama_sequence_logps(weights, config, batch(micro));
  }
};

std::vector<Pair> varied_pairs(PairKind kind, size_t count) {
  SynthOptions synth;
  synth.kind = kind;
  synth.min_length = 2;
  synth.max_length = 17;
  synth.seed = 5;
  const PairTable table = synthesize_pairs(synth, 0, count);
  std::vector<Pair> pairs;
  for (size_t i = 0; i < count; ++i) {
    pairs.push_back(table.at(i));
    // Rejected responses of other lengths than chosen, so branches differ in length.
    if (kind == PairKind::dpo && i % 2 == 0) pairs.back().rejected.push_back(7);
    if (kind == PairKind::dpo && i % 3 == 0) pairs.back().rejected.resize(2);
    if (kind == PairKind::kto && i % 2 == 0) pairs.back().chosen.push_back(7);  // completions of varied lengths
    pairs.back().ref_chosen_logp = -20.0f - static_cast<float>(i);
    pairs.back().ref_rejected_logp = -24.0f + static_cast<float>(i) / 2;
  }
  // KTO's second sequences: each example's mismatched partner's completion.
  for (size_t i = 0; kind == PairKind::kto && i < count; ++i) {
    pairs[i].rejected = pairs[mismatched_partner(i, count, count)].chosen;
  }
  return pairs;
}

// Per sequence, its targets' log-probs in position order.
std::map<int64_t, at::Tensor> per_sequence_token_logps(const Model& model, const MicroBatch& micro) {
  const TokenBatch batch = model.batch(micro);
  const at::Tensor logps = llama_target_logps(llama_weights(model.tensors, model.config), model.config, batch);
  const at::Tensor sequence = batch.target_slots.div(micro.input_ids.size(1), "floor");
  std::map<int64_t, at::Tensor> out;
  for (int64_t s = 0; s < micro.sequences(); ++s) out[s] = logps.masked_select(sequence.eq(s));
  return out;
}

struct Layout {
  const char* name;
  bool packing, share_prompt;
};
const Layout kLayouts[] = {{"packed", true, false}, {"shared", false, true}, {"packed+shared", true, true}};

CollateOptions options_of(const Layout& layout) {
  CollateOptions options;
  options.packing = layout.packing;
  options.share_prompt = layout.share_prompt;
  options.cutoff_len = 40;
  return options;
}

void expect_layouts_equal_plain_rows(const Model& model) {
  for (const PairKind kind : {PairKind::dpo, PairKind::sft}) {
    const std::vector<Pair> pairs = varied_pairs(kind, 6);
    const MicroBatch plain = collate_pairs(pairs, kind, options_of({"plain", false, false}));
    const auto expected = per_sequence_token_logps(model, plain);
    for (const Layout& layout : kLayouts) {
      if (kind == PairKind::sft && !layout.packing) continue;
      const MicroBatch laid = collate_pairs(pairs, kind, options_of(layout));
      ASSERT_TRUE(laid.layout.defined());
      const auto got = per_sequence_token_logps(model, laid);
      ASSERT_EQ(got.size(), expected.size());
      for (const auto& [sequence, logps] : expected) {
        ASSERT_EQ(got.at(sequence).numel(), logps.numel()) << layout.name << " sequence " << sequence;
        EXPECT_LT(ST_RELATIVE_DIFF(got.at(sequence), logps, kTolerance), kTolerance)
            << layout.name << " sequence " << sequence;
      }
      EXPECT_LT(ST_RELATIVE_DIFF(model.sequence_logps(laid), model.sequence_logps(plain), kTolerance), kTolerance)
          << layout.name;
    }
  }
}

TEST(PackedEquivalence, EveryTokenLogpEqualsThePlainRows) { expect_layouts_equal_plain_rows(Model(3)); }

// Mistral's window (5 tokens, shorter than most sequences here) counts positions within each
// sequence, so packed and prompt-shared rows keep it as the plain rows do; and it does cut.
TEST(PackedEquivalence, SlidingWindowHoldsInEveryLayout) {
  const Model windowed(3, 5);
  expect_layouts_equal_plain_rows(windowed);
  const MicroBatch plain = collate_pairs(varied_pairs(PairKind::dpo, 6), PairKind::dpo, options_of({"plain", false, false}));
  EXPECT_EQ(windowed.batch(plain).positions.spans.window, 5);
  EXPECT_GT(testing::relative_max_diff(windowed.sequence_logps(plain), Model(3).sequence_logps(plain)), 1e-3);
}

struct LossCase {
  const char* name;
  Stage stage;
  ObjectiveSections options;
  bool online_reference;
};

// The summed loss of one micro-batch and the gradient of every parameter.
std::pair<at::Tensor, std::map<std::string, at::Tensor>> loss_and_gradients(const Model& policy, const Model& reference,
                                                                            const MicroBatch& micro,
                                                                            const LossCase& c) {
  TensorMap tensors;
  for (const auto& [name, tensor] : policy.tensors) tensors[name] = tensor.detach().clone().requires_grad_(true);
  at::Tensor reference_logps;
  if (c.stage != Stage::sft && c.stage != Stage::rm) {  // the others take a reference
    reference_logps = c.online_reference ? reference.sequence_logps(micro).detach() : micro.ref_logps;
  }
  const at::Tensor logps = policy.outputs(llama_weights(tensors, policy.config), micro);
  const MicroBatchResult result = objective_for(c.stage).micro_batch_loss(micro, logps, reference_logps, c.options);
  torch::autograd::backward({result.summed_loss});
  std::map<std::string, at::Tensor> grads;
  for (const auto& [name, tensor] : tensors) grads[name] = tensor.grad();
  return {result.summed_loss.detach(), grads};
}

// The loss and every parameter's gradient of packed and prompt-shared rows, judged by the plain
// rows' float64 values (ST_ROUNDINGS): both layouts are fp32 sums of the same terms in other
// orders (a fixed 1e-5 showed 1.6e-6 here, 6x). The losses are judged as a curve over the cases
// of one layout, since a single value's distance from float64 may happen to be nearly 0.
TEST(PackedEquivalence, LossesAndGradientsEqualThePlainRowsForEveryObjective) {
  const Model policy(3), reference(4);
  const Model policy64 = policy.in(at::kDouble);
  std::vector<LossCase> cases;
  for (const PreferenceLoss loss :
       {PreferenceLoss::sigmoid, PreferenceLoss::ipo, PreferenceLoss::hinge, PreferenceLoss::simpo, PreferenceLoss::orpo}) {
    cases.push_back({enum_name(loss), Stage::dpo, testing::dpo_sections(loss), false});
  }
  ObjectiveSections ftx = testing::dpo_sections(PreferenceLoss::sigmoid);
  ftx.dpo.ftx = 1.0;
  cases.push_back({"sigmoid+ftx", Stage::dpo, ftx, false});
  cases.push_back({"sigmoid, online reference", Stage::dpo, testing::dpo_sections(PreferenceLoss::sigmoid), true});
  cases.push_back({"sft", Stage::sft, {}, false});
  ObjectiveSections kto;
  kto.kto.undesirable_weight = 1.5;
  cases.push_back({"kto, online reference", Stage::kto, kto, true});
  ObjectiveSections centred;
  centred.rm.center_rewards_coefficient = 0.01;
  cases.push_back({"rm, centred", Stage::rm, centred, false});
  const Model reward_model(3, 0, ModelHead::score);
  const Model reward_model64 = reward_model.in(at::kDouble);
  using testing::kOtherOrderRoundings;
  // Per layout, the losses over the cases it applies to: the layout's, the plain rows' and theirs in float64.
  std::map<std::string, std::vector<at::Tensor>> got_losses, plain_losses, plain_losses64;
  for (const LossCase& c : cases) {
    const bool scores = objective_for(c.stage).model_head() == ModelHead::score;
    const Model& trained = scores ? reward_model : policy;
    const Model& trained64 = scores ? reward_model64 : policy64;
    const PairKind kind = objective_for(c.stage).example_kind();
    const std::vector<Pair> pairs = varied_pairs(kind, 5);
    const MicroBatch plain = collate_pairs(pairs, kind, options_of({"plain", false, false}));
    const auto expected = loss_and_gradients(trained, reference, plain, c);
    const auto exact = loss_and_gradients(trained64, reference, plain, c);
    for (const Layout& layout : kLayouts) {
      if (kind == PairKind::sft && !layout.packing) continue;
      const auto got = loss_and_gradients(trained, reference, collate_pairs(pairs, kind, options_of(layout)), c);
      const std::string label = std::string(c.name) + ", " + layout.name;
      got_losses[layout.name].push_back(got.first);
      plain_losses[layout.name].push_back(expected.first);
      plain_losses64[layout.name].push_back(exact.first);
      for (const auto& [name, grad] : expected.second) {
        ASSERT_TRUE(grad.defined()) << name;
        EXPECT_LT(ST_ROUNDINGS(got.second.at(name), grad, exact.second.at(name), kOtherOrderRoundings),
                  kOtherOrderRoundings)
            << label << ": " << name;
      }
    }
  }
  for (const Layout& layout : kLayouts) {
    EXPECT_LT(ST_ROUNDINGS(at::stack(got_losses[layout.name]), at::stack(plain_losses[layout.name]),
                           at::stack(plain_losses64[layout.name]), kOtherOrderRoundings),
              kOtherOrderRoundings)
        << layout.name;
  }
}

// The bound above catches a real error: packed rows that score one target token less move some
// parameter's gradient by far more than 50 of the plain rows' roundings.
TEST(PackedEquivalence, ALostTokenLandsFarPastTheRoundingBound) {
  const Model policy(3), reference(4);
  const LossCase sigmoid{"sigmoid", Stage::dpo, testing::dpo_sections(PreferenceLoss::sigmoid), false};
  const std::vector<Pair> pairs = varied_pairs(PairKind::dpo, 5);
  const MicroBatch plain = collate_pairs(pairs, PairKind::dpo, options_of({"plain", false, false}));
  const auto expected = loss_and_gradients(policy, reference, plain, sigmoid);
  const auto exact = loss_and_gradients(policy.in(at::kDouble), reference, plain, sigmoid);
  MicroBatch packed = collate_pairs(pairs, PairKind::dpo, options_of(kLayouts[0]));
  packed.targets = packed.targets.clone();
  const int64_t last = packed.targets[0].ne(kIgnoreTarget).nonzero().max().item<int64_t>();
  packed.targets[0][last] = kIgnoreTarget;
  const auto lost = loss_and_gradients(policy, reference, packed, sigmoid);
  double worst = 0;
  for (const auto& [name, grad] : expected.second) {
    worst = std::max(worst, testing::rounding_ratio(lost.second.at(name), grad, exact.second.at(name)));
  }
  EXPECT_GT(worst, 10 * testing::kOtherOrderRoundings);
  std::printf("one lost target token: %.3g roundings\n", worst);
}

// Packing that finds nothing to pack (every sequence longer than half a row) leaves plain
// causal rows: neither spans nor a mask, the fast kernels, the same log-probs.
TEST(PackedEquivalence, RowsOfOneSequenceRunWithoutAMask) {
  const Model model(3);
  const std::vector<Pair> pairs = varied_pairs(PairKind::sft, 3);
  CollateOptions options;
  options.packing = true;
  options.cutoff_len = 40;
  options.max_tokens = 1;  // rows as long as the longest sequence: one sequence each
  const MicroBatch packed = collate_pairs(pairs, PairKind::sft, options);
  ASSERT_EQ(packed.input_ids.size(0), 3);
  EXPECT_FALSE(model.batch(packed).positions.attention_mask.defined());
  EXPECT_FALSE(model.batch(packed).positions.spans.defined());
  const MicroBatch plain = collate_pairs(pairs, PairKind::sft, options_of({"plain", false, false}));
  EXPECT_LT(ST_RELATIVE_DIFF(model.sequence_logps(packed), model.sequence_logps(plain), kTolerance), kTolerance);
  options.max_tokens = 0;
  options.cutoff_len = 200;  // one row holds all three: three spans
  EXPECT_EQ(model.batch(collate_pairs(pairs, PairKind::sft, options)).positions.spans.count(), 3);
}

// Changing one sequence's tokens leaves every other sequence's log-prob exactly as it was.
TEST(PackedEquivalence, AttentionNeverCrossesSequencesOrBranches) {
  const Model model(3);
  std::vector<Pair> pairs = varied_pairs(PairKind::dpo, 4);
  const CollateOptions options = options_of(kLayouts[2]);
  const at::Tensor before = model.sequence_logps(collate_pairs(pairs, PairKind::dpo, options));
  for (int32_t& token : pairs[1].chosen) token = 3 + (token * 7) % 100;  // pair 1's chosen only
  const at::Tensor after = model.sequence_logps(collate_pairs(pairs, PairKind::dpo, options));
  const int64_t count = static_cast<int64_t>(pairs.size());
  for (int64_t s = 0; s < 2 * count; ++s) {
    if (s == 1) {
      EXPECT_NE(after[s].item<float>(), before[s].item<float>()) << "the changed sequence must change";
      continue;
    }
    // Bit-equal where the placement did not change; it does not here (same lengths).
    EXPECT_EQ(after[s].item<float>(), before[s].item<float>()) << "sequence " << s << " saw pair 1's chosen";
  }
}

}  // namespace
}  // namespace st
