// The text a model is conditioned on for each document, as the harness builds it: the
// description, k labeled examples (text, target delimiter, target, few-shot delimiter) drawn by
// Python's random.sample from one generator seeded once per task and advanced document by
// document in file order (so every rank count gives the same prompts), then the document's
// text. With the chat template: system = description, each example a user / assistant turn.
#pragma once

#include <string>
#include <vector>

#include "eval/eval_task.h"
#include "tokenizer/chat_template.h"

namespace st {

// One per task.docs entry. `chat` is used when the task sets chat_template (else may be null).
// Throws DataError when the chat template cannot render the turns.
std::vector<std::string> document_contexts(const EvalTask& task, const ChatTemplate* chat);

}  // namespace st
