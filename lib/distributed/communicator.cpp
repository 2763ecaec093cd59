// Backend-independent pieces of the Communicator interface.
#include "distributed/communicator.h"

#include <stdexcept>

namespace st {

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::avg: return "avg";
    case ReduceOp::max: return "max";
  }
  return "?";
}

Work& Work::operator=(Work&& other) noexcept {
  if (this != &other) {
    wait();
    finish_ = std::move(other.finish_);
    other.finish_ = nullptr;
  }
  return *this;
}

void Work::wait() {
  if (!finish_) return;
  auto finish = std::move(finish_);
  finish_ = nullptr;
  finish();
}

void check_gather_shapes(const char* operation, const at::Tensor& full, const at::Tensor& shard,
                         int group_size) {
  const std::string name = operation;
  if (!full.is_contiguous() || !shard.is_contiguous()) {
    throw std::invalid_argument(name + ": tensors must be contiguous");
  }
  if (full.scalar_type() != shard.scalar_type()) {
    throw std::invalid_argument(name + ": full is " + std::string(c10::toString(full.scalar_type())) +
                                " but shard is " + c10::toString(shard.scalar_type()));
  }
  if (full.numel() != shard.numel() * group_size) {
    throw std::invalid_argument(name + ": full has " + std::to_string(full.numel()) +
                                " elements, expected shard (" + std::to_string(shard.numel()) +
                                ") x ranks (" + std::to_string(group_size) + ")");
  }
  if (full.device() != shard.device()) {
    throw std::invalid_argument(name + ": full and shard are on different devices");
  }
}

int64_t check_all_to_all_shapes(const at::Tensor& output, const at::Tensor& input,
                                const std::vector<int64_t>& output_rows, const std::vector<int64_t>& input_rows,
                                int group_size) {
  const std::string name = "all_to_all";
  if (!output.is_contiguous() || !input.is_contiguous()) throw std::invalid_argument(name + ": tensors must be contiguous");
  if (output.scalar_type() != input.scalar_type() || output.device() != input.device()) {
    throw std::invalid_argument(name + ": output and input differ in dtype or device");
  }
  if (output.dim() == 0 || input.dim() == 0 || output.sizes().slice(1) != input.sizes().slice(1)) {
    throw std::invalid_argument(name + ": output and input need rows of one shape");
  }
  const auto side = [&](const char* which, const at::Tensor& tensor, const std::vector<int64_t>& rows) {
    if (static_cast<int>(rows.size()) != group_size) {
      throw std::invalid_argument(name + ": " + which + " counts " + std::to_string(rows.size()) + " ranks of " +
                                  std::to_string(group_size));
    }
    int64_t total = 0;
    for (int64_t count : rows) {
      if (count < 0) throw std::invalid_argument(name + ": a negative " + which + " count");
      total += count;
    }
    if (total != tensor.size(0)) {
      throw std::invalid_argument(name + ": " + which + " counts sum to " + std::to_string(total) + " rows, the tensor has " +
                                  std::to_string(tensor.size(0)));
    }
  };
  side("output", output, output_rows);
  side("input", input, input_rows);
  int64_t row = 1;
  for (int64_t size : input.sizes().slice(1)) row *= size;
  if (row == 0) throw std::invalid_argument(name + ": rows of no elements");
  return row;
}

std::string describe_collective(const char* operation, const at::Tensor& tensor,
                                const char* detail) {
  std::string text = std::string(operation) + "(";
  if (detail) text += std::string(detail) + ", ";
  text += std::string(c10::toString(tensor.scalar_type())) + " x " +
          std::to_string(tensor.numel()) + ")";
  return text;
}

}  // namespace st
