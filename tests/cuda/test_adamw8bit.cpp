// cuda/'s fused 8-bit AdamW kernel against its CPU oracle, the host loop of adamw8bit.h (the
// same ShardedAdamW on host shards): masters, codes and absmax equal bit for bit on
// block-aligned shards with weight decay on matrices only and a clip factor read on the device,
// and the compute-dtype copy it writes is the new master rounded once. Skipped without a GPU
// and a CUDA libtorch.
#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <gtest/gtest.h>

#include <vector>

#include "fsdp/unit_layout.h"
#include "hf/presets.h"
#include "optim/sharded_adamw.h"

namespace st {
namespace {

std::vector<at::Tensor> on(const std::vector<at::Tensor>& tensors, const at::Device& device) {
  std::vector<at::Tensor> out;
  for (const at::Tensor& t : tensors) out.push_back(t.to(device).clone());
  return out;
}

TEST(AdamW8bitKernel, EqualsTheHostLoopBitForBit) {
  if (!at::hasCUDA()) GTEST_SKIP() << "needs a GPU and a CUDA libtorch";
  OptimOptions o;
  o.name = OptimizerName::adamw8bit;
  o.weight_decay = 0.1;
  const int group_size = 3, rank = 2;  // the last shard holds the padding
  const std::vector<UnitLayout> units = build_unit_layouts(preset_config("debug"), group_size, 256);
  const DecayedRanges decayed = weight_decay_ranges(units, rank);
  at::manual_seed(7);
  std::vector<at::Tensor> start;
  for (const UnitLayout& unit : units) start.push_back(at::randn({unit.shard_numel}));
  std::vector<at::Tensor> host_masters = on(start, at::kCPU), gpu_masters = on(start, at::kCUDA), copies;
  for (const at::Tensor& master : gpu_masters) copies.push_back(at::zeros_like(master, at::kBFloat16));
  ShardedAdamW host(decayed, o, host_masters), gpu(decayed, o, gpu_masters);
  for (int step = 0; step < 5; ++step) {
    std::vector<at::Tensor> grads;
    for (const at::Tensor& master : start) grads.push_back(at::randn_like(master) * (step % 2 ? 1e-4 : 1.0));
    const double lr = 1e-3 * (step + 1);
    const at::Tensor clip = at::full({1}, step == 4 ? 1.0 : 0.37 / (step + 1));
    host.step(host_masters, grads, lr, clip);
    EXPECT_TRUE(gpu.step(gpu_masters, on(grads, at::kCUDA), lr, clip.to(at::kCUDA), copies));
  }
  for (size_t u = 0; u < units.size(); ++u) {
    const Moments8bit& want = host.moments8bit()[u];
    const Moments8bit& got = gpu.moments8bit()[u];
    EXPECT_TRUE(at::equal(gpu_masters[u].cpu(), host_masters[u])) << "master of " << units[u].name;
    EXPECT_TRUE(at::equal(got.m_codes.cpu(), want.m_codes)) << "m codes of " << units[u].name;
    EXPECT_TRUE(at::equal(got.v_codes.cpu(), want.v_codes)) << "v codes of " << units[u].name;
    EXPECT_TRUE(at::equal(got.m_absmax.cpu(), want.m_absmax)) << "m absmax of " << units[u].name;
    EXPECT_TRUE(at::equal(got.v_absmax.cpu(), want.v_absmax)) << "v absmax of " << units[u].name;
    EXPECT_TRUE(at::equal(copies[u], gpu_masters[u].to(at::kBFloat16))) << "bf16 copy of " << units[u].name;
  }
  EXPECT_EQ(gpu.state_bytes(), host.state_bytes());
}

}  // namespace
}  // namespace st
