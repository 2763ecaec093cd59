// The row layouts every attention path must serve (plain, packed, prompt-shared, packed+shared,
// each also under a sliding window) at odd lengths, and one forward + backward through the
// whole model in a chosen path: the CPU unit tests and the cuda tier compare varlen against
// the masked oracle with these.
#pragma once

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include <string>
#include <vector>

#include "data/collate.h"
#include "hf/model_weights.h"
#include "model/llama_units.h"
#include "prep/synth.h"
#include "relative_diff.h"

namespace st::testing {

struct AttentionLayoutCase {
  const char* name;
  bool packing, share_prompt;
  int64_t window;  // 0: none; else shorter than most sequences, so it cuts
};

inline const std::vector<AttentionLayoutCase>& attention_layout_cases() {
  static const std::vector<AttentionLayoutCase> cases = {
      {"plain", false, false, 0},         {"packed", true, false, 0},
      {"shared", false, true, 0},         {"packed+shared", true, true, 0},
      {"plain, window 5", false, false, 5}, {"packed, window 5", true, false, 5},
      {"shared, window 5", false, true, 5}, {"packed+shared, window 5", true, true, 5}};
  return cases;
}

// `count` DPO pairs of odd, uneven lengths (rejected of other lengths than chosen).
inline std::vector<Pair> uneven_pairs(size_t count, uint64_t seed) {
  SynthOptions synth;
  synth.kind = PairKind::dpo;
  synth.min_length = 3;
  synth.max_length = 23;
  synth.seed = seed;
  const PairTable table = synthesize_pairs(synth, 0, count);
  std::vector<Pair> pairs;
  for (size_t i = 0; i < count; ++i) {
    pairs.push_back(table.at(i));
    if (i % 2 == 0) pairs.back().rejected.push_back(7);
    if (i % 3 == 0) pairs.back().rejected.resize(std::min<size_t>(pairs.back().rejected.size(), 2));
  }
  return pairs;
}

inline MicroBatch layout_case_batch(const std::vector<Pair>& pairs, const AttentionLayoutCase& c) {
  CollateOptions options;
  options.packing = c.packing;
  options.share_prompt = c.share_prompt;
  options.cutoff_len = 61;
  return collate_pairs(pairs, PairKind::dpo, options);
}

struct LogpsAndGrads {
  at::Tensor logps;                // [S] on the host
  std::vector<at::Tensor> grads;   // per parameter, fp32 on the host, in `initial`'s order
};

// Summed log-probs per sequence and the gradients of a weighted sum of them (weights 1..S, so
// every sequence's gradient counts differently), on `device` in `type`; the case's window is the
// model's (its sliding layers' where layers differ).
inline LogpsAndGrads logps_and_grads(ModelConfig config, const TensorMap& initial, const MicroBatch& micro,
                                     const AttentionLayoutCase& c, AttentionPath path, at::Device device,
                                     at::ScalarType type) {
  config.sliding_window = c.window;
  TensorMap tensors;
  for (const auto& [name, tensor] : initial) tensors[name] = tensor.to(device, type).clone().requires_grad_(true);
  const TokenBatch batch =
      make_token_batch(micro.input_ids, micro.targets, model_attention(config, device), type, 64, micro.layout, path);
  const at::Tensor logps = llama_sequence_logps(llama_weights(tensors, config), config, batch);
  const at::Tensor weights = at::arange(1, logps.size(0) + 1, logps.options());
  torch::autograd::backward({(logps * weights).sum()});
  LogpsAndGrads out{logps.detach().to(at::kCPU, at::kDouble), {}};
  for (const auto& entry : initial) out.grads.push_back(tensors.at(entry.first).grad().to(at::kCPU, at::kDouble));
  return out;
}

// Log-probs and every gradient of `got` within `tolerance` (relative, strictly below) of `want`.
inline void expect_logps_and_grads_close(const LogpsAndGrads& got, const LogpsAndGrads& want, double tolerance,
                                         const std::string& label) {
  EXPECT_LT(ST_RELATIVE_DIFF(got.logps, want.logps, tolerance), tolerance) << label;
  ASSERT_EQ(got.grads.size(), want.grads.size()) << label;
  for (size_t i = 0; i < want.grads.size(); ++i) {
    EXPECT_LT(ST_RELATIVE_DIFF(got.grads[i], want.grads[i], tolerance), tolerance) << label << " grad " << i;
  }
}

}  // namespace st::testing
