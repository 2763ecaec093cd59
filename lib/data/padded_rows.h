// Prompt + response rows as model input: right-padded token ids [R, T] and targets [R, T] that
// hold the next token at (trained) response positions and kIgnoreTarget elsewhere (position t predicts
// token t + 1, so the response is predicted from the last prompt token on). Right padding is
// safe under causal attention. Shared by the scorer (lib/model) and the training collation.
#pragma once

#include <ATen/ATen.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace st {

constexpr int64_t kIgnoreTarget = -100;  // targets equal to this score 0 and get no gradient

struct PaddedRows {
  at::Tensor input_ids;  // [R, T] int64
  at::Tensor targets;    // [R, T] int64
};

template <typename Token>
struct PromptResponse {
  const std::vector<Token>* prompt;
  const std::vector<Token>* response;
  const std::vector<uint8_t>* loss_mask = nullptr;  // per response token; null or empty: all
};

// Whether response token j carries loss under `mask` (empty: every one does).
inline bool trained(const std::vector<uint8_t>* mask, size_t j) {
  return mask == nullptr || mask->empty() || (*mask)[j] != 0;
}

// Targets a prompt + response row carries: every trained response token, less the first when
// there is no prompt token to predict it from.
template <typename Token>
int64_t response_targets(const std::vector<Token>& prompt, const std::vector<Token>& response,
                         const std::vector<uint8_t>* mask = nullptr) {
  int64_t count = 0;
  for (size_t j = prompt.empty() ? 1 : 0; j < response.size(); ++j) count += trained(mask, j) ? 1 : 0;
  return count;
}

template <typename Token>
PaddedRows pad_prompt_response_rows(const std::vector<PromptResponse<Token>>& rows, int64_t pad_id) {
  int64_t longest = 1;
  for (const auto& row : rows) {
    longest = std::max<int64_t>(longest, row.prompt->size() + row.response->size());
  }
  const auto count = static_cast<int64_t>(rows.size());
  PaddedRows out{at::full({count, longest}, pad_id, at::kLong),
                 at::full({count, longest}, kIgnoreTarget, at::kLong)};
  auto ids = out.input_ids.accessor<int64_t, 2>();
  auto targets = out.targets.accessor<int64_t, 2>();
  for (int64_t r = 0; r < count; ++r) {
    const auto& prompt = *rows[r].prompt;
    const auto& response = *rows[r].response;
    const auto length = static_cast<int64_t>(prompt.size() + response.size());
    for (size_t t = 0; t < prompt.size(); ++t) ids[r][t] = prompt[t];
    for (size_t t = 0; t < response.size(); ++t) ids[r][prompt.size() + t] = response[t];
    const auto prompt_length = static_cast<int64_t>(prompt.size());
    for (int64_t t = std::max<int64_t>(0, prompt_length - 1); t + 1 < length; ++t) {
      if (trained(rows[r].loss_mask, static_cast<size_t>(t + 1 - prompt_length))) targets[r][t] = ids[r][t + 1];
    }
  }
  return out;
}

}  // namespace st
