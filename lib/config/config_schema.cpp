// The option table. Defaults come from the member initializers of the section structs.
#include "config/config_schema.h"

#include "fsdp/recompute.h"
#include "model/presets.h"

#include <boost/program_options/value_semantic.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <type_traits>

namespace st {

std::string format_config_value(double value) {
  // Whole numbers read best without an exponent ("1800", not "1.8e+03").
  if (value == static_cast<double>(static_cast<int64_t>(value)) && std::abs(value) < 1e15) {
    return std::to_string(static_cast<int64_t>(value));
  }
  char text[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(text, sizeof(text), "%.*g", precision, value);
    if (std::strtod(text, nullptr) == value) break;
  }
  return text;
}
std::string format_config_value(int64_t value) { return std::to_string(value); }
std::string format_config_value(uint64_t value) { return std::to_string(value); }
std::string format_config_value(bool value) { return value ? "true" : "false"; }
std::string format_config_value(const std::string& value) { return value; }

namespace {
template <typename T>
std::string type_name_of() {
  if constexpr (std::is_same_v<T, bool>) return "true|false";
  if constexpr (std::is_floating_point_v<T>) return "number";
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) return "integer";
  return "text";
}

std::string join(const std::vector<std::string>& items, const char* separator) {
  std::string joined;
  for (const auto& item : items) joined += (joined.empty() ? "" : separator) + item;
  return joined;
}
}  // namespace

void ConfigSchema::section(const std::string& name, const std::string& title) {
  section_names_.push_back(name);
  sections_.emplace_back("[" + name + "] " + title, 110, 55);
}

template <typename T>
void ConfigSchema::add(T* field, const char* key, const char* help,
                       std::vector<std::string> choices) {
  const std::string& section_name = section_names_.back();
  ConfigField entry;
  entry.section = section_name;
  entry.key = key;
  entry.help = help;
  entry.type_name = type_name_of<T>();
  entry.choices = std::move(choices);
  entry.current_value = [field] { return format_config_value(*field); };

  std::string description = entry.help;
  if (!entry.choices.empty()) description += "; one of " + join(entry.choices, "|");
  auto* semantic = po::value<T>(field)->default_value(*field, format_config_value(*field));
  if constexpr (std::is_same_v<T, bool>) semantic->implicit_value(true, "true");
  sections_.back().add_options()(entry.name().c_str(), semantic, description.c_str());
  fields_.push_back(std::move(entry));
}

ConfigSchema::ConfigSchema(TrainConfig& c) {
  section("model", "model to fine-tune");
  add(&c.model.path, "path", "HF model directory (config.json + *.safetensors); empty = preset");
  add(&c.model.preset, "preset", "built-in shape with seeded random init, when model.path is empty",
      preset_names());
  add(&c.model.logp_chunk_tokens, "logp_chunk_tokens",
      "tokens per lm_head log-prob chunk; bounds the [tokens, vocab] fp32 logits held at once");

  section("data", "tokenized training data");
  add(&c.data.train, "train", "directory of HDF5 shards with manifest.json");
  add(&c.data.val, "val", "validation shards; empty = hold out data.val_size of train");
  add(&c.data.val_size, "val_size", "fraction of train pairs held out for evaluation, [0, 1)");
  add(&c.data.cutoff_len, "cutoff_len", "max tokens per sequence, prompt + completion [tokens]");
  add(&c.data.shuffle, "shuffle",
      "draw each epoch's pairs in a seeded permutation (train.seed); false = in manifest and file order");
  add(&c.data.group_by_length, "group_by_length",
      "sort each rank's share of a step by length before cutting micro-batches (less padding)");
  add(&c.data.micro_batch_tokens, "micro_batch_tokens",
      "> 0: micro-batches hold as many pairs as fit in this many padded tokens [tokens]");
  add(&c.data.prefetch_steps, "prefetch_steps", "steps loaded ahead on a background thread");
  add(&c.data.verify_checksums, "verify_checksums", "check every shard's CRC-32 at start (reads all data)");

  section("train", "the run: stage, batch, length, precision, output");
  add(&c.train.stage, "stage", "training objective", {"dpo", "sft"});
  add(&c.train.output_dir, "output_dir", "run directory on shared storage");
  add(&c.train.seed, "seed", "seed for data order and random init");
  add(&c.train.micro_batch, "micro_batch", "pairs (dpo) or sequences (sft) per rank per micro-step");
  add(&c.train.grad_accum, "grad_accum", "micro-steps per optimizer step");
  add(&c.train.global_batch, "global_batch",
      "pairs per optimizer step; 0 = micro_batch x grad_accum x ranks");
  add(&c.train.max_steps, "max_steps", "optimizer steps; 0 = run train.epochs");
  add(&c.train.epochs, "epochs", "passes over the training data when max_steps is 0");
  add(&c.train.dtype, "dtype", "compute dtype; auto = bf16 on GPU, fp32 on CPU",
      {"auto", "fp32", "bf16", "fp16"});
  add(&c.train.recompute, "recompute",
      "activation recomputation per decoder layer: full = keep inputs only; selective = also the matmul "
      "outputs; none = keep everything; auto = the most that fits train.memory_budget_gib",
      recompute_names());
  add(&c.train.memory_budget_gib, "memory_budget_gib",
      "device memory recompute=auto may fill [GiB]; 0 = the GPU's free memory less a margin (CPU: unlimited)");
  add(&c.train.log_every, "log_every", "optimizer steps between metric lines");
  add(&c.train.eval_every, "eval_every", "optimizer steps between evaluations; 0 = at the end only");
  add(&c.train.overwrite, "overwrite", "replace the outputs of an earlier run in train.output_dir");
  add(&c.train.resume, "resume",
      "continue from a checkpoint: auto = the newest complete one in ckpt.dir (else start fresh), "
      "or a step_* directory or a checkpoint directory; empty = start fresh");
  add(&c.train.peak_tflops, "peak_tflops",
      "one device's peak [TFLOP/s] in the compute dtype, for MFU; 0 = known GPUs, else no MFU");

  section("dpo", "preference objective (train.stage = dpo)");
  add(&c.dpo.loss, "loss", "preference loss (docs/objectives.md)", {"sigmoid", "ipo", "hinge", "simpo", "orpo"});
  add(&c.dpo.beta, "beta", "inverse temperature of the implicit reward, > 0");
  add(&c.dpo.label_smoothing, "label_smoothing", "cDPO label-flip rate for sigmoid, [0, 0.5)");
  add(&c.dpo.simpo_gamma, "simpo_gamma", "SimPO target reward margin");
  add(&c.dpo.ftx, "ftx", "adds ftx x the chosen completion's SFT loss (LlamaFactory pref_ftx, RPO), >= 0");
  add(&c.dpo.reference, "reference",
      "reference log-probs: auto = precomputed if the data has them, none for simpo/orpo, else "
      "online; precomputed = from the shards (shardtune precompute-ref); online = a frozen copy",
      {"auto", "precomputed", "online", "none"});

  section("optim", "AdamW, gradient clipping, learning-rate schedule");
  add(&c.optim.lr, "lr", "peak learning rate");
  add(&c.optim.beta1, "beta1", "AdamW first-moment decay, [0, 1)");
  add(&c.optim.beta2, "beta2", "AdamW second-moment decay, [0, 1)");
  add(&c.optim.eps, "eps", "AdamW denominator epsilon, > 0");
  add(&c.optim.weight_decay, "weight_decay", "decoupled weight decay (norms excluded)");
  add(&c.optim.grad_clip, "grad_clip", "max global gradient L2 norm; 0 = no clipping");
  add(&c.optim.schedule, "schedule", "learning-rate schedule after warmup",
      {"constant", "linear", "cosine", "cosine_with_min_lr"});
  add(&c.optim.warmup_steps, "warmup_steps", "linear warmup [optimizer steps]");
  add(&c.optim.warmup_ratio, "warmup_ratio", "warmup as a fraction of all steps, [0, 1)");
  add(&c.optim.min_lr_ratio, "min_lr_ratio", "cosine_with_min_lr floor as a fraction of lr, [0, 1]");
  add(&c.optim.offload, "offload", "where AdamW state lives", {"none", "cpu"});

  section("dist", "communication, sharding, topology, watchdog");
  add(&c.dist.backend, "backend", "collectives backend; auto = nccl with GPUs, else mpi",
      {"auto", "mpi", "nccl"});
  add(&c.dist.sharding, "sharding", "full = ZeRO-3, grad_op = ZeRO-2, none = replicate",
      {"full", "grad_op", "none", "hybrid"});
  add(&c.dist.ranks_per_node, "ranks_per_node",
      "0 = detect from MPI shared memory; > 0 declares nodes of this many ranks");
  add(&c.dist.timeout_s, "timeout_s", "deadline of each collective before all ranks abort [s]");

  section("ckpt", "sharded checkpoints and the consolidated HF export");
  add(&c.ckpt.dir, "dir", "checkpoint directory; empty = <train.output_dir>/checkpoints");
  add(&c.ckpt.every, "every", "optimizer steps between checkpoints; 0 = at the end only");
  add(&c.ckpt.keep_last, "keep_last", "complete checkpoints kept; 0 = all (the newest always stays)");
  add(&c.ckpt.async, "async", "snapshot to host memory and write on a background thread");
  add(&c.ckpt.export_hf, "export", "write a consolidated HF model to <train.output_dir>/export at the end");
  add(&c.ckpt.export_dtype, "export_dtype", "dtype of the exported weights", {"bf16", "fp32"});
  add(&c.ckpt.export_shard_gb, "export_shard_gb", "size limit of one exported safetensors file [GB]");
}

const ConfigField* ConfigSchema::find(const std::string& name) const {
  for (const auto& field : fields_) {
    if (field.name() == name) return &field;
  }
  return nullptr;
}

po::options_description ConfigSchema::all_options() const {
  po::options_description all;
  for (const auto& section : sections_) all.add(section);
  return all;
}

}  // namespace st
