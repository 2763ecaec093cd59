// render_template <tokenizer dir> <template|auto> <conversations.jsonl> [--turns]: for each line
// {"messages": [...], "reply": "..."} prints one JSON line {"prompt": ..., "completion": ...} as
// shardtune's chat template renders them; with --turns, for each {"messages": [..., last reply]}
// the ids and loss mask of multi-turn SFT (every assistant turn trained) and the text cut the
// same way (`pieces`: [text, trained] runs). template_parity.sh and tests/jinja/chat_parity.py
// compare them with the model's own Jinja chat_template. Template `jinja` takes its extra
// variables from $ST_TEMPLATE_KWARGS (a JSON object) and strftime_now's day from
// $ST_TEMPLATE_DATE; a line the template refuses prints {"error": ..., "raised": true|false}.
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>

#include "jinja/template_error.h"
#include "tokenizer/chat_template.h"

int main(int argc, char** argv) {
  const bool turns = argc == 5 && std::string(argv[4]) == "--turns";
  if (argc != 4 && !turns) {
    std::cerr << "usage: render_template TOKENIZER_DIR TEMPLATE CONVERSATIONS.jsonl [--turns]\n";
    return 2;
  }
  try {
    const st::Tokenizer tokenizer = st::Tokenizer::from_file(argv[1]);
    const char* kwargs = std::getenv("ST_TEMPLATE_KWARGS");
    const char* date = std::getenv("ST_TEMPLATE_DATE");
    const st::JinjaOptions jinja{kwargs ? kwargs : "", date ? date : ""};
    // auto: the template the tokenizer implies, as the model's own Jinja renders it.
    const std::optional<st::ChatTemplate> chosen = st::ChatTemplate::named_or_implied(
        std::string(argv[2]) == "auto" ? std::nullopt
                                       : std::optional<st::TemplateKind>(st::parse_enum<st::TemplateKind>(argv[2], "template")),
        tokenizer, jinja);
    if (!chosen) throw std::invalid_argument(std::string(argv[1]) + " implies no template");
    if (std::string(argv[2]) == "auto") {
      std::cerr << "render_template: auto: " << st::enum_name(chosen->kind()) << " (" << chosen->chosen_because() << ")\n";
    }
    // A line may name its own Jinja template ("template_file", with "template_kwargs"): one
    // launch renders many templates over the one vocabulary (tests/jinja/chat_parity.py).
    std::map<std::string, std::unique_ptr<st::ChatTemplate>> per_file;
    std::ifstream in(argv[3]);
    for (std::string line; std::getline(in, line);) {
      const nlohmann::ordered_json conversation = nlohmann::ordered_json::parse(line);  // kwargs keep their order
      const st::ChatTemplate* current = &*chosen;
      if (conversation.contains("template_file")) {
        const std::string key = conversation["template_file"].get<std::string>() + conversation.value("template_kwargs", nlohmann::ordered_json::object()).dump();
        auto& slot = per_file[key];
        if (!slot) {
          slot = std::make_unique<st::ChatTemplate>(
              st::TemplateKind::jinja, tokenizer,
              st::JinjaOptions{conversation.value("template_kwargs", nlohmann::ordered_json::object()).dump(), jinja.date,
                               conversation["template_file"].get<std::string>()});
        }
        current = slot.get();
      }
      const st::ChatTemplate& chat = *current;
      std::vector<st::ChatMessage> messages;
      for (const auto& m : conversation["messages"]) {
        messages.push_back({st::parse_enum<st::ChatRole>(m["role"].get<std::string>(), "role"), m["content"]});
      }
      try {
      if (turns) {
        const st::ConversationIds ids = chat.conversation_ids(messages, st::TrainOn::all);
        std::vector<int32_t> all = ids.prompt;
        all.insert(all.end(), ids.completion.begin(), ids.completion.end());
        std::vector<int> mask(ids.prompt.size(), 0);
        mask.insert(mask.end(), ids.loss_mask.begin(), ids.loss_mask.end());
        const st::RenderedConversation rendered = chat.render_conversation(messages, st::TrainOn::all);
        nlohmann::json pieces = nlohmann::json::array({nlohmann::json::array({rendered.prompt, 0})});
        for (const st::RenderedSpan& span : rendered.completion) pieces.push_back({span.text, span.trained ? 1 : 0});
        std::cout << nlohmann::json{{"ids", all}, {"mask", mask}, {"pieces", pieces}}.dump() << "\n";
        continue;
      }
      std::cout << nlohmann::json{{"prompt", chat.render_prompt(messages)},
                                  {"completion", chat.render_completion(messages, conversation["reply"])},
                                  {"prompt_ids", chat.prompt_ids(messages)}}
                       .dump()
                << "\n";
      } catch (const st::jinja::TemplateError& e) {
        const bool raised = dynamic_cast<const st::jinja::TemplateRaised*>(&e) != nullptr;
        std::cout << nlohmann::json{{"error", e.located()}, {"raised", raised}}.dump() << "\n";
      } catch (const std::invalid_argument& e) {
        if (chat.kind() != st::TemplateKind::jinja) throw;
        std::cout << nlohmann::json{{"error", e.what()}, {"cut", true}}.dump() << "\n";
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "render_template: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
