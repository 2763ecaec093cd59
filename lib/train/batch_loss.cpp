#include "train/batch_loss.h"

#include <ATen/ATen.h>

#include "data/padded_rows.h"
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

MicroBatch padding_micro_batch(PairKind kind, int64_t pad_id, bool with_ref_logps) {
  const auto id = static_cast<int32_t>(pad_id);
  Pair pair;
  pair.prompt = {id};
  pair.chosen = {id};
  if (sequences_of(kind) > 1) pair.rejected = {id};
  if (with_ref_logps) pair.ref_chosen_logp = pair.ref_rejected_logp = 0.0f;
  CollateOptions options;
  options.pad_id = pad_id;
  MicroBatch batch = collate_pairs({pair}, kind, options);
  batch.targets.fill_(kIgnoreTarget);
  batch.target_counts.zero_();
  batch.token_weights.zero_();
  batch.pairs = batch.target_tokens = batch.real_tokens = batch.computed_tokens = 0;
  batch.segment_lengths.assign(batch.segment_lengths.size(), 0);
  return batch;
}

}  // namespace st
