// The memory plan of a QLoRA run on GPUs: an untied embedding that no other rank shares stays
// in host memory (lora.host_embedding), and the bar holds: 8B QLoRA DPO at seq 2048,
// micro-batch 1 (two rows), on one 8 GiB GPU.
#include <gtest/gtest.h>

#include "fsdp/memory_estimate.h"
#include "hf/presets.h"

namespace st {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

EstimateInputs qlora_on_gpus(int64_t ranks) {
  EstimateInputs in;
  in.ranks_per_node = ranks;
  in.compute_bytes = 2;
  in.micro_batch_rows = 2;
  in.seq_len = 2048;
  in.logp_chunk_tokens = 256;
  in.recompute = Recompute::full;
  in.adapters = {16, lora_targets("q,k,v,o"), /*quantized=*/true, /*double_quant=*/true};
  return in;
}

// What moving the embedding off the device changes: device minus, host plus.
struct Moved {
  int64_t device = 0, host = 0;
};
Moved moved_by_host_embedding(const ModelConfig& config, EstimateInputs in) {
  in.adapters.host_embedding = false;
  const MemoryEstimate on_device = estimate_memory(config, in);
  in.adapters.host_embedding = true;
  const MemoryEstimate on_host = estimate_memory(config, in);
  EXPECT_EQ(on_host.frozen_host_bytes, on_device.device_states - on_host.device_states);
  EXPECT_EQ(on_host.params, on_device.params);  // still a parameter of the run, only elsewhere
  return {on_device.per_device - on_host.per_device, on_host.host_states - on_device.host_states};
}

TEST(QloraEstimate, OneGpuKeepsTheEmbeddingTableOnTheHost) {
  const ModelConfig eight_b = preset_config("llama-3.1-8b");
  const int64_t table = eight_b.vocab_size * eight_b.hidden_size * 2;  // bf16
  for (const bool quantized : {true, false}) {  // QLoRA and LoRA alike
    EstimateInputs in = qlora_on_gpus(1);
    in.adapters.quantized = quantized;
    const Moved moved = moved_by_host_embedding(eight_b, in);
    EXPECT_EQ(moved.device, table) << (quantized ? "qlora" : "lora");
    EXPECT_EQ(moved.host, table) << (quantized ? "qlora" : "lora");
  }
}

TEST(QloraEstimate, TheEmbeddingStaysOnTheDeviceWhereItIsSharedOrGathered) {
  const ModelConfig eight_b = preset_config("llama-3.1-8b");
  EXPECT_EQ(moved_by_host_embedding(eight_b, qlora_on_gpus(2)).device, 0);  // gathered from 2 shards
  EstimateInputs cpu = qlora_on_gpus(1);
  cpu.on_gpu = false;
  EXPECT_EQ(moved_by_host_embedding(eight_b, cpu).device, 0);  // all host memory already
  const ModelConfig tied = preset_config("llama-3.2-1b");  // the head multiplies by the table
  ASSERT_TRUE(tied.tie_word_embeddings);
  EXPECT_EQ(moved_by_host_embedding(tied, qlora_on_gpus(1)).device, 0);
}

TEST(QloraEstimate, EightBillionDpoAtSeq2048FitsEightGiB) {
  const MemoryEstimate e = estimate_memory(preset_config("llama-3.1-8b"), qlora_on_gpus(1));
  EXPECT_LE(e.per_device, 8 * kGiB) << static_cast<double>(e.per_device) / static_cast<double>(kGiB) << " GiB";
}

// The other bar: 70B QLoRA DPO at seq 2048 fits two 80 GiB GPUs, and more so 2 x 8.
TEST(QloraEstimate, SeventyBillionDpoAtSeq2048FitsTwoEightyGiBGpus) {
  const ModelConfig seventy_b = preset_config("llama-3.1-70b");
  const MemoryEstimate two = estimate_memory(seventy_b, qlora_on_gpus(2));
  EXPECT_LE(two.per_device, 80 * kGiB) << static_cast<double>(two.per_device) / static_cast<double>(kGiB) << " GiB";
  EstimateInputs sixteen = qlora_on_gpus(8);
  sixteen.nodes = 2;
  EXPECT_LT(estimate_memory(seventy_b, sixteen).per_device, two.per_device);
}

}  // namespace
}  // namespace st
