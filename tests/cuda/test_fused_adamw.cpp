// cuda/'s fused AdamW kernel against its libtorch reference (ShardedAdamW with the kernel off)
// on odd shard sizes, with weight decay on matrices only, and the compute-dtype copy it writes
// in the same pass. Skipped without a GPU and a CUDA libtorch.
#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <gtest/gtest.h>

#include <vector>

#include "fsdp/unit_layout.h"
#include "hf/presets.h"
#include "optim/sharded_adamw.h"

namespace st {
namespace {

// One unit: a matrix and a vector whose sizes make odd shards (999,919 + 17 elements).
UnitLayout odd_unit(int group_size) {
  UnitLayout unit;
  unit.name = "layer.0";
  unit.params.push_back({ParamSpec{"weight", {1009, 991}, ParamInit::normal, {}}, 0});
  unit.params.push_back({ParamSpec{"norm", {17}, ParamInit::normal, {}}, 1009 * 991});
  unit.numel = 1009 * 991 + 17;
  unit.padded_numel = (unit.numel + group_size - 1) / group_size * group_size;
  unit.shard_numel = unit.padded_numel / group_size;
  return unit;
}

struct OptimizerRun {
  std::vector<at::Tensor> masters, copies;
  ShardedAdamW optimizer;
  OptimizerRun(const std::vector<UnitLayout>& units, int rank, const OptimOptions& o, const std::vector<at::Tensor>& start)
      : masters(clone(start)), optimizer(weight_decay_ranges(units, rank), o, masters) {
    for (const at::Tensor& master : masters) copies.push_back(at::zeros_like(master, at::kBFloat16));
  }
  static std::vector<at::Tensor> clone(const std::vector<at::Tensor>& tensors) {
    std::vector<at::Tensor> out;
    for (const at::Tensor& t : tensors) out.push_back(t.clone());
    return out;
  }
};

void expect_close(const std::vector<at::Tensor>& got, const std::vector<at::Tensor>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t u = 0; u < got.size(); ++u) {
    const double scale = want[u].abs().max().item<double>();
    const double diff = (got[u] - want[u]).abs().max().item<double>();
    EXPECT_LE(diff, 1e-6 * scale + 1e-9) << what << " of unit " << u << " (" << got[u].numel() << " elements)";
  }
}

TEST(FusedAdamW, MatchesTheLibtorchReferenceOnOddShards) {
  if (!at::hasCUDA()) GTEST_SKIP() << "needs a GPU and a CUDA libtorch";
  OptimOptions o;
  o.weight_decay = 0.1;
  const int group_size = 3, rank = 2;  // the last shard holds the padding
  std::vector<UnitLayout> units = build_unit_layouts(preset_config("debug"), group_size);
  units.push_back(odd_unit(group_size));
  at::manual_seed(7);
  const at::TensorOptions gpu = at::TensorOptions(at::kFloat).device(at::kCUDA);
  std::vector<at::Tensor> start;
  for (const UnitLayout& unit : units) start.push_back(at::randn({unit.shard_numel}, gpu));

  OptimizerRun fused(units, rank, o, start), reference(units, rank, o, start);
  reference.optimizer.use_fused_kernel(false);
  for (int step = 0; step < 3; ++step) {
    std::vector<at::Tensor> grads;
    for (const at::Tensor& master : start) grads.push_back(at::randn_like(master) * (step + 1));
    const double lr = 1e-3 * (step + 1);
    // A clip factor read on the device (1 on the last step: the no-clip case too).
    const at::Tensor clip = at::full({1}, step == 2 ? 1.0 : 0.37 / (step + 1), gpu);
    EXPECT_TRUE(fused.optimizer.step(fused.masters, grads, lr, clip, fused.copies));
    EXPECT_FALSE(reference.optimizer.step(reference.masters, grads, lr, clip, reference.copies));
  }
  expect_close(fused.masters, reference.masters, "master");
  expect_close(fused.optimizer.exp_avg(), reference.optimizer.exp_avg(), "exp_avg");
  expect_close(fused.optimizer.exp_avg_sq(), reference.optimizer.exp_avg_sq(), "exp_avg_sq");
  for (size_t u = 0; u < units.size(); ++u) {  // the copy is the new master, rounded once
    EXPECT_TRUE(at::equal(fused.copies[u], fused.masters[u].to(at::kBFloat16))) << "bf16 copy of unit " << u;
  }
}

TEST(FusedAdamW, WithoutCopiesUpdatesTheMastersAndSaysSo) {
  if (!at::hasCUDA()) GTEST_SKIP() << "needs a GPU and a CUDA libtorch";
  const std::vector<UnitLayout> units{odd_unit(1)};
  const at::Tensor start = at::randn({units[0].shard_numel}, at::TensorOptions(at::kFloat).device(at::kCUDA));
  OptimizerRun fused(units, 0, OptimOptions{}, {start});
  EXPECT_FALSE(fused.optimizer.step(fused.masters, {at::ones_like(start)}, 1e-3));
  EXPECT_FALSE(at::equal(fused.masters[0], start));
}

}  // namespace
}  // namespace st
