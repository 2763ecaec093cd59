#include "data/pair_table.h"

#include "util/errors.h"

namespace st {

int64_t Pair::token_count() const {
  return static_cast<int64_t>(prompt.size() + chosen.size() + rejected.size());
}

void TokenColumn::append(const std::vector<int32_t>& sequence) {
  tokens.insert(tokens.end(), sequence.begin(), sequence.end());
  offsets.push_back(tokens.size());
}

std::vector<int32_t> TokenColumn::at(size_t i) const {
  return {tokens.begin() + static_cast<int64_t>(offsets[i]),
          tokens.begin() + static_cast<int64_t>(offsets[i + 1])};
}

void TextColumn::append(const std::string& text) {
  bytes.insert(bytes.end(), text.begin(), text.end());
  offsets.push_back(bytes.size());
}

std::string TextColumn::at(size_t i) const {
  return {bytes.begin() + static_cast<int64_t>(offsets[i]), bytes.begin() + static_cast<int64_t>(offsets[i + 1])};
}

void PairTable::append(const Pair& pair) {
  const bool with_ref = pair.ref_chosen_logp.has_value() && pair.ref_rejected_logp.has_value();
  if (size() > 0 && with_ref != has_ref_logps()) {
    throw DataError("pairs mix rows with and without reference log-probs");
  }
  if (!pair.loss_mask.empty() && pair.loss_mask.size() != pair.chosen.size()) {
    throw DataError("a pair's loss mask has " + std::to_string(pair.loss_mask.size()) + " entries for " +
                    std::to_string(pair.chosen.size()) + " completion tokens");
  }
  if (!pair.loss_mask.empty() && !has_loss_mask()) loss_mask.assign(chosen.tokens.size(), 1);
  if (has_loss_mask() || !pair.loss_mask.empty()) {
    if (pair.loss_mask.empty()) {
      loss_mask.insert(loss_mask.end(), pair.chosen.size(), 1);
    } else {
      loss_mask.insert(loss_mask.end(), pair.loss_mask.begin(), pair.loss_mask.end());
    }
  }
  if (size() > 0 && pair.margin.has_value() != has_margins()) {
    throw DataError("pairs mix rows with and without a margin: give every pair one or none");
  }
  if (pair.margin.has_value() && !stores_rejected(kind)) {
    throw DataError(std::string("a margin is a preference pair's; a ") + enum_name(kind) + " example has none");
  }
  const bool labelled = schema_of(kind).labelled;
  if (labelled && !pair.label.has_value()) {
    throw DataError(std::string("a ") + enum_name(kind) + " example has no desirable / undesirable label");
  }
  const bool keeps_record = schema_of(kind).keeps_record;
  if (keeps_record && pair.record.empty()) {
    throw DataError(std::string("a ") + enum_name(kind) + " example has no source record");
  }
  if (!stores_completion(kind) && !pair.chosen.empty()) {
    throw DataError(std::string("a ") + enum_name(kind) + " example holds a prompt alone, not a completion");
  }
  prompt.append(pair.prompt);
  chosen.append(pair.chosen);
  if (keeps_record) records.append(pair.record);
  if (stores_rejected(kind)) rejected.append(pair.rejected);
  if (labelled) labels.push_back(*pair.label ? 1 : 0);
  if (pair.margin) margins.push_back(*pair.margin);
  if (with_ref) {
    ref_chosen_logp.push_back(*pair.ref_chosen_logp);
    ref_rejected_logp.push_back(*pair.ref_rejected_logp);
  }
}

Pair PairTable::at(size_t i) const {
  Pair pair{prompt.at(i), chosen.at(i), {}, std::nullopt, std::nullopt, {}};
  if (stores_rejected(kind)) pair.rejected = rejected.at(i);
  if (schema_of(kind).labelled) pair.label = labels[i] != 0;
  if (has_loss_mask()) {
    pair.loss_mask.assign(loss_mask.begin() + static_cast<int64_t>(chosen.offsets[i]),
                          loss_mask.begin() + static_cast<int64_t>(chosen.offsets[i + 1]));
  }
  if (has_ref_logps()) {
    pair.ref_chosen_logp = ref_chosen_logp[i];
    pair.ref_rejected_logp = ref_rejected_logp[i];
  }
  if (has_margins()) pair.margin = margins[i];
  if (schema_of(kind).keeps_record) pair.record = records.at(i);
  return pair;
}

int64_t PairTable::token_count() const {
  return static_cast<int64_t>(prompt.tokens.size() + chosen.tokens.size() + rejected.tokens.size());
}

}  // namespace st
