// The chat templates on arbitrary message lists. Input: template byte, train-on byte, then
// messages separated by 0x1E, each a role byte (role = b % 6, trained = b / 6 even) and its
// content. A sequence a template cannot render is refused with std::invalid_argument (the
// documented answer, which prep turns into a skipped record).
#include <stdexcept>

#include "fuzz_target.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

ST_FUZZ_TARGET(chat_template) {
  static const st::Tokenizer tokenizer = st::Tokenizer::from_file(st::fuzz::fixture("tokenizer.json"));
  if (size < 2) return std::nullopt;
  const auto kinds = st::enum_values<st::TemplateKind>();
  const st::TemplateKind kind = kinds[data[0] % kinds.size()];
  const st::TrainOn train_on = data[1] % 2 == 0 ? st::TrainOn::all : st::TrainOn::last;
  const auto roles = st::enum_values<st::ChatRole>();
  std::vector<st::ChatMessage> messages;
  const std::string rest(reinterpret_cast<const char*>(data + 2), size - 2);
  for (size_t start = 0; start < rest.size();) {
    size_t end = rest.find('\x1e', start);
    if (end == std::string::npos) end = rest.size();
    if (end > start) {
      const auto role_byte = static_cast<uint8_t>(rest[start]);
      messages.push_back({roles[role_byte % roles.size()], rest.substr(start + 1, end - start - 1),
                          (role_byte / roles.size()) % 2 == 0});
    }
    start = end + 1;
  }
  return st::fuzz::refusal([&]() -> void {
    const st::ChatTemplate chat(kind, tokenizer);
    try {
      (void)chat.prompt_ids(messages);
    } catch (const std::invalid_argument&) {
    }
    try {
      (void)chat.conversation_ids(messages, train_on);
    } catch (const std::invalid_argument&) {
    }
  });
}
