// Template `jinja` (the model's own chat_template) and `auto`'s choice between it and a built-in
// one: where prompt and completion are cut, how multi-turn conversations are cut into trained
// spans, and each refusal. Parity with transformers on real templates: tests/jinja.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

#include "jinja/template_error.h"
#include "process_temp.h"
#include "template_tokenizer.h"
#include "thrown_message.h"
#include "tokenizer/chat_template.h"
#include "util/errors.h"

namespace st {
namespace {

using Json = nlohmann::json;

// ChatML as Qwen 2.5 writes it without tools, less its default system prompt.
constexpr const char* kChatml =
    "{% for m in messages %}{{ '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>' + '\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
// DeepSeek-R1's shape: history replies lose their reasoning; the generation prompt opens a think block.
constexpr const char* kReasoning =
    "{{ bos_token }}{% for m in messages %}{% if m.role == 'user' %}<U>{{ m.content }}{% elif m.role == 'assistant' %}"
    "<A>{{ m.content.split('</think>')[-1] }}{{ eos_token }}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<A><think>\n{% endif %}";

std::string tokenizer_with(const std::string& name, const std::string& chat_template) {
  const std::string dir = testing::write_template_tokenizer(testing::process_temp_path(name), true);
  std::ofstream(dir + "/tokenizer_config.json")
      << Json{{"bos_token", "<s>"}, {"eos_token", "</s>"}, {"chat_template", chat_template}}.dump();
  return dir;
}

const std::vector<ChatMessage> kTwoTurns = {{ChatRole::system, "Be brief."}, {ChatRole::user, "Hi"},
                                            {ChatRole::assistant, "Hello!"}, {ChatRole::user, "2+2?"},
                                            {ChatRole::assistant, "4"}};
const std::vector<ChatMessage> kPrompt(kTwoTurns.begin(), kTwoTurns.begin() + 4);

TEST(JinjaChat, RendersTheModelsTemplateAndCutsWhereItsGenerationPromptEnds) {
  const Tokenizer tokenizer = Tokenizer::from_file(tokenizer_with("jinja_chatml", kChatml));
  const ChatTemplate chat(TemplateKind::jinja, tokenizer);
  EXPECT_EQ(chat.render_prompt(kPrompt),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!"
            "<|im_end|>\n<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(chat.render_completion(kPrompt, "4"), "4<|im_end|>\n");
  const RenderedConversation cut = chat.render_conversation(kTwoTurns, TrainOn::all);
  EXPECT_EQ(cut.prompt, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  ASSERT_EQ(cut.completion.size(), 3u);
  EXPECT_EQ(cut.completion[0].text, "Hello!<|im_end|>\n");
  EXPECT_TRUE(cut.completion[0].trained);
  EXPECT_EQ(cut.completion[1].text, "<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_FALSE(cut.completion[1].trained);
  EXPECT_EQ(cut.completion[2].text, "4<|im_end|>\n");
  // Its built-in twin renders the probe conversations alike; built-in llama3 does not.
  EXPECT_EQ(probe_difference(ChatTemplate(TemplateKind::chatml, tokenizer), chat), "");
  EXPECT_NE(probe_difference(ChatTemplate(TemplateKind::llama3, tokenizer), chat), "");
  const ConversationIds ids = chat.conversation_ids(kTwoTurns, TrainOn::last);
  EXPECT_EQ(ids.prompt, tokenizer.encode(chat.render_prompt(kPrompt)));
}

TEST(JinjaChat, AutoPicksTheFasterBuiltInTemplateWhereItEqualsTheModels) {
  // Llama 3's own template (its tokens imply llama3: this test tokenizer has Llama 3's and ChatML's).
  const std::string llama3 =
      "{% for m in messages %}{% set content = '<|start_header_id|>' + m['role'] + '<|end_header_id|>\n\n' + "
      "m['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = '<|begin_of_text|>' + content %}"
      "{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}"
      "{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}";
  const Tokenizer tokenizer = Tokenizer::from_file(tokenizer_with("jinja_llama3", llama3));
  const std::optional<ChatTemplate> chosen = ChatTemplate::named_or_implied(std::nullopt, tokenizer);
  ASSERT_TRUE(chosen);
  EXPECT_EQ(chosen->kind(), TemplateKind::llama3);
  EXPECT_NE(chosen->chosen_because().find("exactly as the model's chat_template"), std::string::npos)
      << chosen->chosen_because();
}

TEST(JinjaChat, AutoPicksTheModelsTemplateWhereNoBuiltInOneEqualsIt) {
  // Llama 3.1's habit: a dated system header that built-in llama3 does not write.
  const std::string dated =
      "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nToday Date: {{ strftime_now('%d %b %Y') }}"
      "<|eot_id|>{% for m in messages %}<|start_header_id|>{{ m.role }}<|end_header_id|>\n\n{{ m.content }}<|eot_id|>"
      "{% endfor %}{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}";
  const Tokenizer tokenizer = Tokenizer::from_file(tokenizer_with("jinja_dated", dated));
  const std::optional<ChatTemplate> chosen = ChatTemplate::named_or_implied(std::nullopt, tokenizer, {"", "2024-07-26", ""});
  ASSERT_TRUE(chosen);
  EXPECT_EQ(chosen->kind(), TemplateKind::jinja);
  EXPECT_NE(chosen->chosen_because().find("built-in 'llama3' does not equal: the prompt"), std::string::npos)
      << chosen->chosen_because();
  EXPECT_NE(chosen->render_prompt({{ChatRole::user, "Hi"}}).find("Today Date: 26 Jul 2024"), std::string::npos);
}

TEST(JinjaChat, AReasoningTemplatesPromptIsTheOneTheModelSees) {
  const Tokenizer tokenizer = Tokenizer::from_file(tokenizer_with("jinja_reasoning", kReasoning));
  const ChatTemplate chat(TemplateKind::jinja, tokenizer);
  const std::vector<ChatMessage> prompt = {{ChatRole::user, "2+2?"}};
  EXPECT_EQ(chat.render_prompt(prompt), "<s><U>2+2?<A><think>\n");
  // The model goes on after "<think>\n": the reply without its opening, then the turn's end.
  EXPECT_EQ(chat.render_completion(prompt, "<think>\nAdd.\n</think>\n\n4"), "Add.\n</think>\n\n4</s>");
  EXPECT_EQ(chat.render_completion(prompt, "4"), "4</s>");
  const std::vector<ChatMessage> one = {{ChatRole::user, "2+2?"}, {ChatRole::assistant, "<think>\nx\n</think>4"}};
  const RenderedConversation cut = chat.render_conversation(one, TrainOn::all);
  EXPECT_EQ(cut.prompt, "<s><U>2+2?<A><think>\n");
  ASSERT_EQ(cut.completion.size(), 1u);
  EXPECT_EQ(cut.completion[0].text, "x\n</think>4</s>");
  // Earlier replies lose their reasoning inside the conversation: no turn-by-turn cut.
  std::vector<ChatMessage> two = one;
  two.push_back({ChatRole::user, "3+3?"});
  two.push_back({ChatRole::assistant, "6"});
  EXPECT_NE(testing::thrown_message<std::invalid_argument>([&] { chat.render_conversation(two, TrainOn::all); })
                .find("--train-on last"),
            std::string::npos);
  EXPECT_EQ(chat.render_conversation(two, TrainOn::last).prompt, "<s><U>2+2?<A>4</s><U>3+3?<A><think>\n");
}

TEST(JinjaChat, GenerationBlocksMarkTheTrainedSpans) {
  const std::string tracked =
      "{% for m in messages %}<{{ m.role }}>{% if m.role == 'assistant' %}{% generation %}{{ m.content }}</s>"
      "{% endgeneration %}{% else %}{{ m.content }}{% endif %}{% endfor %}{% if add_generation_prompt %}<assistant>"
      "{% endif %}";
  const Tokenizer tokenizer = Tokenizer::from_file(tokenizer_with("jinja_tracked", tracked));
  const ChatTemplate chat(TemplateKind::jinja, tokenizer);
  const RenderedConversation all = chat.render_conversation(kTwoTurns, TrainOn::all);
  EXPECT_EQ(all.prompt, "<system>Be brief.<user>Hi<assistant>");
  ASSERT_EQ(all.completion.size(), 3u);
  EXPECT_EQ(all.completion[0].text, "Hello!</s>");
  EXPECT_EQ(all.completion[1].text, "<user>2+2?<assistant>");
  EXPECT_EQ(all.completion[2].text, "4</s>");
  EXPECT_TRUE(all.completion[2].trained);
  const RenderedConversation last = chat.render_conversation(kTwoTurns, TrainOn::last);
  EXPECT_EQ(last.prompt, "<system>Be brief.<user>Hi<assistant>Hello!</s><user>2+2?<assistant>");
}

TEST(JinjaChat, RefusalsNameTheTemplateAndTheConstruct) {
  const Tokenizer none = Tokenizer::from_file(testing::write_template_tokenizer(testing::process_temp_path("jinja_none"), true));
  EXPECT_NE(testing::thrown_message<TokenizerError>([&] { ChatTemplate(TemplateKind::jinja, none); })
                .find("has one; name a built-in template"),
            std::string::npos);
  const Tokenizer broken = Tokenizer::from_file(tokenizer_with("jinja_broken", "{% for m in messages %}\n{{ m | nope }}{% endfor %}"));
  const std::string message = testing::thrown_message<TokenizerError>([&] { ChatTemplate(TemplateKind::jinja, broken); });
  EXPECT_NE(message.find("tokenizer_config.json: chat_template line 2: no filter named 'nope'"), std::string::npos) << message;
  const Tokenizer strict = Tokenizer::from_file(tokenizer_with(
      "jinja_strict", "{% if messages[0].role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}x"));
  const ChatTemplate chat(TemplateKind::jinja, strict);
  EXPECT_EQ(testing::thrown_message<jinja::TemplateRaised>([&] { chat.render_prompt(kPrompt); }),
            "System role not supported");
  EXPECT_EQ(chat.render_prompt({{ChatRole::user, "Hi"}}), "x");
  EXPECT_NE(testing::thrown_message<TokenizerError>([&] { ChatTemplate(TemplateKind::jinja, strict, {"[1]", "", ""}); })
                .find("give a JSON object"),
            std::string::npos);
  EXPECT_NE(testing::thrown_message<TokenizerError>([&] { ChatTemplate(TemplateKind::jinja, strict, {"", "26/07/2024", ""}); })
                .find("YYYY-MM-DD"),
            std::string::npos);
  // A rendering that writes text before the reply which the generation prompt lacks has no cut.
  const Tokenizer odd = Tokenizer::from_file(tokenizer_with(
      "jinja_odd", "{% for m in messages %}{% if m.role == 'assistant' %}[A]{% endif %}{{ m.content }}{% endfor %}"
                   "{% if add_generation_prompt %}[B]{% endif %}"));
  const ChatTemplate odd_chat(TemplateKind::jinja, odd);
  EXPECT_NE(testing::thrown_message<std::invalid_argument>([&] { odd_chat.render_completion({{ChatRole::user, "Hi"}}, "Yo"); })
                .find("no cut is both the prompt the model sees and a prefix"),
            std::string::npos);
}

TEST(JinjaChat, ATemplateFileStandsInForTheTokenizers) {
  const Tokenizer tokenizer = Tokenizer::from_file(tokenizer_with("jinja_file_base", kChatml));
  const std::string file = testing::process_temp_path("jinja_file") + ".jinja";
  std::ofstream(file) << "{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}";
  const std::optional<ChatTemplate> chosen = ChatTemplate::named_or_implied(std::nullopt, tokenizer, {"", "", file});
  ASSERT_TRUE(chosen);
  EXPECT_EQ(chosen->kind(), TemplateKind::jinja);
  EXPECT_EQ(chosen->render_prompt({{ChatRole::user, "Hi"}}), "[user]Hi");
  EXPECT_NE(chosen->chosen_because().find(file), std::string::npos);
  EXPECT_NE(testing::thrown_message<TokenizerError>(
                [&] { ChatTemplate::named_or_implied(TemplateKind::chatml, tokenizer, {"", "", file}); })
                .find("goes with --template jinja"),
            std::string::npos);
  EXPECT_NE(testing::thrown_message<TokenizerError>(
                [&] { ChatTemplate(TemplateKind::jinja, tokenizer, {"", "", file + ".missing"}); })
                .find("cannot be read"),
            std::string::npos);
}

TEST(JinjaChat, KeywordsReachTheTemplate) {
  const Tokenizer tokenizer = Tokenizer::from_file(tokenizer_with(
      "jinja_kwargs", "{{ 'think' if enable_thinking | default(true) else 'plain' }}{{ tools is none }}"));
  EXPECT_EQ(ChatTemplate(TemplateKind::jinja, tokenizer).render_prompt({{ChatRole::user, "Hi"}}), "thinkTrue");
  // The tokenizer config's special tokens, as transformers' special_tokens_map passes them.
  const std::string dir = testing::write_template_tokenizer(testing::process_temp_path("jinja_specials"), true);
  std::ofstream(dir + "/tokenizer_config.json")
      << Json{{"bos_token", "<s>"}, {"eos_token", "</s>"}, {"pad_token", {{"content", "<pad>"}}},
              {"chat_template", "{{ bos_token }}|{{ eos_token }}|{{ pad_token }}|{{ unk_token is defined }}"}}
             .dump();
  const Tokenizer specials = Tokenizer::from_file(dir);
  EXPECT_EQ(ChatTemplate(TemplateKind::jinja, specials).render_prompt({{ChatRole::user, "Hi"}}), "<s>|</s>|<pad>|False");
  EXPECT_EQ(ChatTemplate(TemplateKind::jinja, tokenizer, {R"({"enable_thinking": false})", "", ""})
                .render_prompt({{ChatRole::user, "Hi"}}),
            "plainTrue");
}

}  // namespace
}  // namespace st
