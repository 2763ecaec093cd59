// Tokenized pairs in memory: ragged token columns (flat int32 tokens + N+1 offsets), the same
// layout as the HDF5 shards. DPO pairs have prompt, chosen and rejected; SFT pairs have a prompt
// and a completion (held in the `chosen` column, stored as `completion`), and optionally a loss
// mask over it (multi-turn SFT: the assistant's turns are trained, the turns between are not).
// Prompt examples hold a prompt alone (their completions are sampled in training) and their
// source record as JSON, which the reward functions read.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "util/enum_names.h"

namespace st {

// dpo: a prompt with a chosen and a rejected completion; sft: one completion; kto: one
// completion labelled desirable or not (unpaired), scored beside its mismatched partner's
// completion for KTO's reference point (pair_dataset.h); prompt: a prompt whose completions an
// online objective samples (GRPO), with its source record (TRL's prompt-only data).
enum class PairKind { dpo, sft, kto, prompt };
template <>
struct EnumNames<PairKind> {
  static constexpr NamedValue<PairKind> table[] = {
      {PairKind::dpo, "dpo"}, {PairKind::sft, "sft"}, {PairKind::kto, "kto"}, {PairKind::prompt, "prompt"}};
};

// An example's second sequence in a batch: none; its own stored one (dpo's rejected); or its
// mismatched partner's completion (kto, read by PairDataset::example).
enum class SecondSequence { none, stored, partner };
// What an example of each kind holds, declared once: the shards' columns, prep's fields and the
// batch's rows follow this table, not the kind's name.
struct ExampleSchema {
  PairKind kind;
  const char* completion_column;  // the shard column (and `<name>_ids` token-id field) of its completion; null: none stored
  SecondSequence second;
  const char* second_column;      // with SecondSequence::stored
  bool labelled;                  // a desirable / undesirable label per example (kLabelDataset)
  bool maskable;                  // its completion may carry a loss mask (multi-turn SFT)
  bool keeps_record;              // its source record is stored as JSON (kRecordDataset) for the reward functions
};
inline constexpr ExampleSchema kExampleSchemas[] = {
    {PairKind::dpo, "chosen", SecondSequence::stored, "rejected", false, false, false},
    {PairKind::sft, "completion", SecondSequence::none, nullptr, false, true, false},
    {PairKind::kto, "completion", SecondSequence::partner, nullptr, true, false, false},
    {PairKind::prompt, nullptr, SecondSequence::none, nullptr, false, false, true}};
constexpr const ExampleSchema& schema_of(PairKind kind) {
  for (const ExampleSchema& schema : kExampleSchemas) {
    if (schema.kind == kind) return schema;
  }
  return kExampleSchemas[0];
}
// The sequences (rows) an example of `kind` becomes in a batch.
constexpr int64_t sequences_of(PairKind kind) { return schema_of(kind).second == SecondSequence::none ? 1 : 2; }
constexpr bool stores_rejected(PairKind kind) { return schema_of(kind).second == SecondSequence::stored; }
// Whether its examples carry a completion (the prompt kind's are sampled in training).
constexpr bool stores_completion(PairKind kind) { return schema_of(kind).completion_column != nullptr; }
// The kind whose examples carry a label (what a dataset with a label column is).
constexpr PairKind labelled_kind() {
  for (const ExampleSchema& schema : kExampleSchemas) {
    if (schema.labelled) return schema.kind;
  }
  return kExampleSchemas[0].kind;
}

struct Pair {
  std::vector<int32_t> prompt;
  std::vector<int32_t> chosen;    // the completion for SFT
  std::vector<int32_t> rejected;  // empty for SFT
  std::optional<float> ref_chosen_logp;
  std::optional<float> ref_rejected_logp;
  // SFT only: per completion token, 1 = carries loss; empty = every completion token does.
  std::vector<uint8_t> loss_mask{};
  std::optional<bool> label{};  // labelled kinds only: true = the completion is desirable (TRL's label)
  // Paired kinds, optional: how much the chosen completion is preferred (TRL's `margin`), which a
  // reward model's loss subtracts from its reward gap.
  std::optional<float> margin{};
  // Prompt examples: the source record as JSON text (its prompt and every other column).
  std::string record{};

  int64_t token_count() const;  // prompt + chosen + rejected
};

// Sequence i is tokens[offsets[i], offsets[i + 1]).
struct TokenColumn {
  std::vector<int32_t> tokens;
  std::vector<uint64_t> offsets{0};

  size_t size() const { return offsets.size() - 1; }
  size_t length(size_t i) const { return offsets[i + 1] - offsets[i]; }
  void append(const std::vector<int32_t>& sequence);
  std::vector<int32_t> at(size_t i) const;
};

// Byte strings the same way (a prompt example's source record).
struct TextColumn {
  std::vector<uint8_t> bytes;
  std::vector<uint64_t> offsets{0};

  size_t size() const { return offsets.size() - 1; }
  void append(const std::string& text);
  std::string at(size_t i) const;
};

struct PairTable {
  PairKind kind = PairKind::dpo;
  TokenColumn prompt, chosen, rejected;
  std::vector<float> ref_chosen_logp, ref_rejected_logp;  // empty, or one per pair
  std::vector<uint8_t> loss_mask;  // empty, or one per chosen token (offsets: chosen's)
  std::vector<uint8_t> labels;  // labelled kinds: one per example (1 = desirable)
  std::vector<float> margins;   // empty, or one per pair
  TextColumn records;           // kinds that keep their source record: one per example

  bool has_margins() const { return !margins.empty(); }

  size_t size() const { return prompt.size(); }
  bool has_ref_logps() const { return !ref_chosen_logp.empty(); }
  bool has_loss_mask() const { return !loss_mask.empty(); }
  // Appends; reference log-probs and margins must be present on all pairs of a table or on none. A pair
  // without a loss mask in a table with one gets an all-ones mask (and the other way round).
  void append(const Pair& pair);
  Pair at(size_t i) const;
  int64_t token_count() const;
};

}  // namespace st
