// ChatTemplate for a model's own Jinja template: where the prompt ends and the completion starts,
// and how a multi-turn conversation is cut into trained and untrained spans, from the template's
// renderings alone (it is a black box that writes text).
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "tokenizer/chat_template.h"
#include "util/text.h"

namespace st {
namespace {

// A reply no template writes otherwise, to find where a rendering puts the reply.
constexpr const char* kSentinel = "\u2063shardtune-reply\u2063";

size_t common_prefix(const std::string& a, const std::string& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

std::string quoted(const std::string& text) { return nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

std::vector<ChatMessage> first(const std::vector<ChatMessage>& messages, size_t n) {
  return std::vector<ChatMessage>(messages.begin(), messages.begin() + static_cast<std::ptrdiff_t>(n));
}

std::vector<ChatMessage> with_reply(std::vector<ChatMessage> prompt, const std::string& reply) {
  prompt.push_back({ChatRole::assistant, reply, true});
  return prompt;
}

void push_span(RenderedConversation& out, std::string text, bool trained) {
  if (text.empty() && !trained) return;
  out.completion.push_back({std::move(text), trained});
}

}  // namespace

bool ChatTemplate::ignores_generation_prompt() const {
  if (!jinja_) return false;
  const std::vector<ChatMessage> hello = {{ChatRole::user, "Hello!", true}};
  try {
    return jinja_->render(hello, true).text == jinja_->render(hello, false).text;
  } catch (const std::exception&) {
    return false;
  }
}

std::string ChatTemplate::jinja_prompt(const std::vector<ChatMessage>& messages) const {
  if (messages.empty()) throw std::invalid_argument("the prompt has no message");
  if (messages.back().role == ChatRole::assistant) {
    throw std::invalid_argument("the prompt ends with an assistant turn, so the completion would answer the "
                                "assistant; end the prompt with a user message (or move that turn into the completion)");
  }
  return jinja_->render(messages, true).text;
}

namespace {

// The completion of `reply` after `p`, the prompt's rendering with the generation prompt (which
// a caller that has it passes in rather than renders again).
std::string completion_after(const JinjaChat& jinja, const std::vector<ChatMessage>& prompt, const std::string& p,
                             const std::string& reply) {
  const std::string whole = jinja.render(with_reply(prompt, reply), false).text;
  if (starts_with(whole, p)) return whole.substr(p.size());
  // The generation prompt ends with text (g) that the conversation's rendering does not write
  // before a reply: the prompt stays the one the model sees; the completion is the reply as the
  // model would go on after it (without g where the reply opens with it) and the turn's end.
  const std::string marked = jinja.render(with_reply(prompt, kSentinel), false).text;
  const size_t at = marked.find(kSentinel), shared = common_prefix(p, marked);
  if (at == std::string::npos || at != shared) {
    throw std::invalid_argument(
        "chat template (" + jinja.file() + "): its generation prompt ends with " + quoted(p.substr(shared)) +
        " but its rendering of the conversation writes " +
        quoted(at == std::string::npos ? marked.substr(shared) : marked.substr(shared, at - shared)) +
        " before the reply, so no cut is both the prompt the model sees and a prefix of the conversation; "
        "use a built-in template (--template) or a template whose conversation starts with its generation prompt");
  }
  const std::string opened = p.substr(shared);
  const std::string body = starts_with(reply, opened) ? reply.substr(opened.size()) : reply;
  return body + marked.substr(at + std::string(kSentinel).size());
}

}  // namespace

std::string ChatTemplate::jinja_completion(const std::vector<ChatMessage>& prompt, const std::string& reply) const {
  return completion_after(*jinja_, prompt, jinja_prompt(prompt), reply);
}

RenderedConversation ChatTemplate::jinja_conversation(const std::vector<ChatMessage>& messages,
                                                     const std::vector<size_t>& replies) const {
  const size_t last = replies.back();
  RenderedConversation out;
  if (jinja_->has_generation()) {
    // As TRL's assistant_only_loss: the k-th {% generation %} span is the k-th assistant turn.
    const jinja::RenderedText r = jinja_->render(first(messages, last + 1), false);
    std::vector<size_t> assistants;
    for (size_t i = 0; i <= last; ++i) {
      if (messages[i].role == ChatRole::assistant) assistants.push_back(i);
    }
    if (r.generation.size() != assistants.size()) {
      throw std::invalid_argument("chat template (" + jinja_->file() + "): its {% generation %} blocks wrote " +
                                  std::to_string(r.generation.size()) + " spans for " +
                                  std::to_string(assistants.size()) + " assistant turns");
    }
    size_t cursor = 0;
    for (size_t k = 0, a = 0; k < replies.size(); ++k) {
      while (assistants[a] != replies[k]) ++a;
      const auto [begin, end] = r.generation[a];
      if (begin < cursor) throw std::invalid_argument("chat template (" + jinja_->file() + "): generation spans overlap");
      if (k == 0) {
        out.prompt = r.text.substr(0, begin);
      } else {
        push_span(out, r.text.substr(cursor, begin - cursor), false);
      }
      push_span(out, r.text.substr(begin, end - begin), true);
      cursor = end;
    }
    push_span(out, r.text.substr(cursor), false);
    return out;
  }
  // Turn by turn: each earlier reply lies between its own generation prompt and its rendering
  // as the conversation's end, both prefixes of the final reply's prompt; the final reply is
  // render_completion's.
  const std::vector<ChatMessage> before_last = first(messages, last);
  const std::string p = jinja_prompt(before_last);
  size_t cursor = 0;
  for (size_t k = 0; k + 1 < replies.size(); ++k) {
    const std::string start = jinja_prompt(first(messages, replies[k]));
    const std::string end = jinja_->render(first(messages, replies[k] + 1), false).text;
    if (!starts_with(p, start) || !starts_with(p, end) || start.size() < cursor || end.size() < start.size()) {
      throw std::invalid_argument(
          "chat template (" + jinja_->file() + ") writes assistant turn " + std::to_string(replies[k]) +
          " otherwise inside the conversation than at its end (it rewrites earlier replies, e.g. drops their "
          "reasoning), so its turns cannot be cut apart; train the final reply only (--train-on last)");
    }
    if (k == 0) {
      out.prompt = start;
    } else {
      push_span(out, p.substr(cursor, start.size() - cursor), false);
    }
    push_span(out, p.substr(start.size(), end.size() - start.size()), true);
    cursor = end.size();
  }
  if (replies.size() == 1) {
    out.prompt = p;
  } else {
    push_span(out, p.substr(cursor), false);
  }
  push_span(out, completion_after(*jinja_, before_last, p, messages[last].content), true);
  return out;
}

}  // namespace st
