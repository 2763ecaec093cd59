#include "eval/eval_context.h"

#include <stdexcept>

#include "eval/python_random.h"
#include "util/errors.h"

namespace st {
namespace {

// The examples the harness shows before `doc`: k drawn (k + 1 from the task's own documents,
// dropping the document itself, or an equal one, as the harness compares them).
std::vector<const EvalDoc*> draw_examples(const EvalTask& task, const EvalDoc& doc, PythonRandom& random) {
  const auto k = static_cast<size_t>(task.spec.num_fewshot);
  const std::vector<size_t> drawn = random.sample(task.fewshot_docs.size(), k + (task.fewshot_from_docs ? 1 : 0));
  std::vector<const EvalDoc*> examples;
  for (size_t index : drawn) {
    const EvalDoc& example = task.fewshot_docs[index];
    if (task.fewshot_from_docs && example.raw == doc.raw) continue;
    if (examples.size() < k) examples.push_back(&example);
  }
  return examples;
}

std::string plain_context(const TaskSpec& spec, const std::vector<const EvalDoc*>& examples, const EvalDoc& doc) {
  std::string text = spec.description;
  for (const EvalDoc* example : examples) {
    text += example->context;
    if (!example->target.empty()) text += spec.target_delimiter + example->target + spec.fewshot_delimiter;
  }
  return text + doc.context;
}

std::string chat_context(const TaskSpec& spec, const std::vector<const EvalDoc*>& examples, const EvalDoc& doc,
                         const ChatTemplate& chat, const std::string& path) {
  std::vector<ChatMessage> messages;
  if (!spec.description.empty()) messages.push_back({ChatRole::system, spec.description});
  for (const EvalDoc* example : examples) {
    messages.push_back({ChatRole::user, example->context});
    messages.push_back({ChatRole::assistant, example->target});
  }
  messages.push_back({ChatRole::user, doc.context});
  try {
    return chat.render_prompt(messages);
  } catch (const std::invalid_argument& error) {
    throw DataError(path + ":" + std::to_string(doc.line) + ": the " + enum_name(chat.kind()) +
                    " chat template cannot render this document's turns (" + error.what() +
                    "); set chat_template to false for this task");
  }
}

}  // namespace

std::vector<std::string> document_contexts(const EvalTask& task, const ChatTemplate* chat) {
  if (task.spec.chat_template && chat == nullptr) {
    throw DataError(task.path + ": the task sets chat_template = true but the model has no chat template; "
                    "pass --template NAME (and --tokenizer DIR) or set chat_template to false");
  }
  PythonRandom random(task.spec.fewshot_seed);
  std::vector<std::string> contexts;
  contexts.reserve(task.docs.size());
  for (const EvalDoc& doc : task.docs) {
    if (task.spec.kind == TaskKind::loglikelihood_rolling) {
      contexts.emplace_back();
      continue;
    }
    const std::vector<const EvalDoc*> examples =
        task.spec.num_fewshot > 0 ? draw_examples(task, doc, random) : std::vector<const EvalDoc*>{};
    contexts.push_back(task.spec.chat_template ? chat_context(task.spec, examples, doc, *chat, task.path)
                                               : plain_context(task.spec, examples, doc));
  }
  return contexts;
}

}  // namespace st
