#include "dist/value_gather.h"

#include <ATen/ATen.h>

namespace st {

std::vector<double> all_gather_values(Communicator& communicator, const std::vector<double>& values) {
  const at::Tensor mine = at::tensor(values, at::kDouble);
  const at::Tensor all = at::empty({mine.numel() * communicator.size()}, at::kDouble);
  communicator.all_gather_into(all, mine);
  return {all.data_ptr<double>(), all.data_ptr<double>() + all.numel()};
}

}  // namespace st
