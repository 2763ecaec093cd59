#include "train/batch_loss.h"

#include <ATen/ATen.h>

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

}  // namespace st
