#include "distributed/value_gather.h"

#include <ATen/ATen.h>

#include <algorithm>

namespace st {

std::vector<double> all_gather_values(Communicator& communicator, const std::vector<double>& values) {
  const at::Tensor mine = at::tensor(values, at::kDouble);
  const at::Tensor all = at::empty({mine.numel() * communicator.size()}, at::kDouble);
  communicator.all_gather_into(all, mine);
  return {all.data_ptr<double>(), all.data_ptr<double>() + all.numel()};
}

double max_over_ranks(Communicator& communicator, double value) {
  const std::vector<double> all = all_gather_values(communicator, {value});
  return *std::max_element(all.begin(), all.end());
}

}  // namespace st
