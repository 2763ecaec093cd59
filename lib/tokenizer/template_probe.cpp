// The probe conversations: a system prompt or none, one turn and two, a reply with a think block;
// contents without surrounding whitespace (Llama 3's template trims it, as its built-in twin
// does not).
#include <nlohmann/json.hpp>

#include "tokenizer/chat_template.h"

namespace st {
namespace {

using Messages = std::vector<ChatMessage>;

Messages probe(bool system, int turns) {
  Messages m;
  if (system) m.push_back({ChatRole::system, "You are a helpful assistant.", true});
  const char* users[] = {"Hello!", "What is 2+2?\nShow your work."};
  const char* replies[] = {"Hi! How can I help?", "<think>\nAdd the numbers.\n</think>\n\n2+2 = 4."};
  for (int t = 0; t < turns; ++t) {
    m.push_back({ChatRole::user, users[t], true});
    m.push_back({ChatRole::assistant, replies[t], true});
  }
  return m;
}

// One rendering as text, or the reason it failed, so that two failing alike count as alike.
template <typename Render>
std::string outcome(Render render) {
  try {
    return "ok:" + render();
  } catch (const std::exception& e) {
    return "refused";
  }
}

std::string cut_text(const RenderedConversation& r) {
  std::string out = r.prompt + "\x01";
  for (const RenderedSpan& span : r.completion) out += span.text + (span.trained ? "\x02" : "\x03");
  return out;
}

std::string describe(const std::string& what, const std::string& a, const std::string& b) {
  size_t at = 0;
  while (at < a.size() && at < b.size() && a[at] == b[at]) ++at;
  auto near = [&](const std::string& s) {
    return nlohmann::json(s.substr(at, 40)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  };
  return what + " differs at byte " + std::to_string(at) + ": " + near(a) + " vs " + near(b);
}

}  // namespace

bool probe_prompts_alike(const ChatTemplate& a, const ChatTemplate& b) {
  for (const bool system : {true, false}) {
    for (const int turns : {1, 2}) {
      const Messages m = probe(system, turns);
      const Messages prompt(m.begin(), m.end() - 1);
      if (outcome([&] { return a.render_prompt(prompt); }) != outcome([&] { return b.render_prompt(prompt); })) return false;
    }
  }
  return true;
}

std::string probe_difference(const ChatTemplate& a, const ChatTemplate& b, bool b_may_refuse) {
  auto differ = [&](const std::string& x, const std::string& y) { return x != y && !(b_may_refuse && y == "refused"); };
  for (const bool system : {true, false}) {
    for (const int turns : {1, 2}) {
      const Messages m = probe(system, turns);
      const Messages prompt(m.begin(), m.end() - 1);
      const std::string shape = std::string(system ? "with" : "without") + " a system prompt, " +
                                std::to_string(turns) + " turn(s)";
      std::string x = outcome([&] { return a.render_prompt(prompt); });
      std::string y = outcome([&] { return b.render_prompt(prompt); });
      if (differ(x, y)) return describe("the prompt " + shape, x, y);
      x = outcome([&] { return a.render_completion(prompt, m.back().content); });
      y = outcome([&] { return b.render_completion(prompt, m.back().content); });
      if (differ(x, y)) return describe("the completion " + shape, x, y);
      x = outcome([&] { return cut_text(a.render_conversation(m, TrainOn::all)); });
      y = outcome([&] { return cut_text(b.render_conversation(m, TrainOn::all)); });
      if (differ(x, y)) return describe("the multi-turn cut " + shape, x, y);
    }
  }
  return "";
}

}  // namespace st
