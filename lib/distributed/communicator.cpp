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

std::string describe_collective(const char* operation, const at::Tensor& tensor,
                                const char* detail) {
  std::string text = std::string(operation) + "(";
  if (detail) text += std::string(detail) + ", ";
  text += std::string(c10::toString(tensor.scalar_type())) + " x " +
          std::to_string(tensor.numel()) + ")";
  return text;
}

}  // namespace st
