#include "fsdp/expert_group.h"

namespace st {
namespace {

class CommunicatorExpertExchange : public ExpertExchange {
 public:
  explicit CommunicatorExpertExchange(Communicator& group) : group_(group) {}
  int size() const override { return group_.size(); }
  int rank() const override { return group_.rank(); }
  void all_to_all(const at::Tensor& output, const at::Tensor& input, const std::vector<int64_t>& output_rows,
                  const std::vector<int64_t>& input_rows) override {
    group_.all_to_all(output, input, output_rows, input_rows);
  }

 private:
  Communicator& group_;
};

}  // namespace

std::shared_ptr<ExpertExchange> expert_exchange_over(Communicator* group) {
  if (!group) return nullptr;
  return std::make_shared<CommunicatorExpertExchange>(*group);
}

}  // namespace st
