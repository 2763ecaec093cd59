#include "tokenizer/chat_template.h"

#include <stdexcept>

#include "util/errors.h"

namespace st {
namespace {

void require_token(const Tokenizer& tokenizer, const std::string& token, const char* template_name) {
  if (!tokenizer.token_id(token)) {
    throw TokenizerError(tokenizer.source() + ": template '" + template_name + "' writes " + token +
                         ", which this tokenizer does not have; pick the template of this model (--template)");
  }
}

// Qwen 2.5's chat_template writes this system message when the conversation has none.
constexpr const char* kQwenDefaultSystem = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.";

bool system_first(const std::vector<ChatMessage>& messages) {
  return !messages.empty() && messages.front().role == ChatRole::system;
}

// system? (user assistant)* user, or a system message alone (the completion answers it): the
// shapes every template renders. A whole conversation (`ends_with_reply`) has the reply after.
void check_turns(const std::vector<ChatMessage>& messages, TemplateKind kind, bool ends_with_reply = false) {
  const size_t first = system_first(messages) ? 1 : 0;
  if (messages.empty()) throw std::invalid_argument("the prompt has no message");
  for (size_t i = first; i < messages.size(); ++i) {
    const ChatRole role = messages[i].role;
    if (role == ChatRole::tool || role == ChatRole::function || role == ChatRole::ipython) {
      throw std::invalid_argument("message " + std::to_string(i) + " is a '" + enum_name(role) +
                                  "' message, which template '" + enum_name(kind) +
                                  "' does not render; drop tool turns from the data or fold them into the text");
    }
    const ChatRole expected = (i - first) % 2 == 0 ? ChatRole::user : ChatRole::assistant;
    if (role != expected) {
      throw std::invalid_argument("message " + std::to_string(i) + " has role '" + enum_name(role) + "', expected '" +
                                  enum_name(expected) + "' (system first, then user/assistant turns ending with user)");
    }
  }
  if (!ends_with_reply && messages.back().role == ChatRole::assistant) {
    throw std::invalid_argument("the prompt ends with an assistant turn, so the completion would answer the "
                                "assistant; end the prompt with a user message (or move that turn into the completion)");
  }
}

}  // namespace


std::optional<TemplateKind> detect_template(const Tokenizer& tokenizer) {
  if (tokenizer.token_id("<|start_header_id|>") && tokenizer.token_id("<|eot_id|>")) return TemplateKind::llama3;
  if (tokenizer.token_id("<|im_start|>") && tokenizer.token_id("<|im_end|>")) return TemplateKind::chatml;
  return std::nullopt;
}

ChatTemplate::ChatTemplate(TemplateKind kind, const Tokenizer& tokenizer) : kind_(kind), tokenizer_(tokenizer) {
  switch (kind) {
    case TemplateKind::llama3:
      for (const char* token : {"<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"}) {
        require_token(tokenizer, token, enum_name(kind));
      }
      break;
    case TemplateKind::llama2:
    case TemplateKind::mistral:
      for (const char* token : {"<s>", "</s>"}) require_token(tokenizer, token, enum_name(kind));
      break;
    case TemplateKind::chatml:
    case TemplateKind::qwen:
      for (const char* token : {"<|im_start|>", "<|im_end|>"}) require_token(tokenizer, token, enum_name(kind));
      break;
    case TemplateKind::plain:
      bos_ = tokenizer.bos_token();
      eos_ = tokenizer.eos_token();
      if (eos_.empty()) {
        throw TokenizerError(tokenizer.source() + ": template 'plain' ends completions with the model's eos_token, "
                             "but tokenizer_config.json beside it names none");
      }
      break;
  }
}

std::string ChatTemplate::render_prompt(const std::vector<ChatMessage>& messages) const {
  check_turns(messages, kind_);
  std::string out;
  switch (kind_) {
    case TemplateKind::llama3:
      out = "<|begin_of_text|>";
      for (const ChatMessage& m : messages) {
        out += std::string("<|start_header_id|>") + enum_name(m.role) + "<|end_header_id|>\n\n" + m.content + "<|eot_id|>";
      }
      return out + "<|start_header_id|>assistant<|end_header_id|>\n\n";
    case TemplateKind::qwen:
      if (!system_first(messages)) out = "<|im_start|>system\n" + std::string(kQwenDefaultSystem) + "<|im_end|>\n";
      [[fallthrough]];
    case TemplateKind::chatml:
      for (const ChatMessage& m : messages) out += std::string("<|im_start|>") + enum_name(m.role) + "\n" + m.content + "<|im_end|>\n";
      return out + "<|im_start|>assistant\n";
    case TemplateKind::llama2: {
      // Every user turn opens with <s>[INST]; the system prompt goes inside the first one (a
      // system-only prompt: inside an empty user turn).
      std::string system;
      if (messages.size() == 1 && system_first(messages)) {
        return "<s>[INST] <<SYS>>\n" + messages.front().content + "\n<</SYS>>\n\n [/INST]";
      }
      for (const ChatMessage& m : messages) {
        if (m.role == ChatRole::system) {
          system = "<<SYS>>\n" + m.content + "\n<</SYS>>\n\n";
        } else if (m.role == ChatRole::user) {
          out += "<s>[INST] " + system + m.content + " [/INST]";
          system.clear();
        } else {
          out += " " + m.content + " </s>";
        }
      }
      return out;
    }
    case TemplateKind::mistral: {
      // One <s>; the system prompt opens the first user turn; replies end with </s>.
      if (messages.size() == 1 && system_first(messages)) {
        throw std::invalid_argument("template 'mistral' writes the system prompt into the first user turn, so a "
                                    "prompt of a system message alone has no rendering; add the user's message");
      }
      out = "<s>";
      std::string system = system_first(messages) ? messages.front().content + "\n\n" : "";
      for (size_t i = system_first(messages) ? 1 : 0; i < messages.size(); ++i) {
        if (messages[i].role == ChatRole::user) {
          out += " [INST] " + system + messages[i].content + " [/INST]";
          system.clear();
        } else {
          out += render_completion(messages[i].content);
        }
      }
      return out;
    }
    case TemplateKind::plain:
      out = bos_;
      for (size_t i = 0; i < messages.size(); ++i) out += (i ? "\n" : "") + messages[i].content;
      return out + "\n";
  }
  return out;
}

std::string ChatTemplate::render_completion(const std::string& reply) const {
  switch (kind_) {
    case TemplateKind::llama3: return reply + "<|eot_id|>";
    case TemplateKind::chatml:
    case TemplateKind::qwen: return reply + "<|im_end|>\n";
    case TemplateKind::llama2: return " " + reply + " </s>";
    case TemplateKind::mistral: return " " + reply + "</s>";
    case TemplateKind::plain: return reply + eos_;
  }
  return reply;
}

RenderedConversation ChatTemplate::render_conversation(const std::vector<ChatMessage>& messages,
                                                      TrainOn train_on) const {
  if (messages.empty() || messages.back().role != ChatRole::assistant) {
    throw std::invalid_argument("the conversation must end with the assistant's message (the completion)");
  }
  check_turns(messages, kind_, true);
  // The assistant turns that are trained: the last trainable one, or every one; the turns after
  // the last carry no loss and are left out.
  size_t last = messages.size();
  for (size_t i = messages.size(); i-- > 0 && last == messages.size();) {
    if (messages[i].role == ChatRole::assistant && messages[i].trained) last = i;
  }
  if (last == messages.size()) throw std::invalid_argument("no assistant message carries loss (all loss weights are 0)");
  std::vector<size_t> replies;
  for (size_t i = 0; i <= last; ++i) {
    const bool trainable = messages[i].role == ChatRole::assistant && messages[i].trained;
    if (trainable && (train_on == TrainOn::all || i == last)) replies.push_back(i);
  }
  const std::vector<ChatMessage> before_first(messages.begin(), messages.begin() + static_cast<int64_t>(replies[0]));
  RenderedConversation out{render_prompt(before_first), {}};
  std::string rendered = out.prompt;
  for (size_t k = 0; k < replies.size(); ++k) {
    out.completion.push_back({render_completion(messages[replies[k]].content), true});
    rendered += out.completion.back().text;
    if (k + 1 == replies.size()) break;
    // The turns up to the next reply: that reply's prompt less what is already rendered.
    const std::vector<ChatMessage> before_next(messages.begin(), messages.begin() + static_cast<int64_t>(replies[k + 1]));
    const std::string next_prompt = render_prompt(before_next);
    if (next_prompt.compare(0, rendered.size(), rendered) != 0) {
      throw std::invalid_argument(std::string("template '") + enum_name(kind_) +
                                  "' has no multi-turn rendering to train every assistant turn on; use --train-on last");
    }
    out.completion.push_back({next_prompt.substr(rendered.size()), false});
    rendered = next_prompt;
  }
  return out;
}

ConversationIds ChatTemplate::conversation_ids(const std::vector<ChatMessage>& messages, TrainOn train_on) const {
  const RenderedConversation rendered = render_conversation(messages, train_on);
  ConversationIds out{tokenizer_.encode(rendered.prompt), {}, {}};
  for (const RenderedSpan& span : rendered.completion) {
    const std::vector<int32_t> ids = tokenizer_.encode(span.text);
    out.completion.insert(out.completion.end(), ids.begin(), ids.end());
    out.loss_mask.insert(out.loss_mask.end(), ids.size(), span.trained ? 1 : 0);
  }
  return out;
}

std::vector<int32_t> ChatTemplate::prompt_ids(const std::vector<ChatMessage>& messages) const {
  return tokenizer_.encode(render_prompt(messages));
}

std::vector<int32_t> ChatTemplate::completion_ids(const std::string& reply) const {
  return tokenizer_.encode(render_completion(reply));
}

}  // namespace st
