#include "train/rollout_phase.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <numeric>

#include "data/padded_rows.h"
#include "distributed/value_gather.h"
#include "train/recompute_choice.h"
#include "train/reward_model.h"
#include "util/device.h"
#include "train/train_checkpoints.h"
#include "util/errors.h"
#include "util/log.h"
#include "util/timer.h"

namespace st {
namespace {

// Completions longer than any prompt + completion: collate must cut nothing.
constexpr int64_t kNoCutoff = std::numeric_limits<int32_t>::max();

// What a reward function sees of a record's `prompt` (TRL passes messages as they are).
std::string prompt_text(const nlohmann::json& record) {
  if (!record.contains("prompt")) return "";
  const nlohmann::json& prompt = record["prompt"];
  return prompt.is_string() ? prompt.get<std::string>() : prompt.dump();
}

// reward.model's, when given: frozen and sharded like the policy, scoring a micro-batch of
// completions per forward.
std::unique_ptr<RewardFunction> reward_model_of(const TrainConfig& config, RunSetup& run, int64_t rows) {
  if (config.reward.model.empty()) return nullptr;
  return std::make_unique<RewardModel>(config.reward.model, run.engine->model(), rows, config.prep.template_kwargs);
}

}  // namespace

RolloutPhase::RolloutPhase(const TrainConfig& config, const Objective& objective, RunSetup& run)
    : config_(config),
      objective_(objective),
      run_(run),
      options_(*objective.rollout_options(config)),
      geometry_(rollout_geometry(options_, config.train.micro_batch, run.plan.grad_accum, run.parallel.data_size,
                                 run.parallel.data_rank)),
      rewards_(reward_set(options_, config.reward, reward_model_of(config, run, geometry_.micro_batch))),
      sampler_(run.data.train->size(), static_cast<uint64_t>(geometry_.prompts()), config.train.seed,
               config.data.shuffle) {
  const ModelConfig& model = run.engine->model().config();
  eos_ids_ = model.eos_token_ids;
  if (run.data.train->eos_id() >= 0) eos_ids_.push_back(run.data.train->eos_id());
  if (options_.rollouts.empty()) {
    FsdpModel& policy = run.engine->model();
    const SamplingShape share{geometry_.rank_block(), geometry_.group_size, config.data.cutoff_len,
                              options_.max_completion_length};
    const EstimateInputs estimate = run_estimate_inputs(
        config, policy.groups().shard->size(), static_cast<int64_t>(c10::elementSize(policy.options().compute_dtype)));
    const int64_t rows =
        sampling_rows(model, share, estimate, device_available_bytes(config, cuda_device_index(run.device)), options_);
    if (rows < share.rows) {
      log0(options_.section, "'s rollouts: ", rows, " of each rank's ", share.rows,
           " completions decode at once (what the free memory holds); the others take the rows that finish");
    }
    sampled_ = std::make_unique<SampledCompletions>(options_, config.train.seed, eos_ids_, rows);
  } else {
    replay_ = std::make_unique<ReplayCompletions>(options_, model.vocab_size);
    if (replay_->rows() < run.data.train->size()) {
      throw DataError(options_.rollouts + ": " + std::to_string(replay_->rows()) + " lines for the " +
                      std::to_string(run.data.train->size()) + " rows of data.train (" +
                      run.data.train->directory() +
                      "); the replay file (" + options_.key("rollouts") + ") needs one line per dataset row, in the dataset's order");
    }
  }
  if (holds_tokenizer(config.model.path)) {
    tokenizer_ = Tokenizer::from_file(config.model.path);
  } else if (rewards_.reads_text) {
    throw ConfigError("the rewards read the completions' text (" + options_.key("reward_funcs") + "' rules, reward.model), but "
                      "model.path (" + config.model.path + ") holds no tokenizer to decode them; use a model "
                      "directory with tokenizer.json");
  }
}

RolloutPhase::~RolloutPhase() = default;

GlobalBatch RolloutPhase::prompts_of(int64_t generation) {
  if (generation < sampled_generations_) {  // an earlier one (not in a run: restart the walk)
    sampled_generations_ = 0;
    sampler_cursor_ = {};
  }
  const auto wanted = static_cast<size_t>(geometry_.prompts());
  GlobalBatch batch;
  while (true) {
    batch = sampler_.batch_at(sampler_cursor_);
    if (batch.indices.size() < wanted) {  // an epoch's short end: dropped
      sampler_cursor_ = {sampler_cursor_.epoch + 1, 0};
      continue;
    }
    if (sampled_generations_ == generation) break;
    sampler_cursor_ = batch.next;
    ++sampled_generations_;
  }
  return batch;
}

std::vector<GenerationResult> RolloutPhase::completions_of(const GlobalBatch& prompts, const std::vector<Pair>& mine,
                                                           int64_t generation) {
  const PairDataset& data = *run_.data.train;
  const int64_t block = geometry_.rank_block(), group = geometry_.group_size;
  const int64_t first = geometry_.rank * block;  // this rank's completions in the generation's order
  if (sampled_) {
    std::vector<std::vector<int64_t>> prompt_ids;
    for (const Pair& prompt : mine) prompt_ids.emplace_back(prompt.prompt.begin(), prompt.prompt.end());
    return sampled_->sample(run_.engine->model(), *run_.host, prompt_ids, generation, first, block);
  }
  std::vector<GenerationResult> completions;
  uint64_t last_index = UINT64_MAX;
  std::vector<std::vector<int64_t>> replayed;
  for (int64_t c = first; c < first + block; ++c) {
    const uint64_t index = prompts.indices[static_cast<size_t>(c / group)];
    if (index != last_index) replayed = replay_->group(index);
    last_index = index;
    GenerationResult completion;
    completion.ids = replayed[static_cast<size_t>(c % group)];
    // Used as given: truncated when its last id is neither EOS nor pad.
    const int64_t last = completion.ids.back();
    const bool ends = std::find(eos_ids_.begin(), eos_ids_.end(), last) != eos_ids_.end() || last == data.pad_id();
    completion.finish = ends ? FinishReason::eos : FinishReason::length;
    completions.push_back(std::move(completion));
  }
  return completions;
}

void RolloutPhase::generate(int64_t generation, int64_t step, StepPhases& phases) {
  Timer timer;
  const GlobalBatch prompts = prompts_of(generation);
  const PairDataset& data = *run_.data.train;
  const int64_t block = geometry_.rank_block(), group = geometry_.group_size;
  const int64_t first = geometry_.rank * block;  // this rank's completions in the generation's order
  // The prompts this rank's completions come from, each read and its source record parsed once.
  const int64_t first_prompt = first / group, end_prompt = (first + block + group - 1) / group;
  std::vector<Pair> rank_prompts;
  std::vector<nlohmann::json> sources;
  for (int64_t p = first_prompt; p < end_prompt; ++p) {
    rank_prompts.push_back(data.get(prompts.indices[static_cast<size_t>(p)]));
    sources.push_back(nlohmann::json::parse(rank_prompts.back().record.empty() ? "{}" : rank_prompts.back().record));
  }
  const std::vector<GenerationResult> completions = completions_of(prompts, rank_prompts, generation);
  std::vector<Pair> pairs;
  RewardBatch batch;
  batch.decoded = tokenizer_.has_value();
  std::vector<double> lengths, truncated;
  for (int64_t c = first; c < first + block; ++c) {
    const uint64_t index = prompts.indices[static_cast<size_t>(c / group)];
    const Pair& prompt = rank_prompts[static_cast<size_t>(c / group - first_prompt)];
    const nlohmann::json& source = sources[static_cast<size_t>(c / group - first_prompt)];
    const std::vector<int64_t>& ids = completions[static_cast<size_t>(c - first)].ids;
    Pair pair;
    pair.prompt = prompt.prompt;
    pair.chosen.assign(ids.begin(), ids.end());
    pairs.push_back(std::move(pair));
    batch.prompts.push_back(prompt_text(source));
    batch.prompt_values.push_back(source.contains("prompt") ? source["prompt"] : nlohmann::json(""));
    batch.completions.push_back(tokenizer_ ? tokenizer_->decode(ids, true) : std::string());
    batch.rows.push_back(index);
    batch.completion_ids.push_back(ids);
    for (const auto& [key, value] : source.items()) {
      if (key != "prompt") batch.columns[key].push_back(value);
    }
    lengths.push_back(static_cast<double>(ids.size()));
    truncated.push_back(completions[static_cast<size_t>(c - first)].finish == FinishReason::eos ? 0.0 : 1.0);
  }
  phases.rollout += timer.seconds();

  // This rank's micro-batches, with the generating policy's and the reference's log-probs where
  // the objective reads them, and each completion's summed log-ratio of the two where its reward
  // carries the KL (RLOO).
  const bool masking = options_.mask_truncated_completions;
  const bool kl_penalty = objective_.penalizes_rewards_with_kl(config_);
  const bool old_logps = geometry_.needs_old_logps() || objective_.always_computes_old_logps();
  std::vector<double> kl_sums;
  CollateOptions collate;
  collate.cutoff_len = kNoCutoff;
  collate.pad_id = data.pad_id();
  collate.micro_batch = geometry_.micro_batch;
  buffer_.clear();
  FsdpModel& model = run_.engine->model();
  {
    const c10::NoGradGuard no_grad;
    for (int64_t m = 0; m < geometry_.steps_per_generation; ++m) {
      const int64_t begin = m * geometry_.micro_batch, end = begin + geometry_.micro_batch;
      std::vector<Pair> slice(pairs.begin() + begin, pairs.begin() + end);
      MicroBatch micro = collate_pairs(std::move(slice), PairKind::sft, collate);
      for (int64_t i = begin; i < end; ++i) {
        if (masking && truncated[static_cast<size_t>(i)] > 0.0) {  // no loss: no targets
          const int64_t row = i - begin;
          micro.target_tokens -= micro.target_counts[row].item<int64_t>();
          micro.targets[row].fill_(kIgnoreTarget);
          micro.target_counts[row].fill_(0);
        }
      }
      if (sampled_) {  // the loss-carrying rows' sampler log-probs, in order
        std::vector<float> logps;
        for (int64_t i = begin; i < end; ++i) {
          if (masking && truncated[static_cast<size_t>(i)] > 0.0) continue;
          const std::vector<float>& row = completions[static_cast<size_t>(i)].logps;
          logps.insert(logps.end(), row.begin(), row.end());
        }
        micro.sampling_token_logps = at::tensor(logps, at::kFloat);
      }
      if (old_logps || run_.reference) {
        TokenBatch tokens = model.make_batch(micro.input_ids, micro.targets, micro.layout);
        tokens.head_output = HeadOutput::token_lines;
        tokens.logit_temperature = objective_.logit_temperature(config_);
        at::Tensor mask;
        if (old_logps) {
          const Timer old_timer;
          const at::Tensor lines = model.sequence_logps(tokens);
          micro.old_token_logps = lines[static_cast<int64_t>(HeadLine::logps)].detach();
          mask = lines[static_cast<int64_t>(HeadLine::targets)].detach();
          phases.old_logps += old_timer.seconds();
        }
        if (run_.reference) {
          const Timer reference_timer;
          micro.ref_token_logps = run_.reference->logps(tokens)[static_cast<int64_t>(HeadLine::logps)].detach();
          phases.reference += reference_timer.seconds();
        }
        if (kl_penalty) {  // TRL's first-order estimate, summed over each completion's loss tokens
          const at::Tensor sums = ((micro.old_token_logps - micro.ref_token_logps).to(at::kDouble) * mask).sum(1).cpu();
          for (int64_t row = 0; row < sums.size(0); ++row) kl_sums.push_back(sums[row].item<double>());
          micro.ref_token_logps = at::Tensor();  // in the reward now, not in the loss
        }
      }
      buffer_.push_back(std::move(micro));
    }
  }

  // Every rank's rewards, lengths, truncation flags and KL sums, in the generation's order.
  timer = Timer();
  const RewardTable mine = score_batch(rewards_, batch);
  std::vector<double> values = mine.values;
  values.insert(values.end(), lengths.begin(), lengths.end());
  values.insert(values.end(), truncated.begin(), truncated.end());
  values.insert(values.end(), kl_sums.begin(), kl_sums.end());
  const std::vector<double> all = all_gather_values(*run_.host, values);
  const size_t functions = rewards_.functions.size(), width = values.size();
  RewardTable table;
  table.functions = functions;
  std::vector<double> all_lengths, all_truncated, all_kl;
  for (int r = 0; r < geometry_.ranks; ++r) {
    const double* row = all.data() + static_cast<size_t>(r) * width;
    const auto take = [&](size_t column, std::vector<double>& out) {  // the rank's column-th run of `block` values
      out.insert(out.end(), row + column * static_cast<size_t>(block), row + (column + 1) * static_cast<size_t>(block));
    };
    table.values.insert(table.values.end(), row, row + block * static_cast<int64_t>(functions));
    take(functions, all_lengths);
    take(functions + 1, all_truncated);
    if (kl_penalty) take(functions + 2, all_kl);
  }
  const GroupAdvantages advantages = objective_.generation_advantages(table, rewards_.weights, all_kl, config_);
  phases.reward += timer.seconds();
  if (options_.log_completions) log_completions(generation, step, prompts, completions, all_lengths, table, advantages);

  // The generation's loss tokens on all ranks (TRL's num_items_in_batch, at least 1).
  double loss_tokens = 0.0;
  for (size_t i = 0; i < all_lengths.size(); ++i) loss_tokens += masking && all_truncated[i] > 0.0 ? 0.0 : all_lengths[i];
  const double tokens_per_completion = std::max(loss_tokens, 1.0) / static_cast<double>(all_lengths.size());
  for (int64_t m = 0; m < geometry_.steps_per_generation; ++m) {
    MicroBatch& micro = buffer_[static_cast<size_t>(m)];
    std::vector<float> slice_advantages;
    for (int64_t i = m * geometry_.micro_batch; i < (m + 1) * geometry_.micro_batch; ++i) {
      slice_advantages.push_back(static_cast<float>(advantages.advantages[static_cast<size_t>(first + i)]));
    }
    micro.advantages = at::tensor(slice_advantages, at::kFloat);
    micro.generation_tokens_per_completion = tokens_per_completion;
  }
  buffered_ = generation;
  buffered_prompts_ = prompts;

  // What TRL logs of the generation (all ranks hold the same values).
  nlohmann::ordered_json record;
  record["reward"] = advantages.reward_mean;
  record["reward_std"] = advantages.reward_std;
  for (size_t f = 0; f < functions; ++f) {
    const std::string name = rewards_.functions[f]->name();
    record["rewards/" + name + "/mean"] = advantages.function_means[f];
    record["rewards/" + name + "/std"] = advantages.function_stds[f];
  }
  record["frac_reward_zero_std"] = advantages.zero_std_fraction;
  if (kl_penalty) {  // TRL's RLOO: the generation's per-token KL over its loss tokens
    record["kl"] = std::accumulate(all_kl.begin(), all_kl.end(), 0.0) / std::max(loss_tokens, 1.0);
  }
  std::vector<double> terminated;
  for (size_t i = 0; i < all_lengths.size(); ++i) {
    if (all_truncated[i] == 0.0) terminated.push_back(all_lengths[i]);
  }
  if (terminated.empty()) terminated.push_back(0.0);  // TRL's edge case: zeros
  record["completions/mean_length"] = nan_mean(all_lengths);
  record["completions/min_length"] = *std::min_element(all_lengths.begin(), all_lengths.end());
  record["completions/max_length"] = *std::max_element(all_lengths.begin(), all_lengths.end());
  record["completions/clipped_ratio"] = nan_mean(all_truncated);
  record["completions/mean_terminated_length"] = nan_mean(terminated);
  record["completions/min_terminated_length"] = *std::min_element(terminated.begin(), terminated.end());
  record["completions/max_terminated_length"] = *std::max_element(terminated.begin(), terminated.end());
  metrics_.push_back(std::move(record));
}

void RolloutPhase::log_completions(int64_t generation, int64_t step, const GlobalBatch& prompts,
                                   const std::vector<GenerationResult>& mine, const std::vector<double>& all_lengths,
                                   const RewardTable& table, const GroupAdvantages& advantages) {
  // Every rank's ids one after another, in the generation's order (each completion's length is
  // known to all).
  std::vector<double> ids;
  for (const GenerationResult& completion : mine) ids.insert(ids.end(), completion.ids.begin(), completion.ids.end());
  const std::vector<double> all_ids = concatenated_values(*run_.host, ids);
  if (run_.host->rank() != 0) return;
  if (!completions_log_) {
    const std::string path = config_.train.output_dir + "/completions.jsonl";
    std::filesystem::create_directories(config_.train.output_dir);
    if (run_.progress.step > 0) truncate_metrics_after(path, run_.progress.step);
    completions_log_ = std::make_unique<MetricsFile>(path, /*append=*/run_.progress.step > 0);
  }
  const size_t functions = table.functions;
  size_t offset = 0;
  for (size_t c = 0; c < all_lengths.size(); ++c) {
    const auto length = static_cast<size_t>(all_lengths[c]);
    const std::vector<int64_t> completion(all_ids.begin() + static_cast<std::ptrdiff_t>(offset),
                                          all_ids.begin() + static_cast<std::ptrdiff_t>(offset + length));
    offset += length;
    nlohmann::ordered_json record;
    record["step"] = step + 1;
    record["generation"] = generation;
    record["row"] = prompts.indices[c / static_cast<size_t>(geometry_.group_size)];
    record["completion_ids"] = completion;
    if (tokenizer_) record["completion"] = tokenizer_->decode(completion, true);
    nlohmann::ordered_json rewards = nlohmann::ordered_json::object();
    for (size_t f = 0; f < functions; ++f) {
      const double value = table.values[c * functions + f];
      rewards[rewards_.functions[f]->name()] = std::isnan(value) ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(value);
    }
    record["rewards"] = std::move(rewards);
    record["advantage"] = advantages.advantages[c];
    completions_log_->write(record);
  }
}

StepBatch RolloutPhase::step_batch(int64_t step, StepPhases& phases) {
  StepBatch out;
  for (int64_t i = 0; i < geometry_.grad_accum; ++i) {
    const int64_t k = step * geometry_.grad_accum + i;  // this rank's micro-batch over the run
    const int64_t generation = k / geometry_.generate_every();
    if (generation != buffered_) generate(generation, step, phases);
    out.micro_batches.push_back(buffer_[static_cast<size_t>(k % geometry_.steps_per_generation)]);
  }
  out.global = buffered_prompts_;
  return out;
}

nlohmann::ordered_json RolloutPhase::take_metrics() {
  nlohmann::ordered_json averaged = nlohmann::ordered_json::object();
  if (metrics_.empty()) return averaged;
  // As TRL averages a window's values: NaN left out (a reward no completion got), null when none is left.
  for (const auto& [key, value] : metrics_.front().items()) {
    std::vector<double> values;
    for (const nlohmann::ordered_json& record : metrics_) values.push_back(record[key].get<double>());
    const double mean = nan_mean(values);
    averaged[key] = std::isnan(mean) ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(mean);
  }
  metrics_.clear();
  return averaged;
}

}  // namespace st
