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

std::vector<double> concatenated_values(Communicator& communicator, const std::vector<double>& values) {
  const std::vector<double> counts = all_gather_values(communicator, {static_cast<double>(values.size())});
  const auto most = static_cast<size_t>(*std::max_element(counts.begin(), counts.end()));
  std::vector<double> padded = values;
  padded.resize(most);
  const std::vector<double> all = all_gather_values(communicator, padded);
  std::vector<double> out;
  for (size_t rank = 0; rank < counts.size(); ++rank) {
    const auto first = all.begin() + static_cast<std::ptrdiff_t>(rank * most);
    out.insert(out.end(), first, first + static_cast<std::ptrdiff_t>(counts[rank]));
  }
  return out;
}

double max_over_ranks(Communicator& communicator, double value) {
  const std::vector<double> all = all_gather_values(communicator, {value});
  return *std::max_element(all.begin(), all.end());
}

}  // namespace st
