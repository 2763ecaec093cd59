// The per-micro-batch metrics of the policy-gradient objectives (grpo, rloo), as TRL 1.16's
// GRPOTrainer and RLOOTrainer log them: kl, entropy, the clip ratios and the sampler's
// log-prob differences. A micro-batch's loss fills its columns (fp64 sums on the device, combined
// over the ranks as each MicroMetric says); the logging window turns them into TRL's values.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

#include <nlohmann/json.hpp>

#include "data/collate.h"
#include "train/batch_loss.h"
#include "train/policy_gradient_loss.h"

namespace st {

// The columns, in the order policy_gradient_columns fills them.
std::vector<MicroMetric> policy_gradient_metric_columns();

// Fills `out`'s columns after kOutputSums (resizing it) from the micro-batch's terms, its
// per-token log-probs, loss mask and entropies ([S, T]); the sampler's columns from
// batch.sampling_token_logps (NaN without).
void policy_gradient_columns(const MicroBatch& batch, const PolicyGradientTerms& terms, const at::Tensor& logps,
                             const at::Tensor& mask, const at::Tensor& entropies, std::vector<at::Tensor>& out);

// Which rows a trainer logs: `kl` where its loss has a KL term (GRPO with beta > 0; RLOO logs its
// kl per generation), `sampling` where the completions were sampled (GRPO; not replayed).
struct LoggedPolicyMetrics {
  bool kl = false;
  bool sampling = false;
};

// TRL's values of a window's micro-batches (`combined`: one row of columns each), averaged over
// them leaving NaN out, null when none is left.
void add_policy_gradient_metrics(const std::vector<std::vector<double>>& combined, LoggedPolicyMetrics logged,
                                 nlohmann::ordered_json& record);

}  // namespace st
