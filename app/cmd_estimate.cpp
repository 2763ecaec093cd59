// `shardtune estimate`: memory per GPU and per host for a model, cluster shape and strategy,
// before any job is submitted (lib/fsdp/memory_estimate.h). Runs without MPI.
#include <boost/program_options.hpp>
#include <iostream>

#include "command_options.h"
#include "command_runner.h"
#include "commands.h"
#include "exit_codes.h"
#include "fsdp/memory_estimate.h"
#include "memory_report.h"
#include "model/presets.h"
#include "train/train_plan.h"
#include "util/errors.h"

namespace st {
namespace {

namespace po = boost::program_options;

// --device: where the ranks train.
enum class EstimateDevice { gpu, cpu };

}  // namespace

template <>
struct EnumNames<EstimateDevice> {
  static constexpr NamedValue<EstimateDevice> table[] = {{EstimateDevice::gpu, "gpu"}, {EstimateDevice::cpu, "cpu"}};
};

namespace {

}  // namespace

int run_estimate(std::vector<std::string> args, int&, char**&) {
  return run_guarded([&] {
    EstimateInputs in;
    in.recompute = Recompute::automatic;
    std::string preset, model_dir;
    Offload offload = Offload::none;
    ComputeDtype dtype = ComputeDtype::bf16;
    EstimateDevice device = EstimateDevice::gpu;
    Stage stage = Stage::dpo;
    int64_t micro_batch = 1;
    DataOptions data;
    bool share_prompt = false;
    AttentionPath attention = AttentionPath::varlen;
    double gpu_gib = 80.0;
    TrainMethod method = TrainMethod::full;
    LoraOptions lora;
    po::options_description options("shardtune estimate (--preset NAME | --model DIR) [options]", 110, 50);
    options.add_options()
        ("help", "print this help and exit")
        ("preset", po::value(&preset), "a built-in model shape (see shardtune train --help: model.preset)")
        ("model", po::value(&model_dir), "a Hugging Face model directory or config.json")
        ("nodes", po::value(&in.nodes)->default_value(1), "nodes")
        ("ranks-per-node", po::value(&in.ranks_per_node)->default_value(8), "ranks (GPUs) per node")
        ("sharding", enum_flag(&in.sharding, "estimate", "sharding"), "full | grad_op | none | hybrid")
        ("offload", enum_flag(&offload, "estimate", "offload"), "none | cpu (AdamW state and fp32 masters on the host)")
        ("dtype", enum_flag(&dtype, "estimate", "dtype"), "compute dtype: bf16 | fp16 | fp32 | auto (bf16 on GPUs)")
        ("device", enum_flag(&device, "estimate", "device"), "gpu | cpu (CPU training: everything in host memory)")
        ("stage", enum_flag(&stage, "estimate", "stage"), "dpo (a pair is 2 sequences) | sft")
        ("micro-batch", po::value(&micro_batch)->default_value(1), "pairs (dpo) or sequences (sft) per micro-batch")
        ("seq-len", po::value(&data.cutoff_len)->default_value(2048), "tokens per sequence (data.cutoff_len)")
        ("micro-batch-tokens", po::value(&data.micro_batch_tokens)->default_value(0),
         "data.micro_batch_tokens: > 0 cuts micro-batches by tokens; -1 = auto (with --packing)")
        ("attention", enum_flag(&attention, "estimate", "attention"), "model.attention: varlen | masked")
        ("compute-copy", enum_flag(&in.compute_copy, "estimate", "compute-copy"), "train.compute_copy: kept | per_gather")
        ("packing", po::bool_switch(&data.packing), "data.packing: several sequences per row")
        ("share-prompt", po::bool_switch(&share_prompt), "dpo.share_prompt: one [prompt, chosen, rejected] row per pair")
        ("logp-chunk", po::value(&in.logp_chunk_tokens)->default_value(1024), "model.logp_chunk_tokens")
        ("recompute", enum_flag(&in.recompute, "estimate", "recompute"),
         "full | selective | none | auto (the most kept activations that fit --gpu-memory)")
        ("gpu-memory", po::value(&gpu_gib)->default_value(80.0), "GPU memory [GiB] to check the fit against")
        ("method", enum_flag(&method, "estimate", "method"), "train.method: full | lora (frozen base, adapter states only)")
        ("lora-r", po::value(&lora.r)->default_value(lora.r), "lora.r: adapter rank")
        ("lora-targets", po::value(&lora.target_modules)->default_value(lora.target_modules),
         "lora.target_modules: comma-separated from q,k,v,o,gate,up,down");
    if (!parse_command_options("estimate", args, options, 0)) return kExitOk;
    if (preset.empty() == model_dir.empty()) throw ConfigError("estimate: give exactly one of --preset or --model");
    const ModelConfig config = preset.empty() ? load_model_config(model_dir) : preset_config(preset);
    if (micro_batch < 1 || data.cutoff_len < 1 || data.micro_batch_tokens < kAutoMicroBatchTokens) {
      throw ConfigError("estimate: --micro-batch and --seq-len must be >= 1, --micro-batch-tokens >= 0 or -1 (auto)");
    }
    if (data.micro_batch_tokens == kAutoMicroBatchTokens && !data.packing) {
      throw ConfigError("estimate: --micro-batch-tokens -1 (auto) sizes packed rows: add --packing");
    }
    if (method == TrainMethod::lora) {
      if (lora.r < 1) throw ConfigError("estimate: --lora-r must be >= 1");
      in.adapters = {lora.r, lora_targets(lora.target_modules)};
    }
    in.offload = offload == Offload::cpu;
    in.on_gpu = device == EstimateDevice::gpu;
    in.compute_bytes = static_cast<int64_t>(c10::elementSize(compute_scalar_type(resolve_compute_dtype(dtype, in.on_gpu))));
    in.device_bytes = static_cast<int64_t>(gpu_gib * 1024.0 * 1024.0 * 1024.0);
    const std::string token_budget = resolve_token_budget(config, in, stage, data, share_prompt, attention);
    set_micro_batch(in, largest_micro_batch(stage, micro_batch, data, share_prompt, attention));
    std::cout << token_budget << format_memory_report(config, preset.empty() ? model_dir : "preset " + preset, in,
                                      estimate_memory(config, in), gpu_gib);
    return kExitOk;
  });
}

}  // namespace st
