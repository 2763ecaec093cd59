#include "train/reward_model.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <filesystem>

#include "data/padded_rows.h"
#include "fsdp/shard_source.h"
#include "prep/record_shapes.h"
#include "util/errors.h"
#include "util/hub_id.h"

namespace st {
namespace {

std::string checked_directory(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) return path;
  if (looks_like_hub_id(path)) {
    throw ConfigError("reward.model = " + path + ": " + hub_id_refusal(path) + ", then set reward.model = " +
                      hub_download_directory(path));
  }
  throw ConfigError("reward.model = " + path + ": no such directory; give a reward model's directory (config.json, "
                    "*.safetensors and its tokenizer)");
}

// TRL's name for a reward model: the last component of its path.
std::string last_component(const std::string& path) {
  std::filesystem::path p(path);
  if (p.filename().empty()) p = p.parent_path();
  return p.filename().string();
}

Tokenizer reward_tokenizer(const std::string& path) {
  if (!holds_tokenizer(path)) {
    throw ConfigError("reward.model = " + path + ": holds no tokenizer (tokenizer.json); TRL reads the completions "
                      "with the reward model's own tokenizer: copy its files there");
  }
  return Tokenizer::from_file(path);
}

// The tokenizer's pad token, else its EOS (TRL pads with EOS then, and so reads the model).
int64_t pad_id_of(const Tokenizer& tokenizer, const std::string& path) {
  std::string pad;
  for (const auto& [name, content] : tokenizer.special_tokens()) {
    if (name == "pad_token") pad = content;
  }
  if (pad.empty()) pad = tokenizer.eos_token();
  const std::optional<int32_t> id = pad.empty() ? std::nullopt : tokenizer.token_id(pad);
  if (!id) {
    throw TokenizerError("reward.model = " + path + ": its tokenizer_config.json names no pad_token or eos_token " +
                         "that the tokenizer holds; the rewards are read at the last token that is not padding, so " +
                         "set pad_token there");
  }
  return *id;
}

}  // namespace

RewardModel::RewardModel(const std::string& path, FsdpModel& policy, int64_t rows, const std::string& template_kwargs)
    : path_(checked_directory(path)), name_(last_component(path)), rows_(std::max<int64_t>(rows, 1)),
      tokenizer_(reward_tokenizer(path_)) {
  ModelConfig config = model_config_of(path, "");
  if (config.head == ModelHead::lm) {
    throw ConfigError("reward.model = " + path + ": a causal LM (" + hf_architecture(config) + "), not a reward " +
                      "model; give a *ForSequenceClassification with num_labels 1 or the export of a train.stage = " +
                      "rm run");
  }
  pad_id_ = pad_id_of(tokenizer_, path);
  config.pad_token_id = pad_id_;  // as TRL sets it: the reward is read before the padding
  if (!tokenizer_.chat_template().empty()) chat_.emplace(tokenizer_, JinjaOptions{template_kwargs, "", ""});
  ShardingGroups& groups = policy.groups();
  ModelShards shards = load_model_shards(config, path, "", 0, groups.shard->size(), groups.shard->rank());
  FsdpModelOptions frozen = policy.options();
  frozen.frozen = true;
  frozen.recompute = {};
  frozen.adapter = {};
  frozen.gradients_in_flight_only = false;
  std::vector<at::Tensor> compute;
  for (const at::Tensor& master : shards.masters) compute.push_back(master.to(frozen.device, frozen.compute_dtype));
  shards.masters.clear();
  model_ = std::make_unique<FsdpModel>(shards.config, shards.units, groups, std::move(compute), frozen);
}

RewardModel::~RewardModel() = default;

std::string RewardModel::text_of(const RewardBatch& batch, size_t i) const {
  const nlohmann::json& prompt = batch.prompt_values.at(i);
  if (!prompt.is_array()) return (prompt.is_string() ? prompt.get<std::string>() : batch.prompts.at(i)) + batch.completions.at(i);
  std::vector<ChatMessage> messages;
  if (const auto problem = read_role_messages(nlohmann::json{{"prompt", prompt}}, "prompt", messages)) {
    throw RewardError("reward " + name_ + ": dataset row " + std::to_string(batch.rows.at(i)) + ": " + problem->detail);
  }
  if (!chat_) {
    throw RewardError("reward " + name_ + ": dataset row " + std::to_string(batch.rows.at(i)) + " is conversational " +
                      "and reward.model = " + path_ + " has no chat template to render it (tokenizer_config.json " +
                      "chat_template or chat_template.jinja)");
  }
  messages.push_back({ChatRole::assistant, batch.completions.at(i)});
  return chat_->render(messages, /*add_generation_prompt=*/false).text;
}

std::vector<double> RewardModel::rewards(const RewardBatch& batch) const {
  if (!batch.decoded) {
    throw RewardError("reward " + name_ + " reads the completions' text, and the policy has no tokenizer to decode them");
  }
  const int64_t vocab = model_->config().vocab_size;
  std::vector<double> out;
  for (size_t first = 0; first < batch.size(); first += static_cast<size_t>(rows_)) {
    const size_t end = std::min(batch.size(), first + static_cast<size_t>(rows_));
    std::vector<std::vector<int32_t>> ids;
    for (size_t i = first; i < end; ++i) {
      ids.push_back(tokenizer_.encode(text_of(batch, i)));
      for (const int32_t id : ids.back()) {
        if (id >= vocab) {
          throw RewardError("reward " + name_ + ": the text of completion " + std::to_string(i) + " (dataset row " +
                            std::to_string(batch.rows.at(i)) + ") holds token " + std::to_string(id) + ", past " +
                            "reward.model's vocab_size " + std::to_string(vocab) + " (" + path_ + "/config.json)");
        }
      }
    }
    // Each text a prompt without a response: no targets, so each row's reward is read at its last
    // token that is not padding.
    const std::vector<int32_t> none;
    std::vector<PromptResponse<int32_t>> rows;
    for (const std::vector<int32_t>& text : ids) rows.push_back({&text, &none});
    const PaddedRows padded = pad_prompt_response_rows(rows, pad_id_);
    const at::Tensor scores =
        model_->sequence_logps(padded.input_ids, padded.targets).to(at::kCPU, at::kDouble).contiguous();
    out.insert(out.end(), scores.data_ptr<double>(), scores.data_ptr<double>() + scores.numel());
  }
  return out;
}

}  // namespace st
