// `shardtune estimate`: memory per GPU and per host for a model, cluster shape and strategy,
// before any job is submitted (lib/fsdp/memory_estimate.h). Runs without MPI.
#include <boost/program_options.hpp>
#include <iostream>

#include "command_options.h"
#include "command_runner.h"
#include "memory_report.h"
#include "commands.h"
#include "exit_codes.h"
#include "fsdp/memory_estimate.h"
#include "model/presets.h"
#include "util/errors.h"

namespace st {
namespace {

namespace po = boost::program_options;

int64_t dtype_bytes(const std::string& dtype) {
  if (dtype == "bf16" || dtype == "fp16") return 2;
  if (dtype == "fp32") return 4;
  throw ConfigError("estimate: --dtype '" + dtype + "' is not bf16|fp16|fp32");
}

}  // namespace

int run_estimate(std::vector<std::string> args, int&, char**&) {
  return run_guarded([&] {
    EstimateInputs in;
    std::string recompute = "auto";
    std::string preset, model_dir, sharding = "full", offload = "none", dtype = "bf16", device = "gpu", stage = "dpo";
    int64_t micro_batch = 1;
    double gpu_gib = 80.0;
    po::options_description options("shardtune estimate (--preset NAME | --model DIR) [options]", 110, 50);
    options.add_options()
        ("help", "print this help and exit")
        ("preset", po::value(&preset), "a built-in model shape (see shardtune train --help: model.preset)")
        ("model", po::value(&model_dir), "a Hugging Face model directory or config.json")
        ("nodes", po::value(&in.nodes)->default_value(1), "nodes")
        ("ranks-per-node", po::value(&in.ranks_per_node)->default_value(8), "ranks (GPUs) per node")
        ("sharding", po::value(&sharding)->default_value("full"), "full | grad_op | none | hybrid")
        ("offload", po::value(&offload)->default_value("none"), "none | cpu (AdamW state and fp32 masters on the host)")
        ("dtype", po::value(&dtype)->default_value("bf16"), "compute dtype: bf16 | fp16 | fp32")
        ("device", po::value(&device)->default_value("gpu"), "gpu | cpu (CPU training: everything in host memory)")
        ("stage", po::value(&stage)->default_value("dpo"), "dpo (a pair is 2 sequences) | sft")
        ("micro-batch", po::value(&micro_batch)->default_value(1), "pairs (dpo) or sequences (sft) per micro-batch")
        ("seq-len", po::value(&in.seq_len)->default_value(2048), "tokens per sequence")
        ("logp-chunk", po::value(&in.logp_chunk_tokens)->default_value(1024), "model.logp_chunk_tokens")
        ("recompute", po::value(&recompute)->default_value("auto"),
         "full | selective | none | auto (the most kept activations that fit --gpu-memory)")
        ("gpu-memory", po::value(&gpu_gib)->default_value(80.0), "GPU memory [GiB] to check the fit against");
    if (!parse_command_options("estimate", args, options, 0)) return kExitOk;
    if (preset.empty() == model_dir.empty()) throw ConfigError("estimate: give exactly one of --preset or --model");
    const ModelConfig config = preset.empty() ? load_model_config(model_dir) : preset_config(preset);
    in.sharding = parse_sharding(sharding);
    if (offload != "none" && offload != "cpu") throw ConfigError("estimate: --offload '" + offload + "' is not none|cpu");
    if (device != "gpu" && device != "cpu") throw ConfigError("estimate: --device '" + device + "' is not gpu|cpu");
    if (stage != "dpo" && stage != "sft") throw ConfigError("estimate: --stage '" + stage + "' is not dpo|sft");
    if (micro_batch < 1 || in.seq_len < 1) throw ConfigError("estimate: --micro-batch and --seq-len must be >= 1");
    in.offload = offload == "cpu";
    in.compute_bytes = dtype_bytes(dtype);
    in.on_gpu = device == "gpu";
    in.micro_batch_rows = micro_batch * (stage == "dpo" ? 2 : 1);
    in.recompute = parse_recompute(recompute);
    in.device_bytes = static_cast<int64_t>(gpu_gib * 1024.0 * 1024.0 * 1024.0);
    std::cout << format_memory_report(config, preset.empty() ? model_dir : "preset " + preset, in,
                                      estimate_memory(config, in), gpu_gib);
    return kExitOk;
  });
}

}  // namespace st
