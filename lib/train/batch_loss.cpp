#include "train/batch_loss.h"

#include <ATen/ATen.h>

#include "model/token_logp.h"
#include "util/host_sync.h"

namespace st {

LossSums& LossSums::operator+=(const LossSums& o) {
  for (const Field& field : kFields) this->*field.value += o.*field.value;
  return *this;
}

std::vector<double> LossSums::pack() const {
  std::vector<double> values;
  for (const Field& field : kFields) values.push_back(this->*field.value);
  return values;
}

LossSums LossSums::unpack(const double* v) {
  LossSums sums;
  for (const Field& field : kFields) sums.*field.value = *v++;
  return sums;
}

LossSums with_output_sums(LossSums sums, const at::Tensor& host_output_sums) {
  const at::Tensor values = host_output_sums.to(at::kDouble).contiguous();
  const double* v = values.data_ptr<double>();
  for (const LossSums::Field& field : LossSums::kFields) {
    if (field.source == LossSums::Source::output) sums.*field.value += *v++;
  }
  return sums;
}

LossSums MicroBatchResult::read_sums() const { return with_output_sums(counts, read_to_host(output_sums)); }

namespace {

at::Tensor sum_of(const at::Tensor& values) { return values.detach().sum().to(at::kDouble); }

}  // namespace

MicroBatchResult micro_batch_loss(Stage stage, const MicroBatch& batch, const at::Tensor& policy,
                                  const at::Tensor& reference, const PreferenceLossOptions& options,
                                  double step_pairs_per_micro_batch) {
  MicroBatchResult result;
  const bool padding = batch.pairs == 0;
  const auto sums_options = at::TensorOptions(at::kDouble).device(policy.device());
  const at::Tensor zero = at::zeros({}, sums_options);
  std::vector<at::Tensor> outputs(kOutputSums, zero);
  const at::Tensor tokens = to_device_async(batch.target_counts.to(at::kFloat), policy.device());
  if (stage == Stage::sft) {
    result.summed_loss = -policy.sum();
  } else {
    const int64_t rows = policy.size(0) / 2;
    const PairLogps pair{policy.slice(0, 0, rows), policy.slice(0, rows), tokens.slice(0, 0, rows),
                         tokens.slice(0, rows)};
    PairLogps ref;
    if (reference.defined()) {
      const at::Tensor frozen = reference.detach().to(policy.scalar_type());
      ref = {frozen.slice(0, 0, rows), frozen.slice(0, rows), pair.chosen_tokens, pair.rejected_tokens};
    }
    const double micro_batch_weight =
        step_pairs_per_micro_batch > 0.0 && !padding ? step_pairs_per_micro_batch / static_cast<double>(batch.pairs)
                                                    : 1.0;
    const PreferenceTerms terms = preference_loss(pair, ref, options, micro_batch_weight);
    result.summed_loss = terms.losses.sum();
    if (!padding) {
      outputs[output_slot(&LossSums::chosen_rewards)] = sum_of(terms.chosen_rewards);
      outputs[output_slot(&LossSums::rejected_rewards)] = sum_of(terms.rejected_rewards);
      outputs[output_slot(&LossSums::correct)] = sum_of(terms.chosen_rewards.gt(terms.rejected_rewards));
      outputs[output_slot(&LossSums::chosen_logps)] = sum_of(terms.chosen_logps);
      outputs[output_slot(&LossSums::rejected_logps)] = sum_of(terms.rejected_logps);
    }
  }
  if (padding) {
    result.summed_loss = result.summed_loss * 0.0;  // keeps the graph: the backward must still run
    result.output_sums = at::zeros({static_cast<int64_t>(kOutputSums)}, sums_options);
    return result;
  }
  outputs[output_slot(&LossSums::loss)] = sum_of(result.summed_loss);
  result.output_sums = at::stack(outputs);
  result.counts.pairs = static_cast<double>(batch.pairs);
  result.counts.target_tokens = static_cast<double>(batch.target_tokens);
  result.counts.real_tokens = static_cast<double>(batch.real_tokens);
  result.counts.computed_tokens = static_cast<double>(batch.computed_tokens);
  result.counts.padded_tokens = static_cast<double>(batch.padded_tokens);
  return result;
}

MicroBatch padding_micro_batch(Stage stage, int64_t pad_id, bool with_ref_logps) {
  const auto id = static_cast<int32_t>(pad_id);
  Pair pair;
  pair.prompt = {id};
  pair.chosen = {id};
  if (stage == Stage::dpo) pair.rejected = {id};
  if (with_ref_logps) pair.ref_chosen_logp = pair.ref_rejected_logp = 0.0f;
  CollateOptions options;
  options.pad_id = pad_id;
  MicroBatch batch = collate_pairs({pair}, stage == Stage::dpo ? PairKind::dpo : PairKind::sft, options);
  batch.targets.fill_(kIgnoreTarget);
  batch.target_counts.zero_();
  batch.pairs = batch.target_tokens = batch.real_tokens = batch.computed_tokens = 0;
  batch.segment_lengths.assign(batch.segment_lengths.size(), 0);
  return batch;
}

}  // namespace st
