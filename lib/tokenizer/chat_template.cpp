#include "tokenizer/chat_template.h"

#include <algorithm>
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

// Qwen3's Jinja reads a reply holding '</think>' as reasoning (before the first '</think>', after
// the last '<think>' ahead of it; no newline at either end, which the Jinja's strip('\n') then
// keeps) and an answer (after the last '</think>', no leading newline); a reply without one is
// all answer, as given.
struct ThoughtReply {
  std::string reasoning, answer;
};

std::string without_leading_newlines(const std::string& text) {
  const size_t from = text.find_first_not_of('\n');
  return from == std::string::npos ? "" : text.substr(from);
}

std::string without_trailing_newlines(const std::string& text) {
  const size_t last = text.find_last_not_of('\n');
  return last == std::string::npos ? "" : text.substr(0, last + 1);
}

ThoughtReply split_thought(const std::string& reply) {
  const std::string open = "<think>", close = "</think>";
  const size_t first_close = reply.find(close);
  if (first_close == std::string::npos) return {"", reply};
  std::string reasoning = without_trailing_newlines(reply.substr(0, first_close));
  const size_t last_open = reasoning.rfind(open);
  if (last_open != std::string::npos) reasoning = reasoning.substr(last_open + open.size());
  return {without_leading_newlines(reasoning), without_leading_newlines(reply.substr(reply.rfind(close) + close.size()))};
}

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
  if (tokenizer.token_id("<|im_start|>") && tokenizer.token_id("<|im_end|>")) {
    const bool hybrid_thinking =
        tokenizer.token_id("<think>") && tokenizer.chat_template().find("enable_thinking") != std::string::npos;
    return hybrid_thinking ? TemplateKind::qwen3 : TemplateKind::chatml;
  }
  return std::nullopt;
}

std::string chatml_default_system(const std::string& jinja) {
  const std::string open = "<|im_start|>system", close = "<|im_end|>";
  for (size_t at = jinja.find(open); at != std::string::npos; at = jinja.find(open, at + 1)) {
    size_t from = at + open.size();
    if (jinja.compare(from, 1, "\n") == 0) {
      from += 1;
    } else if (jinja.compare(from, 2, "\\n") == 0) {
      from += 2;
    } else {
      continue;
    }
    const size_t end = jinja.find(close, from);
    if (end == std::string::npos) break;
    const std::string literal = jinja.substr(from, end - from);
    // Jinja code between the two (a branch that writes the conversation's own system message)
    // is no literal; escapes inside a Jinja string literal are undone.
    std::string text;
    bool code = literal.empty() || literal.find("{{") != std::string::npos || literal.find("{%") != std::string::npos;
    for (size_t i = 0; i < literal.size() && !code; ++i) {
      const char c = literal[i];
      if (c == '\\' && i + 1 < literal.size()) {
        const char next = literal[++i];
        text += next == 'n' ? '\n' : next;
      } else if (c == '\'' || c == '"' || c == '+') {
        code = true;
      } else {
        text += c;
      }
    }
    if (!code) return text;
  }
  return "";
}

std::optional<ChatTemplate> ChatTemplate::implied_by(const Tokenizer& tokenizer) {
  const std::optional<TemplateKind> kind = detect_template(tokenizer);
  if (!kind) return std::nullopt;
  ChatTemplate chat(*kind, tokenizer);
  if (*kind == TemplateKind::chatml) chat.default_system_ = chatml_default_system(tokenizer.chat_template());
  chat.chosen_because_ = std::string("from the tokenizer's special tokens") +
                         (*kind == TemplateKind::qwen3 ? " and its Jinja's hybrid thinking, on; --template qwen3_nothink turns it off"
                                                       : "") +
                         (chat.default_system_.empty() ? "" : ", with the model template's default system prompt");
  return chat;
}

std::optional<ChatTemplate> ChatTemplate::named_or_implied(std::optional<TemplateKind> named, const Tokenizer& tokenizer,
                                                           const JinjaOptions& jinja) {
  if (!jinja.template_file.empty()) {
    if (named && *named != TemplateKind::jinja) {
      throw TokenizerError("--template-file " + jinja.template_file + " is a Jinja template: it goes with --template jinja "
                           "(or auto), not '" + enum_name(*named) + "'");
    }
    ChatTemplate own(TemplateKind::jinja, tokenizer, jinja);
    if (!named) own.chosen_because_ = "the Jinja template of --template-file " + jinja.template_file;
    return own;
  }
  if (named) return ChatTemplate(*named, tokenizer, jinja);
  std::optional<ChatTemplate> builtin = implied_by(tokenizer);
  if (tokenizer.chat_template().empty()) {
    if (builtin) builtin->chosen_because_ += "; the tokenizer has no chat_template";
    return builtin;
  }
  std::optional<ChatTemplate> own;
  try {
    own.emplace(TemplateKind::jinja, tokenizer, jinja);
  } catch (const TokenizerError& e) {
    if (!builtin) throw;
    builtin->chosen_because_ += std::string("; its own chat_template is not used: ") + e.what();
    return builtin;
  }
  if (builtin) {
    const std::string difference = probe_difference(*builtin, *own);
    if (difference.empty()) {
      builtin->chosen_because_ += "; it renders the probe conversations exactly as the model's chat_template does";
      return builtin;
    }
    if (probe_difference(*builtin, *own, true).empty()) {
      builtin->chosen_because_ += "; it renders the probe conversations as the model's chat_template does, and also "
                                  "cuts the multi-turn ones whose earlier replies that template rewrites";
      return builtin;
    }
    if (own->ignores_generation_prompt() && probe_prompts_alike(*builtin, *own)) {
      builtin->chosen_because_ += "; it renders the prompts as the model's chat_template does, which writes its "
                                  "generation prompt even when not asked (so its completions would end with the next "
                                  "turn's header): the built-in one ends them with the turn";
      return builtin;
    }
    own->chosen_because_ = "the model's chat_template (" + tokenizer.chat_template_file() + "), which built-in '" +
                           enum_name(builtin->kind()) + "' does not equal: " + difference;
  } else {
    own->chosen_because_ = "the model's chat_template (" + tokenizer.chat_template_file() +
                           "); its special tokens imply no built-in template";
  }
  return own;
}

ChatTemplate::ChatTemplate(TemplateKind kind, const Tokenizer& tokenizer, const JinjaOptions& jinja)
    : kind_(kind), tokenizer_(tokenizer) {
  switch (kind) {
    case TemplateKind::jinja: jinja_ = std::make_shared<const JinjaChat>(tokenizer, jinja); break;
    case TemplateKind::llama3:
      for (const char* token : {"<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"}) {
        require_token(tokenizer, token, enum_name(kind));
      }
      break;
    case TemplateKind::llama2:
    case TemplateKind::mistral:
      for (const char* token : {"<s>", "</s>"}) require_token(tokenizer, token, enum_name(kind));
      break;
    case TemplateKind::qwen3:
    case TemplateKind::qwen3_nothink:
      for (const char* token : {"<think>", "</think>"}) require_token(tokenizer, token, enum_name(kind));
      [[fallthrough]];
    case TemplateKind::qwen:
      if (kind == TemplateKind::qwen) default_system_ = kQwenDefaultSystem;
      [[fallthrough]];
    case TemplateKind::chatml:
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

// A rendering is opening + one turn per message + the generation header, each turn written the
// same wherever it stands (the system prompt of llama2 and mistral goes into the first user
// turn), so render_conversation renders every span once: linear in the conversation.
std::string ChatTemplate::opening(const std::vector<ChatMessage>& messages) const {
  switch (kind_) {
    case TemplateKind::llama3: return "<|begin_of_text|>";
    case TemplateKind::qwen:
    case TemplateKind::qwen3:
    case TemplateKind::qwen3_nothink:
    case TemplateKind::chatml:
      return system_first(messages) || default_system_.empty() ? ""
                                                               : "<|im_start|>system\n" + default_system_ + "<|im_end|>\n";
    case TemplateKind::llama2: return "";
    case TemplateKind::mistral: return "<s>";
    case TemplateKind::plain: return bos_;
    case TemplateKind::jinja: break;  // rendered whole by its template
  }
  return "";
}

std::string ChatTemplate::turn(const std::vector<ChatMessage>& messages, size_t i) const {
  const ChatMessage& m = messages[i];
  // llama2 and mistral: the system prompt opens the first user turn (check_turns: index 1).
  const bool first_user_after_system = i == 1 && system_first(messages);
  switch (kind_) {
    case TemplateKind::llama3:
      return std::string("<|start_header_id|>") + enum_name(m.role) + "<|end_header_id|>\n\n" + m.content + "<|eot_id|>";
    case TemplateKind::qwen3:
    case TemplateKind::qwen3_nothink:
      if (m.role == ChatRole::assistant) return generation_header(false) + reply_text(m.content, false);
      [[fallthrough]];
    case TemplateKind::qwen:
    case TemplateKind::chatml: return std::string("<|im_start|>") + enum_name(m.role) + "\n" + m.content + "<|im_end|>\n";
    case TemplateKind::llama2:
      if (m.role == ChatRole::system) return "";
      if (m.role == ChatRole::assistant) return " " + m.content + " </s>";
      return "<s>[INST] " + (first_user_after_system ? "<<SYS>>\n" + messages[0].content + "\n<</SYS>>\n\n" : "") +
             m.content + " [/INST]";
    case TemplateKind::mistral:
      if (m.role == ChatRole::system) return "";
      if (m.role == ChatRole::assistant) return reply_text(m.content, false);
      return " [INST] " + (first_user_after_system ? messages[0].content + "\n\n" : "") + m.content + " [/INST]";
    case TemplateKind::plain: return (i ? "\n" : "") + m.content;
    case TemplateKind::jinja: break;
  }
  return "";
}

std::string ChatTemplate::generation_header(bool final) const {
  switch (kind_) {
    case TemplateKind::llama3: return "<|start_header_id|>assistant<|end_header_id|>\n\n";
    case TemplateKind::qwen3_nothink:
      // Qwen3's Jinja with enable_thinking false: an empty think block opens the reply.
      return final ? "<|im_start|>assistant\n<think>\n\n</think>\n\n" : "<|im_start|>assistant\n";
    case TemplateKind::qwen3:
    case TemplateKind::qwen:
    case TemplateKind::chatml: return "<|im_start|>assistant\n";
    case TemplateKind::llama2:
    case TemplateKind::mistral: return "";
    case TemplateKind::plain: return "\n";
    case TemplateKind::jinja: break;
  }
  return "";
}

std::string ChatTemplate::render_prompt(const std::vector<ChatMessage>& messages) const {
  if (jinja_) return jinja_prompt(messages);
  check_turns(messages, kind_);
  if (messages.size() == 1 && system_first(messages)) {
    // A system message alone: llama2 puts it in an empty user turn; mistral has no such turn.
    if (kind_ == TemplateKind::llama2) return "<s>[INST] <<SYS>>\n" + messages.front().content + "\n<</SYS>>\n\n [/INST]";
    if (kind_ == TemplateKind::mistral) {
      throw std::invalid_argument("template 'mistral' writes the system prompt into the first user turn, so a "
                                  "prompt of a system message alone has no rendering; add the user's message");
    }
  }
  std::string out = opening(messages);
  for (size_t i = 0; i < messages.size(); ++i) out += turn(messages, i);
  return out + generation_header();
}

std::string ChatTemplate::render_completion(const std::vector<ChatMessage>& prompt, const std::string& reply) const {
  if (jinja_) return jinja_completion(prompt, reply);
  const bool answers_a_user =
      std::any_of(prompt.begin(), prompt.end(), [](const ChatMessage& m) { return m.role == ChatRole::user; });
  return reply_text(reply, answers_a_user);
}

std::string ChatTemplate::reply_text(const std::string& reply, bool final) const {
  switch (kind_) {
    case TemplateKind::qwen3:
    case TemplateKind::qwen3_nothink: {
      const ThoughtReply thought = split_thought(reply);
      if (!final) return thought.answer + "<|im_end|>\n";
      const std::string think = kind_ == TemplateKind::qwen3_nothink ? ""
                                    : "<think>\n" + thought.reasoning + "\n</think>\n\n";
      return think + without_leading_newlines(thought.answer) + "<|im_end|>\n";
    }
    case TemplateKind::llama3: return reply + "<|eot_id|>";
    case TemplateKind::chatml:
    case TemplateKind::qwen: return reply + "<|im_end|>\n";
    case TemplateKind::llama2: return " " + reply + " </s>";
    case TemplateKind::mistral: return " " + reply + "</s>";
    case TemplateKind::plain: return reply + eos_;
    case TemplateKind::jinja: break;
  }
  return reply;
}

RenderedConversation ChatTemplate::render_conversation(const std::vector<ChatMessage>& messages,
                                                      TrainOn train_on) const {
  if (messages.empty() || messages.back().role != ChatRole::assistant) {
    throw std::invalid_argument("the conversation must end with the assistant's message (the completion)");
  }
  if (!jinja_) check_turns(messages, kind_, true);
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
  if (jinja_) return jinja_conversation(messages, replies);
  // The last trained reply ends the rendered conversation: it is the final one.
  RenderedConversation out{opening(messages), {}};
  for (size_t i = 0; i < replies[0]; ++i) out.prompt += turn(messages, i);
  out.prompt += generation_header(replies.size() == 1);
  for (size_t k = 0; k < replies.size(); ++k) {
    const bool final = k + 1 == replies.size();
    const std::string completion = reply_text(messages[replies[k]].content, final);
    out.completion.push_back({completion, true});
    if (final) break;
    // The next reply's prompt is what is rendered so far, less its generation header, plus the
    // turns up to that reply: it must continue the header and reply just written.
    std::string next = turn(messages, replies[k]);
    for (size_t i = replies[k] + 1; i < replies[k + 1]; ++i) next += turn(messages, i);
    next += generation_header(k + 2 == replies.size());
    const std::string written = generation_header(false) + completion;
    if (next.compare(0, written.size(), written) != 0) {
      throw std::invalid_argument(std::string("template '") + enum_name(kind_) +
                                  "' has no multi-turn rendering to train every assistant turn on; use --train-on last");
    }
    out.completion.push_back({next.substr(written.size()), false});
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

std::vector<int32_t> ChatTemplate::completion_ids(const std::vector<ChatMessage>& prompt, const std::string& reply) const {
  return tokenizer_.encode(render_completion(prompt, reply));
}

}  // namespace st
