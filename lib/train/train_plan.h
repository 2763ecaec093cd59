// A run's data and shape before any training: the training and validation pairs (a separate
// directory, or data.val_size held out of data.train), the global batch, steps per epoch and
// in all, the reference mode and the compute dtype. The trainer runs this plan; --dry-run
// prints it.
#pragma once

#include <c10/core/ScalarType.h>

#include <memory>
#include <string>
#include <vector>

#include "data/collate.h"
#include "data/pair_dataset.h"
#include "fsdp/memory_estimate.h"
#include "train/train_config.h"

namespace st {

struct TrainData {
  std::shared_ptr<const PairDataset> train, val;  // val null without validation data
  // Index subsets when val is held out of train (both then point at one dataset).
  std::shared_ptr<const std::vector<uint64_t>> train_subset, val_subset;
  // Per dataset of data.train (a mixture when several): its weight and its training and
  // validation samples (the subsets hold them in this order).
  std::vector<double> train_weights;
  std::vector<uint64_t> train_sizes;
  // Per validation dataset (data.val's, or those held out of data.train): name and indices.
  std::vector<std::string> val_names;
  std::vector<std::shared_ptr<const std::vector<uint64_t>>> val_parts;

  uint64_t train_pairs() const { return train_subset ? train_subset->size() : train->size(); }
  uint64_t val_pairs() const;
};

// Precomputed reference log-probs must come from this run's starting model and compute dtype:
// each dataset's manifest records them (`shardtune precompute-ref`); a mismatch throws a
// ConfigError naming the directory, the field and the fix. Data written before fingerprints
// were recorded passes with a warning.
void check_reference_provenance(const TrainData& data, const std::string& fingerprint, const std::string& model,
                                const std::string& dtype);

// Throws ConfigError / DataError naming the directory, field and fix.
TrainData open_train_data(const TrainConfig& config, int64_t model_vocab_size);

// Where a DPO step's reference log-probs come from (dpo.reference): none (simpo, orpo, sft),
// precomputed (ref_chosen_logp / ref_rejected_logp in the shards, from shardtune
// precompute-ref), or online (a frozen copy of the initial policy; reference.h).
enum class ReferenceMode { none, precomputed, online };
template <>
struct EnumNames<ReferenceMode> {
  static constexpr NamedValue<ReferenceMode> table[] = {
      {ReferenceMode::none, "none"}, {ReferenceMode::precomputed, "precomputed"}, {ReferenceMode::online, "online"}};
};

// dpo.reference resolved for the run (auto: none for simpo/orpo, precomputed when every shard
// of the training (and validation) data has reference log-probs, else online). Throws
// ConfigError naming dpo.reference and the fix when the data cannot serve the choice.
ReferenceMode resolve_reference(const TrainConfig& config, const PairDataset& train, const PairDataset* val);

struct TrainPlan {
  int64_t global_batch = 0;       // pairs (sequences for sft) per optimizer step
  int64_t grad_accum = 1;         // micro-steps per optimizer step (train.grad_accum resolved)
  int64_t steps_per_epoch = 0;
  int64_t total_steps = 0;
  uint64_t train_pairs = 0, val_pairs = 0;
  ReferenceMode reference = ReferenceMode::none;
  ComputeDtype compute_dtype = ComputeDtype::fp32;  // fp32 | bf16 | fp16 (never auto)
};

// train.dtype resolved: auto = bf16 on GPUs, fp32 on CPUs; fp16 on CPUs is a ConfigError.
ComputeDtype resolve_compute_dtype(ComputeDtype dtype, bool on_gpu);
// fp32 | bf16 | fp16 as a tensor dtype.
at::ScalarType compute_scalar_type(ComputeDtype dtype);
// "dpo (sigmoid, reference online)" or "sft", for logs.
std::string describe_objective(const TrainConfig& config, ReferenceMode reference);

// How the run collates its pairs (cutoff, micro-batches, packing, a shared prompt): the
// trainer's loaders and precompute-ref use the same.
CollateOptions collate_options(const TrainConfig& config, int64_t pad_id);

// The adapters a train.method = lora run trains, for memory estimates (none for full runs).
AdapterShape adapter_shape(const TrainConfig& config);

// The largest micro-batch a run can collate, for memory planning: rows x tokens per row, and
// whether attention takes an explicit mask (packed or prompt-shared rows under
// model.attention = masked; varlen attention keeps O(tokens)). data.micro_batch_tokens must be
// resolved (>= 0; resolve it with fit_micro_batch_tokens first).
struct MicroBatchShape {
  int64_t rows = 1, row_tokens = 1;
  bool masked = false;
  int64_t tokens() const { return rows * row_tokens; }
};
MicroBatchShape largest_micro_batch(Stage stage, int64_t micro_batch, const DataOptions& data, bool share_prompt,
                                    AttentionPath attention);
// Tokens of the longest stretch a row must hold whole: one sequence, or a shared DPO segment
// (prompt + chosen + rejected, at most two cutoffs).
int64_t longest_segment_tokens(Stage stage, const DataOptions& data, bool share_prompt);
MicroBatchShape largest_micro_batch(const TrainConfig& config);
// A memory estimate's micro-batch (rows, tokens per row, mask) set to `shape`.
void set_micro_batch(EstimateInputs& inputs, const MicroBatchShape& shape);

struct BatchGeometry {
  int64_t global_batch = 0;  // pairs per optimizer step
  int64_t grad_accum = 1;    // micro-steps per optimizer step
};
// The global batch and accumulation of a run on `world_size` data-parallel ranks, each row split
// over `context_size` ranks (the rank counts a refusal names). `resumed_global_batch`: the global
// batch of the checkpoint a run resumes from (0 = none): a resumed run keeps it on any rank
// count, train.grad_accum derived from it (given or auto) unless train.global_batch is set. A
// fresh run's is train.global_batch, else micro_batch x grad_accum (auto = 1) x ranks. Throws
// ConfigError when no whole grad_accum keeps it (or optim.step_in_backward needs 1), naming the
// rank counts and micro-batches that do.
BatchGeometry resolve_batch_geometry(const TrainConfig& config, int world_size, int64_t resumed_global_batch = 0,
                                     int context_size = 1);

// `on_gpu`: where the ranks compute (decides dtype = auto); the batch as resolve_batch_geometry.
TrainPlan plan_training(const TrainConfig& config, const TrainData& data, int world_size, bool on_gpu,
                        int64_t resumed_global_batch = 0, int context_size = 1);

// "rank counts that keep it with train.micro_batch = 2: 1, 2, 4, 8; train.micro_batch values that
// keep it on 3 ranks: none": what keeps a global batch whole, for refusals (`world_size`
// data-parallel ranks, each row over `context_size`).
std::string batch_geometries(int64_t global_batch, int64_t micro_batch, int world_size, int context_size);

}  // namespace st
