#include "fsdp/context_group.h"

namespace st {
namespace {

class CommunicatorExchange : public ContextExchange {
 public:
  explicit CommunicatorExchange(Communicator& group) : group_(group) {}
  int size() const override { return group_.size(); }
  int rank() const override { return group_.rank(); }
  void all_gather(const at::Tensor& full, const at::Tensor& part) override { group_.all_gather_into(full, part); }
  void reduce_scatter_sum(const at::Tensor& part, const at::Tensor& full) override {
    group_.reduce_scatter(part, full, ReduceOp::sum);
  }
  void all_reduce_sum(const at::Tensor& tensor) override { group_.all_reduce(tensor, ReduceOp::sum); }

 private:
  Communicator& group_;
};

}  // namespace

std::shared_ptr<ContextExchange> context_exchange_over(Communicator* group) {
  if (!group) return nullptr;
  return std::make_shared<CommunicatorExchange>(*group);
}

}  // namespace st
