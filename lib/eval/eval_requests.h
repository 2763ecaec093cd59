// Token requests from texts, as the harness's Hugging Face model class makes them: no special
// tokens unless add_bos; a context's trailing whitespace moved onto its continuation; the
// continuation's ids those of (context + continuation) after the context's; an empty context
// replaced by the prefix token; inputs cut from the left to the model's max length; perplexity
// texts in disjoint windows of max_length tokens, each conditioned on the tokens before it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hf/model_config.h"
#include "model/sequence_scorer.h"
#include "tokenizer/tokenizer.h"

namespace st {

struct EncodeSettings {
  bool add_bos = false;        // the harness's add_bos_token (off for Llama in its HF class)
  int64_t prefix_id = 0;       // conditions empty contexts and first windows: BOS, else EOS
  int64_t bos_id = -1;         // for add_bos; -1: the tokenizer has none
  int64_t max_length = 2048;   // tokens the model sees at once
};

// The settings a model and its tokenizer imply: BOS from the tokenizer's bos_token, the prefix
// token (BOS, else EOS, else config.json's eos_token_id), `max_length` 0 = the model's
// max_position_embeddings. Throws ConfigError (prefixed by `who`) when add_bos has no BOS or no
// token can condition an empty context.
EncodeSettings encode_settings_for(const Tokenizer& tokenizer, const ModelConfig& config, bool add_bos, int64_t max_length,
                                   const std::string& who);

// The ids that end a generation: config.json's eos_token_id(s) and the tokenizer's eos_token.
std::vector<int64_t> end_of_sequence_ids(const ModelConfig& config, const Tokenizer* tokenizer);

std::vector<int64_t> encode_text(const Tokenizer& tokenizer, const std::string& text, const EncodeSettings& settings);

// log p(continuation | context). Throws DataError (`where` names the document) when the
// continuation alone is longer than max_length.
ScoreRequest loglikelihood_request(const Tokenizer& tokenizer, const std::string& context, const std::string& continuation,
                                   const EncodeSettings& settings, const std::string& where);

// The windows whose completion log-probs sum to the text's: every token scored exactly once.
std::vector<ScoreRequest> rolling_windows(const std::vector<int64_t>& tokens, int64_t prefix_id, int64_t max_length);

// A generation prompt: the context's ids, its last (max_length - max_new_tokens) kept.
std::vector<int64_t> generation_prompt(const Tokenizer& tokenizer, const std::string& context, const EncodeSettings& settings,
                                       int64_t max_new_tokens);

}  // namespace st
