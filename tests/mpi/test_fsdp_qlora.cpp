// QLoRA on the FSDP engine: the base held as NF4 shards that each rank quantized alone equals
// every projection weight quantized whole (codes and values, with and without double
// quantization), on 1-4 ranks; and LoRA through that base equals single-process autograd on the
// whole model whose projection weights are the dequantized NF4 ones (fp32, rel 1e-5) for every
// sharding strategy and recompute policy. The base alone is the DPO reference, and only the
// adapters hold gradients; the base is gathered as bytes.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "data/collate.h"
#include "fsdp/fsdp_model.h"
#include "fsdp/memory_estimate.h"
#include "fsdp/shard_source.h"
#include "fsdp_test_support.h"
#include "hf/model_weights.h"
#include "hf/presets.h"
#include "hf/safetensors_writer.h"
#include "model/model_source.h"
#include "model/nf4.h"
#include "mpi_test_main.h"

namespace st {
namespace {

using namespace st::testing;

constexpr uint64_t kSeed = kAdapterSeed;
constexpr int64_t kRank = kAdapterRank;
constexpr double kScale = kAdapterScale;
constexpr int64_t kChunk = kAdapterChunk;
const char* const kPreset = "debug";

LoraOptions test_lora(bool double_quant) {
  LoraOptions lora;
  lora.r = kRank;
  lora.target_modules = kAdapterTargets;
  lora.seed = kSeed;
  lora.double_quant = double_quant;
  return lora;
}

// One weight quantized whole as bitsandbytes does, then dequantized in fp32.
Nf4Tensor whole_nf4(const at::Tensor& weight, bool double_quant) {
  Nf4Tensor nf4 = nf4_quantize(weight);
  if (double_quant) {
    const auto offset = static_cast<float>(nf4.absmax.to(at::kDouble).mean().item<double>());
    nf4.absmax = dequantize_absmax(quantize_absmax(nf4.absmax, offset));
  }
  return nf4;
}

// The preset's weights with every projection weight replaced by its NF4 round trip.
TensorMap dequantized_weights(const ModelConfig& config, bool double_quant) {
  TensorMap weights = init_preset_weights(config, kSeed, at::kFloat);
  for (const ParamSpec& spec : all_params(config)) {
    if (!is_projection_weight(spec.key)) continue;
    weights[spec.name] = nf4_dequantize(whole_nf4(weights.at(spec.name), double_quant), at::kFloat).view(spec.shape);
  }
  return weights;
}

struct QloraRun {
  ModelConfig config = preset_config(kPreset);
  ShardingGroups groups;
  std::unique_ptr<FsdpModel> model;

  QloraRun(Sharding sharding, const TensorMap& adapters, Recompute policy, bool double_quant = true)
      : groups(test_groups(sharding)) {
    ModelShards shards =
        qlora_model_shards("", kPreset, kSeed, test_lora(double_quant), at::kFloat, at::kCPU, *groups.shard);
    for (size_t u = 0; u < shards.units.size(); ++u) {
      shards.masters[u] = expected_shard(shards.units[u], groups.shard->rank(),
                                         [&](const ParamSlot& slot) { return adapters.at(slot.spec.name); });
    }
    FsdpModelOptions options{at::kFloat, at::kFloat, at::kCPU, kChunk};
    options.adapter = {kScale, 0.0, 5};
    options.recompute.assign(shards.units.size(), policy);
    model = std::make_unique<FsdpModel>(config, shards.units, groups, std::move(shards.masters), options,
                                        std::move(shards.base));
  }
};

// Odd shapes: weights of 800 and 2080 elements end in half blocks, and a rank's blocks cross
// weights. Rank 0 writes them as a checkpoint every rank reads its own blocks of.
ModelConfig odd_config() {
  ModelConfig config = preset_config(kPreset);
  config.vocab_size = 515;  // the test pairs use ids below 512
  config.hidden_size = 40;
  config.intermediate_size = 52;
  config.num_attention_heads = 4;
  config.num_key_value_heads = 2;
  config.head_dim = 10;
  config.tie_word_embeddings = false;
  return config;
}

std::string write_odd_checkpoint() {
  namespace fs = std::filesystem;
  const std::string directory = fs::temp_directory_path() / ("st_qlora_" + std::to_string(::getppid()));
  if (world_communicator().rank() == 0) {
    const ModelConfig config = odd_config();
    fs::remove_all(directory);
    fs::create_directories(directory);
    std::ofstream(directory + "/config.json") << to_hf_config_json(config).dump(2);
    const TensorMap weights = init_preset_weights(config, kSeed, at::kFloat);
    std::vector<std::pair<std::string, at::Tensor>> tensors;
    for (const auto& spec : all_params(config)) tensors.emplace_back(spec.name, weights.at(spec.name));
    write_safetensors_checkpoint(directory, tensors, 1ull << 30);
  }
  world_communicator().barrier();
  return directory;
}

// The odd model as transformers + bitsandbytes save it in 4 bits (quantized whole, here).
std::string write_nf4_checkpoint(bool double_quant) {
  namespace fs = std::filesystem;
  const std::string directory =
      fs::temp_directory_path() / ("st_qlora_nf4_" + std::to_string(double_quant) + "_" + std::to_string(::getppid()));
  if (world_communicator().rank() == 0) {
    const ModelConfig config = odd_config();
    fs::remove_all(directory);
    fs::create_directories(directory);
    nlohmann::json json = to_hf_config_json(config);
    json["quantization_config"] = {{"quant_method", "bitsandbytes"},        {"load_in_4bit", true},
                                   {"load_in_8bit", false},                 {"bnb_4bit_quant_type", "nf4"},
                                   {"bnb_4bit_use_double_quant", double_quant}, {"bnb_4bit_compute_dtype", "float32"}};
    std::ofstream(directory + "/config.json") << json.dump(2);
    const TensorMap weights = init_preset_weights(config, kSeed, at::kFloat);
    std::vector<std::pair<std::string, at::Tensor>> tensors;
    for (const auto& spec : all_params(config)) {
      const at::Tensor& weight = weights.at(spec.name);
      if (!is_projection_weight(spec.key)) {
        tensors.emplace_back(spec.name, weight);
        continue;
      }
      const Nf4Tensor nf4 = nf4_quantize(weight);
      nlohmann::json state = {{"quant_type", "nf4"}, {"blocksize", 64}, {"dtype", "float32"}, {"shape", spec.shape}};
      tensors.emplace_back(spec.name, nf4.codes.view({-1, 1}));
      if (double_quant) {
        const auto offset = static_cast<float>(nf4.absmax.to(at::kDouble).mean().item<double>());
        const QuantizedAbsmax nested = quantize_absmax(nf4.absmax, offset);
        tensors.emplace_back(spec.name + ".absmax", nested.codes);
        tensors.emplace_back(spec.name + ".nested_absmax", nested.absmax);
        tensors.emplace_back(spec.name + ".nested_quant_map", dynamic_map());
        state.update({{"nested_blocksize", 256}, {"nested_dtype", "float32"}, {"nested_offset", offset}});
      } else {
        tensors.emplace_back(spec.name + ".absmax", nf4.absmax);
      }
      tensors.emplace_back(spec.name + ".quant_map", at::tensor(at::ArrayRef<float>(kNf4Codes, 16)));
      const std::string text = state.dump();
      tensors.emplace_back(spec.name + ".quant_state.bitsandbytes__nf4",
                           at::tensor(std::vector<uint8_t>(text.begin(), text.end())));
    }
    write_safetensors_checkpoint(directory, tensors, 1ull << 30);
  }
  world_communicator().barrier();
  return directory;
}

struct BaseCase {
  bool double_quant;
  bool odd_checkpoint;  // else the debug preset
};

class QloraBase : public ::testing::TestWithParam<BaseCase> {};

TEST_P(QloraBase, ShardsQuantizedApartEqualEachWeightQuantizedWhole) {
  const auto [double_quant, odd] = GetParam();
  const ModelConfig config = odd ? odd_config() : preset_config(kPreset);
  const std::string path = odd ? write_odd_checkpoint() : "";
  const TensorMap weights = init_preset_weights(config, kSeed, at::kFloat);
  ShardingGroups groups = test_groups(Sharding::full);
  Communicator& group = *groups.shard;
  const ModelShards shards =
      qlora_model_shards(path, odd ? "" : kPreset, kSeed, test_lora(double_quant), at::kFloat, at::kCPU, group);
  ASSERT_TRUE(shards.base.is_quantized());
  int projections = 0;
  for (size_t u = 0; u < shards.base.shards.size(); ++u) {
    const QuantizedUnit& unit = shards.base.quantized[u];
    const at::Tensor& shard = shards.base.shards[u];
    ASSERT_EQ(shard.numel(), unit.layout.shard_bytes);
    at::Tensor gathered = at::empty({shard.numel() * group.size()}, shard.options());
    group.all_gather_into_async(gathered, shard).wait();
    const at::Tensor rows = gathered.view({group.size(), unit.layout.shard_bytes});
    const at::Tensor codes = rows.narrow(1, 0, unit.layout.shard_blocks() * kNf4BlockSize / 2).reshape({-1});
    const at::Tensor flat = dequantize_unit(unit, gathered, at::kFloat);
    for (const ParamSlot& slot : unit.layout.bound.params) {
      const at::Tensor whole = weights.at(slot.spec.name).reshape({-1});
      const at::Tensor values = flat.narrow(0, slot.offset, slot.spec.numel());
      if (!is_projection_weight(slot.spec.key)) {
        EXPECT_TRUE(at::equal(values, whole)) << slot.spec.name;
        continue;
      }
      ++projections;
      EXPECT_EQ(slot.offset % kNf4BlockSize, 0) << slot.spec.name;
      const Nf4Tensor expected = whole_nf4(whole, double_quant);
      EXPECT_TRUE(at::equal(codes.narrow(0, slot.offset / 2, expected.codes.numel()), expected.codes)) << slot.spec.name;
      EXPECT_TRUE(at::equal(values, nf4_dequantize(expected, at::kFloat))) << slot.spec.name;
    }
  }
  EXPECT_EQ(projections, 7 * config.num_hidden_layers);
  world_communicator().barrier();
  if (odd && world_communicator().rank() == 0) std::filesystem::remove_all(path);
}

INSTANTIATE_TEST_SUITE_P(PresetAndOddShapes, QloraBase,
                         ::testing::Values(BaseCase{false, false}, BaseCase{true, false}, BaseCase{false, true},
                                           BaseCase{true, true}));

// Read as stored, a 4-bit checkpoint gives the very shards that quantizing its full-precision
// source gives, and the base scores like that source within the NF4 error.
TEST_P(QloraBase, ABitsandbytesCheckpointReadsAsTheShardsOfItsSource) {
  const auto [double_quant, odd] = GetParam();
  if (!odd) GTEST_SKIP() << "the 4-bit checkpoint is written for the odd shapes";
  const std::string source = write_odd_checkpoint(), stored = write_nf4_checkpoint(double_quant);
  ShardingGroups groups = test_groups(Sharding::full);
  const LoraOptions lora = test_lora(double_quant);
  ModelShards expected = qlora_model_shards(source, "", kSeed, lora, at::kFloat, at::kCPU, *groups.shard);
  ModelShards read = qlora_model_shards(stored, "", kSeed, lora, at::kFloat, at::kCPU, *groups.shard);
  ASSERT_EQ(read.base.shards.size(), expected.base.shards.size());
  for (size_t u = 0; u < read.base.shards.size(); ++u) {
    EXPECT_TRUE(at::equal(read.base.shards[u], expected.base.shards[u])) << read.base.units[u].name;
    EXPECT_EQ(read.base.quantized[u].statistics.offsets, expected.base.quantized[u].statistics.offsets);
    if (double_quant) {
      EXPECT_TRUE(at::equal(read.base.quantized[u].statistics.nested_absmax,
                            expected.base.quantized[u].statistics.nested_absmax));
    }
  }
  const ModelConfig config = odd_config();
  FsdpModelOptions options{at::kFloat, at::kFloat, at::kCPU, kChunk};
  FsdpModel model(config, read.units, groups, std::move(read.masters), options, std::move(read.base));
  const at::NoGradGuard no_grad;
  const at::Tensor full = my_rows(dense_logps(config, init_preset_weights(config, kSeed, at::kFloat), 0.0),
                                  adapter_test_pairs().size());
  const at::Tensor base_logps = engine_logps(model, /*base_only=*/true);
  const double error = relative_max_diff(base_logps, full);
  EXPECT_GT(error, 0.0);  // 4 bits are not the source
  EXPECT_LT(error, 0.05);
  // score, generate and eval load the checkpoint whole, its NF4 weights dequantized: the very
  // weights the QLoRA base computes with, and so its log-probs.
  const LoadedModel loaded = load_model(stored, "", 0, at::kFloat);
  const TensorMap source_weights = init_preset_weights(config, kSeed, at::kFloat);
  for (const ParamSpec& spec : all_params(config)) {
    const at::Tensor& source_weight = source_weights.at(spec.name);
    const at::Tensor expected_weight =
        is_projection_weight(spec.key)
            ? nf4_dequantize(whole_nf4(source_weight, double_quant), at::kFloat).view(spec.shape)
            : source_weight;
    EXPECT_TRUE(at::equal(loaded.tensors.at(spec.name), expected_weight)) << spec.name;
  }
  const at::Tensor dense_loaded = my_rows(dense_logps(config, loaded.tensors, 0.0), adapter_test_pairs().size());
  EXPECT_LT(ST_RELATIVE_DIFF(base_logps, dense_loaded, 1e-5), 1e-5);
  LoraOptions other = lora;
  other.double_quant = !double_quant;
  EXPECT_THROW(qlora_model_shards(stored, "", kSeed, other, at::kFloat, at::kCPU, *groups.shard), ModelError);
  EXPECT_THROW(load_model_shards(stored, "", kSeed, groups.shard->size(), groups.shard->rank()), ModelError);
  world_communicator().barrier();
  if (world_communicator().rank() == 0) {
    std::filesystem::remove_all(source);
    std::filesystem::remove_all(stored);
  }
}

class QloraGradients : public ::testing::TestWithParam<GradientCase> {};

TEST_P(QloraGradients, EqualDenseAutogradThroughTheDequantizedBase) {
  const auto [sharding, policy] = GetParam();
  const ModelConfig config = preset_config(kPreset);
  TensorMap adapters = whole_adapters(config);
  TensorMap weights = dequantized_weights(config, /*double_quant=*/true);
  for (auto& [name, tensor] : adapters) {
    tensor.requires_grad_(true);
    weights[name] = tensor;
  }
  const at::Tensor dense = dense_logps(config, weights, kScale);
  const auto rows = static_cast<double>(dense.size(0));
  torch::autograd::backward({dense.sum() / rows});

  QloraRun run(sharding, adapters, policy);
  const at::Tensor logps = engine_logps(*run.model);
  EXPECT_LT(ST_RELATIVE_DIFF(logps, my_rows(dense.detach(), adapter_test_pairs().size()), 1e-5), 1e-5);
  torch::autograd::backward({logps.sum() / rows});  // the ranks' gradients are summed
  const auto& units = run.model->units();
  for (size_t u = 0; u < units.size(); ++u) {
    if (units[u].params.empty()) continue;
    const at::Tensor expected = expected_shard(units[u], run.groups.shard->rank(), [&](const ParamSlot& slot) {
      return adapters.at(slot.spec.name).grad();
    });
    EXPECT_LT(ST_RELATIVE_DIFF(run.model->grad_shards()[u], expected, 1e-5), 1e-5)
        << units[u].name << " on rank " << world_communicator().rank() << " of " << world_communicator().size();
  }
}

INSTANTIATE_TEST_SUITE_P(StrategiesAndPolicies, QloraGradients,
                         ::testing::ValuesIn(kAdapterGradientCases));

TEST(QloraEngine, TheQuantizedBaseAloneIsTheReference) {
  const ModelConfig config = preset_config(kPreset);
  const at::Tensor dense_base =
      my_rows(dense_logps(config, dequantized_weights(config, /*double_quant=*/false), 0.0), adapter_test_pairs().size());
  QloraRun run(Sharding::full, whole_adapters(config), Recompute::full, /*double_quant=*/false);
  const at::NoGradGuard no_grad;
  EXPECT_LT(ST_RELATIVE_DIFF(engine_logps(*run.model, /*base_only=*/true), dense_base, 1e-5), 1e-5);
  EXPECT_GT((engine_logps(*run.model) - dense_base).abs().max().item<double>(), 1e-4);
}

TEST(QloraEngine, OnlyAdaptersHaveGradientsAndTheBaseIsGatheredAsBytes) {
  const ModelConfig config = preset_config(kPreset);
  QloraRun run(Sharding::full, whole_adapters(config), Recompute::full);
  int64_t adapter_elements = 0, grad_elements = 0, base_bytes = 0, projection_elements = 0;
  for (const UnitLayout& unit : run.model->units()) adapter_elements += unit.shard_numel;
  for (const at::Tensor& grad : run.model->grad_shards()) grad_elements += grad.numel();
  for (const at::Tensor& shard : run.model->base().shards) base_bytes += static_cast<int64_t>(shard.nbytes());
  for (const ParamSpec& spec : all_params(config)) projection_elements += is_projection_weight(spec.key) ? spec.numel() : 0;
  EXPECT_EQ(grad_elements, adapter_elements);
  EXPECT_EQ(run.model->memory().params, adapter_elements * 4 + base_bytes);
  // Each rank holds its share of the projections as 4-bit codes and 8-bit absmax (4.125 bits a
  // weight, plus section alignment and a partial block per unit), the rest in fp32.
  int64_t quantized_bytes = 0;
  for (const QuantizedUnit& unit : run.model->base().quantized) {
    quantized_bytes += unit.layout.shard_bytes - unit.layout.dense.shard_numel * 4;
  }
  const auto share = static_cast<double>(projection_elements) / world_communicator().size();
  EXPECT_LT(static_cast<double>(quantized_bytes), share * 4.125 / 8 + 128.0 * static_cast<double>(config.num_hidden_layers + 2));
  EXPECT_GE(static_cast<double>(quantized_bytes), share * 4.125 / 8);

  const at::NoGradGuard no_grad;
  engine_logps(*run.model, /*base_only=*/true);
  // A base-only forward gathers each unit's base as its bytes (a tied head the embedding's
  // again) and no adapters; a forward with them adds the adapters' fp32 flats.
  const std::vector<at::Tensor>& shards = run.model->base().shards;
  const int64_t size = world_communicator().size();
  int64_t base_gathered = 0, adapters_gathered = 0;
  for (size_t u = 0; u < shards.size(); ++u) {
    for (size_t needed : units_run_with(config, u)) {
      base_gathered += static_cast<int64_t>(shards[needed].nbytes()) * size;
      const UnitLayout& adapters = run.model->units()[needed];
      adapters_gathered += adapters.numel > 0 ? adapters.padded_numel * 4 : 0;
    }
  }
  EXPECT_EQ(run.model->comm_bytes().all_gather, size == 1 ? 0 : base_gathered);
  engine_logps(*run.model);
  EXPECT_EQ(run.model->comm_bytes().all_gather, size == 1 ? 0 : 2 * base_gathered + adapters_gathered);
}

TEST(QloraEngine, EstimateCountsTheQuantizedBaseAndItsDequantizedUnits) {
  const ModelConfig config = preset_config(kPreset);
  QloraRun run(Sharding::full, whole_adapters(config), Recompute::full);
  EstimateInputs in;
  in.ranks_per_node = world_communicator().size();
  in.compute_bytes = 4;
  in.on_gpu = false;
  const LoraOptions lora = test_lora(true);
  in.adapters = {kRank, lora_targets(lora.target_modules), /*quantized=*/true, /*double_quant=*/true};
  const MemoryEstimate estimate = estimate_memory(config, in);
  const EngineMemory engine = run.model->memory();
  EXPECT_EQ(estimate.params, engine.params);
  EXPECT_EQ(estimate.grads, engine.grads);
  int64_t base_bytes = 0;
  for (const at::Tensor& shard : run.model->base().shards) base_bytes += static_cast<int64_t>(shard.nbytes());
  EXPECT_EQ(estimate.frozen_bytes, base_bytes);
  // The dequantized units in flight (also on one rank, where LoRA gathers nothing).
  const at::NoGradGuard no_grad;
  engine_logps(*run.model);
  EXPECT_GT(run.model->memory().gathered_peak, 0);
  EXPECT_LE(run.model->memory().gathered_peak, estimate.gathered - dequantize_workspace_bytes());
  // An 8B base in bf16: 4.125-bit projections beside the bf16 embedding and head.
  const ModelConfig eight_b = preset_config("llama-3.1-8b");
  in.compute_bytes = 2;
  const int64_t qlora_bytes = estimate_memory(eight_b, in).frozen_bytes;
  in.adapters.quantized = false;
  const int64_t lora_bytes = estimate_memory(eight_b, in).frozen_bytes;
  int64_t projections = 0;
  for (const ParamSpec& spec : all_params(eight_b)) projections += is_projection_weight(spec.key) ? spec.numel() : 0;
  const double size = world_communicator().size();
  const double dense = static_cast<double>(eight_b.parameter_count() - projections) * 2 / size;
  EXPECT_NEAR(static_cast<double>(qlora_bytes), static_cast<double>(projections) * 4.125 / 8 / size + dense, 1e6);
  EXPECT_GT(static_cast<double>(lora_bytes), 2.5 * static_cast<double>(qlora_bytes));
}

}  // namespace
}  // namespace st
