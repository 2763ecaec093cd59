#include "prep/prep_text.h"

#include <algorithm>
#include <stdexcept>

#include "jinja/template_error.h"
#include "util/errors.h"

namespace st {

std::variant<Pair, LineProblem> tokenize_conversation(const Conversation& conversation, PairKind kind,
                                                      const ChatTemplate& chat, TrainOn train_on) {
  Pair pair;
  try {
    if (!stores_completion(kind)) {  // a prompt alone, ready for the sampled reply
      pair.prompt = conversation.text_prompt ? chat.tokenizer().encode_with_special_tokens(*conversation.text_prompt)
                                             : chat.prompt_ids(conversation.messages);
      return pair;
    }
    if (stores_rejected(kind)) {
      pair.prompt = chat.prompt_ids(conversation.messages);
      pair.chosen = chat.completion_ids(conversation.messages, conversation.chosen);
      pair.rejected = chat.completion_ids(conversation.messages, conversation.rejected);
      return pair;
    }
    // A label is one completion's: the final reply, the turns before it its prompt.
    const bool last_only = conversation.last_turn_only || schema_of(kind).labelled;
    ConversationIds ids = chat.conversation_ids(conversation.messages, last_only ? TrainOn::last : train_on);
    pair.label = conversation.label;
    pair.prompt = std::move(ids.prompt);
    pair.chosen = std::move(ids.completion);
    // An all-ones mask says nothing: leave it out (the shard then needs no mask dataset).
    if (std::find(ids.loss_mask.begin(), ids.loss_mask.end(), 0) != ids.loss_mask.end()) {
      pair.loss_mask = std::move(ids.loss_mask);
    }
  } catch (const jinja::TemplateRaised& e) {
    return LineProblem{LineReason::template_refused, "chat template " + e.located()};
  } catch (const jinja::TemplateError& e) {
    return LineProblem{LineReason::template_failed, "chat template " + e.located()};
  } catch (const std::invalid_argument& e) {
    return LineProblem{LineReason::bad_turns, e.what()};
  } catch (const TokenizerError& e) {
    return LineProblem{LineReason::untokenizable, e.what()};
  }
  return pair;
}

}  // namespace st
