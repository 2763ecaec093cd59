// Text records for `shardtune prep --tokenizer MODEL_DIR`: a record of any text shape
// (record_shapes.h) rendered by the chat template and tokenized, prompt and completion apart.
// DPO: the history is the prompt, chosen/rejected the final replies. SFT: with TrainOn::all
// every assistant turn carries loss and the turns between are masked (Pair::loss_mask).
#pragma once

#include <nlohmann/json.hpp>

#include <variant>

#include "data/pair_table.h"
#include "prep/record_shapes.h"
#include "tokenizer/chat_template.h"

namespace st {

std::variant<Pair, LineProblem> tokenize_conversation(const Conversation& conversation, PairKind kind,
                                                      const ChatTemplate& chat, TrainOn train_on);

}  // namespace st
