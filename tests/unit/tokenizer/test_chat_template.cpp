// Chat templates: each one's rendering of a system + two-turn conversation (the text that
// docs/data-format.md shows), the prompt/completion split, and the refusals.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>

#include "process_temp.h"
#include "template_tokenizer.h"
#include "thrown_message.h"
#include "tokenizer/chat_template.h"
#include "util/errors.h"

namespace st {
namespace {

using Json = nlohmann::json;

std::string write_tokenizer(bool with_config) {
  return testing::write_template_tokenizer(testing::process_temp_path(with_config ? "chat_tok_config" : "chat_tok_plain"),
                                           with_config);
}

const std::vector<ChatMessage> kConversation = {
    {ChatRole::system, "Be brief."}, {ChatRole::user, "Hi"}, {ChatRole::assistant, "Hello!"}, {ChatRole::user, "2+2?"}};

std::string render(const std::string& name, const std::string& reply = "4") {
  const Tokenizer tokenizer = Tokenizer::from_file(write_tokenizer(true));
  const ChatTemplate chat(parse_enum<TemplateKind>(name, "template"), tokenizer);
  return chat.render_prompt(kConversation) + "|" + chat.render_completion(kConversation, reply);
}

TEST(ChatTemplate, Llama3) {
  EXPECT_EQ(render("llama3"),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\n2+2?<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n|4<|eot_id|>");
}

TEST(ChatTemplate, Chatml) {
  EXPECT_EQ(render("chatml"),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\n2+2?<|im_end|>\n"
            "<|im_start|>assistant\n|4<|im_end|>\n");
}

// Qwen 2.5's template is ChatML that writes its default system prompt when there is none.
TEST(ChatTemplate, QwenAddsItsDefaultSystemPromptOnlyWhenThereIsNone) {
  EXPECT_EQ(render("qwen"), render("chatml"));
  const Tokenizer tokenizer = Tokenizer::from_file(write_tokenizer(true));
  EXPECT_EQ(ChatTemplate(TemplateKind::qwen, tokenizer).render_prompt({{ChatRole::user, "Hi"}}),
            "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(ChatTemplate(TemplateKind::chatml, tokenizer).render_prompt({{ChatRole::user, "Hi"}}),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

// The default system prompt of a ChatML model's own Jinja: SmolLM2's (a real newline in its
// chat_template.jinja), Qwen 2.5's (an escaped one, after a tools branch that writes the
// conversation's own system message), none where the template writes only the messages.
TEST(ChatTemplate, DefaultSystemPromptIsReadFromTheModelsJinja) {
  EXPECT_EQ(chatml_default_system("{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
                                  "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
                                  "Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + "
                                  "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"),
            "You are a helpful AI assistant named SmolLM, trained by Hugging Face");
  EXPECT_EQ(chatml_default_system("{%- if tools %}{{- '<|im_start|>system\\n' }}{%- if messages[0]['role'] == 'system' %}"
                                  "{{- messages[0]['content'] }}{%- endif %}{{- '<|im_end|>\\n' }}{%- else %}"
                                  "{%- if messages[0]['role'] == 'system' %}{{- '<|im_start|>system\\n' + "
                                  "messages[0]['content'] + '<|im_end|>\\n' }}{%- else %}{{- '<|im_start|>system\\nYou "
                                  "are Qwen, created by Alibaba Cloud. You\\'re helpful.<|im_end|>\\n' }}{%- endif %}"),
            "You are Qwen, created by Alibaba Cloud. You're helpful.");
  EXPECT_EQ(chatml_default_system("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + "
                                  "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"),
            "");
  EXPECT_EQ(chatml_default_system(""), "");
}

// With no template named, ChatML as the model's own Jinja (tokenizer_config.json's chat_template,
// else chat_template.jinja beside it) writes it: its default system prompt when there is none.
// A test tokenizer with ChatML's and Qwen3's special tokens only (it has Llama 3's too, which
// imply llama3), and no Jinja.
std::string write_chatml_tokenizer(const std::string& name) {
  const std::string dir = testing::write_template_tokenizer(testing::process_temp_path(name), /*with_config=*/true);
  std::filesystem::remove(std::filesystem::path(dir) / "chat_template.jinja");
  Json json = Json::parse(std::ifstream(dir + "/tokenizer.json"));
  Json kept = Json::array();
  for (const Json& token : json["added_tokens"]) {
    const std::string content = token["content"];
    if (content.find("<|im_") == 0 || content.find("think>") != std::string::npos) kept.push_back(token);
  }
  json["added_tokens"] = kept;
  std::ofstream(dir + "/tokenizer.json") << json.dump();
  return dir;
}

TEST(ChatTemplate, ImpliedChatmlWritesTheModelsDefaultSystemPrompt) {
  const std::string dir = write_chatml_tokenizer("chat_tok_jinja");
  const Tokenizer plain = Tokenizer::from_file(dir);
  ASSERT_TRUE(ChatTemplate::implied_by(plain));
  EXPECT_EQ(ChatTemplate::implied_by(plain)->render_prompt({{ChatRole::user, "Hi"}}),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  std::ofstream(std::filesystem::path(dir) / "chat_template.jinja")
      << "{{ '<|im_start|>system\nBe kind.<|im_end|>\n' }}";
  const Tokenizer with_jinja = Tokenizer::from_file(dir);
  const std::optional<ChatTemplate> implied = ChatTemplate::implied_by(with_jinja);
  ASSERT_TRUE(implied);
  EXPECT_EQ(implied->kind(), TemplateKind::chatml);
  EXPECT_EQ(implied->render_prompt({{ChatRole::user, "Hi"}}),
            "<|im_start|>system\nBe kind.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(implied->render_prompt(kConversation).rfind("<|im_start|>system\nBe brief.<|im_end|>", 0), 0u);
  // A named template is as named: plain ChatML.
  EXPECT_EQ(ChatTemplate::named_or_implied(TemplateKind::chatml, with_jinja)->default_system(), "");
}

const std::vector<ChatMessage> kThreeTurns = {{ChatRole::system, "S"}, {ChatRole::user, "a"}, {ChatRole::assistant, "b"},
                                              {ChatRole::user, "c"},   {ChatRole::assistant, "d"}, {ChatRole::user, "e"},
                                              {ChatRole::assistant, "f"}};

// Spans as "text" (trained) or [text] (not), after the prompt and a '|'.
std::string spans(TemplateKind kind, TrainOn train_on, const std::vector<ChatMessage>& messages = kThreeTurns) {
  const Tokenizer tokenizer = Tokenizer::from_file(write_tokenizer(true));
  const RenderedConversation rendered = ChatTemplate(kind, tokenizer).render_conversation(messages, train_on);
  std::string out = rendered.prompt + "|";
  for (const RenderedSpan& span : rendered.completion) out += span.trained ? span.text : "[" + span.text + "]";
  return out;
}

// Every assistant turn trained, the turns between not, and prompt + spans is the conversation
// as render_prompt writes its longer prefixes.
TEST(ChatTemplate, MultiTurnSpansTrainEveryAssistantTurn) {
  EXPECT_EQ(spans(TemplateKind::chatml, TrainOn::all),
            "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\na<|im_end|>\n<|im_start|>assistant\n|"
            "b<|im_end|>\n[<|im_start|>user\nc<|im_end|>\n<|im_start|>assistant\n]"
            "d<|im_end|>\n[<|im_start|>user\ne<|im_end|>\n<|im_start|>assistant\n]f<|im_end|>\n");
  EXPECT_EQ(spans(TemplateKind::llama2, TrainOn::all),
            "<s>[INST] <<SYS>>\nS\n<</SYS>>\n\na [/INST]| b </s>[<s>[INST] c [/INST]] d </s>[<s>[INST] e [/INST]] f </s>");
  EXPECT_EQ(spans(TemplateKind::llama3, TrainOn::last),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nS<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\na<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nb"
            "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nc<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nd<|eot_id|><|start_header_id|>user<|end_header_id|>\n\ne"
            "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n|f<|eot_id|>");
  // One turn: all and last agree.
  const std::vector<ChatMessage> one = {{ChatRole::user, "a"}, {ChatRole::assistant, "b"}};
  EXPECT_EQ(spans(TemplateKind::llama3, TrainOn::all, one), spans(TemplateKind::llama3, TrainOn::last, one));
}

// Turns marked untrained (LlamaFactory's loss_weight 0) are left out of the trained spans;
// turns after the last trainable reply are left out altogether.
TEST(ChatTemplate, UntrainedTurnsCarryNoLoss) {
  std::vector<ChatMessage> messages = kThreeTurns;
  messages[2].trained = false;  // b
  messages[6].trained = false;  // f
  EXPECT_EQ(spans(TemplateKind::chatml, TrainOn::all, messages),
            "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\na<|im_end|>\n<|im_start|>assistant\nb<|im_end|>\n"
            "<|im_start|>user\nc<|im_end|>\n<|im_start|>assistant\n|d<|im_end|>\n");
  messages[4].trained = false;  // d
  EXPECT_NE(st::testing::thrown_message<std::invalid_argument>([&] { spans(TemplateKind::chatml, TrainOn::all, messages); })
                .find("no assistant message carries loss"),
            std::string::npos);
}

TEST(ChatTemplate, MultiTurnIdsCarryTheMaskOfTheirSpans) {
  const Tokenizer tokenizer = Tokenizer::from_file(write_tokenizer(true));
  const ChatTemplate chat(TemplateKind::chatml, tokenizer);
  const ConversationIds ids = chat.conversation_ids(kThreeTurns, TrainOn::all);
  const RenderedConversation rendered = chat.render_conversation(kThreeTurns, TrainOn::all);
  EXPECT_EQ(ids.prompt, tokenizer.encode(rendered.prompt));
  ASSERT_EQ(ids.loss_mask.size(), ids.completion.size());
  size_t at = 0;
  for (const RenderedSpan& span : rendered.completion) {
    const std::vector<int32_t> span_ids = tokenizer.encode(span.text);
    for (size_t k = 0; k < span_ids.size(); ++k, ++at) {
      EXPECT_EQ(ids.completion[at], span_ids[k]);
      EXPECT_EQ(ids.loss_mask[at], span.trained ? 1 : 0) << "token " << at;
    }
  }
  EXPECT_EQ(at, ids.completion.size());
}

TEST(ChatTemplate, MultiTurnRefusals) {
  auto why = [](TemplateKind kind, const std::vector<ChatMessage>& messages) {
    return st::testing::thrown_message<std::invalid_argument>([&] { spans(kind, TrainOn::all, messages); });
  };
  EXPECT_NE(why(TemplateKind::plain, kThreeTurns).find("template 'plain' has no multi-turn rendering"),
            std::string::npos);
  EXPECT_EQ(why(TemplateKind::plain, {{ChatRole::user, "a"}, {ChatRole::assistant, "b"}}), "");
  EXPECT_NE(why(TemplateKind::chatml, {{ChatRole::user, "a"}}).find("must end with the assistant's message"), std::string::npos);
  EXPECT_NE(why(TemplateKind::chatml, {{ChatRole::user, "a"}, {ChatRole::assistant, "b"}, {ChatRole::assistant, "c"}})
                .find("message 2 has role 'assistant', expected 'user'"),
            std::string::npos);
}

// Qwen3's Jinja: the final reply carries its think block (empty when it has no reasoning), or
// with thinking off the empty block closes the prompt; earlier replies drop their reasoning.
TEST(ChatTemplate, Qwen3WritesTheThinkBlockOnlyOnTheFinalReply) {
  const std::vector<ChatMessage> conversation = {{ChatRole::user, "Hi"},
                                                 {ChatRole::assistant, "<think>\nsay hi\n</think>\n\nHello!"},
                                                 {ChatRole::user, "2+2?"}};
  const Tokenizer tokenizer = Tokenizer::from_file(write_tokenizer(true));
  const ChatTemplate thinking(TemplateKind::qwen3, tokenizer), nothink(TemplateKind::qwen3_nothink, tokenizer);
  const std::string history = "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n"
                              "<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n";
  EXPECT_EQ(thinking.render_prompt(conversation), history);
  EXPECT_EQ(thinking.render_completion(conversation, "4"), "<think>\n\n</think>\n\n4<|im_end|>\n");
  EXPECT_EQ(thinking.render_completion(conversation, "<think>\n\nadd\n\n</think>\n\n\n4"), "<think>\nadd\n</think>\n\n4<|im_end|>\n");
  // As the Jinja splits: reasoning after the last <think> before the first </think>, the answer
  // after the last </think>.
  EXPECT_EQ(thinking.render_completion(conversation, "a<think>b</think>c</think>\nd"), "<think>\nb\n</think>\n\nd<|im_end|>\n");
  EXPECT_EQ(nothink.render_prompt(conversation), history + "<think>\n\n</think>\n\n");
  EXPECT_EQ(nothink.render_completion(conversation, "4"), "4<|im_end|>\n");
  EXPECT_EQ(nothink.render_completion(conversation, "<think>add</think>\n4"), "4<|im_end|>\n");
  // A reply to a system message alone follows no user query: the Jinja writes it bare (with
  // thinking off its generation prompt still ends with the empty block).
  const std::vector<ChatMessage> system_only = {{ChatRole::system, "Write a haiku."}};
  EXPECT_EQ(thinking.render_completion(system_only, "<think>r</think>4"), "4<|im_end|>\n");
  EXPECT_EQ(nothink.render_prompt(system_only),
            "<|im_start|>system\nWrite a haiku.<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
}

// Every reply trained: the earlier ones as the conversation writes them (no reasoning, no empty
// think block), the last with its think block; prompt + spans is one rendering.
TEST(ChatTemplate, Qwen3MultiTurnTrainsEarlierRepliesAsHistory) {
  const std::vector<ChatMessage> messages = {{ChatRole::user, "a"},
                                             {ChatRole::assistant, "<think>r</think>b"},
                                             {ChatRole::user, "c"},
                                             {ChatRole::assistant, "<think>s</think>d"}};
  EXPECT_EQ(spans(TemplateKind::qwen3, TrainOn::all, messages),
            "<|im_start|>user\na<|im_end|>\n<|im_start|>assistant\n|b<|im_end|>\n"
            "[<|im_start|>user\nc<|im_end|>\n<|im_start|>assistant\n]<think>\ns\n</think>\n\nd<|im_end|>\n");
  EXPECT_EQ(spans(TemplateKind::qwen3_nothink, TrainOn::all, messages),
            "<|im_start|>user\na<|im_end|>\n<|im_start|>assistant\n|b<|im_end|>\n"
            "[<|im_start|>user\nc<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n]d<|im_end|>\n");
  EXPECT_EQ(spans(TemplateKind::qwen3_nothink, TrainOn::last, messages),
            "<|im_start|>user\na<|im_end|>\n<|im_start|>assistant\nb<|im_end|>\n"
            "<|im_start|>user\nc<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n|d<|im_end|>\n");
}

// Auto-detection: a ChatML tokenizer with <think> whose Jinja reads enable_thinking is Qwen3's.
TEST(ChatTemplate, Qwen3IsImpliedByItsHybridThinkingJinja) {
  const std::string dir = write_chatml_tokenizer("chat_tok_qwen3");
  EXPECT_EQ(ChatTemplate::implied_by(Tokenizer::from_file(dir))->kind(), TemplateKind::chatml);
  std::ofstream(std::filesystem::path(dir) / "chat_template.jinja")
      << "{%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\n\n</think>\n\n' }}{%- endif %}";
  EXPECT_EQ(ChatTemplate::implied_by(Tokenizer::from_file(dir))->kind(), TemplateKind::qwen3);
}

TEST(ChatTemplate, Llama2) {
  EXPECT_EQ(render("llama2"),
            "<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST] Hello! </s><s>[INST] 2+2? [/INST]| 4 </s>");
}

TEST(ChatTemplate, PlainUsesTheModelsBosAndEos) {
  EXPECT_EQ(render("plain"), "<s>Be brief.\nHi\nHello!\n2+2?\n|4</s>");
  const Tokenizer without_config = Tokenizer::from_file(write_tokenizer(false));
  EXPECT_THROW(ChatTemplate(TemplateKind::plain, without_config), TokenizerError);
}

// A prompt that is a system message alone (DPO sets whose instruction is the system prompt):
// the completion answers it.
TEST(ChatTemplate, SystemOnlyPrompts) {
  const Tokenizer tokenizer = Tokenizer::from_file(write_tokenizer(true));
  const std::vector<ChatMessage> system_only = {{ChatRole::system, "Write a haiku."}};
  const auto prompt = [&](TemplateKind kind) { return ChatTemplate(kind, tokenizer).render_prompt(system_only); };
  EXPECT_EQ(prompt(TemplateKind::llama3),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nWrite a haiku.<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_EQ(prompt(TemplateKind::chatml), "<|im_start|>system\nWrite a haiku.<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(prompt(TemplateKind::llama2), "<s>[INST] <<SYS>>\nWrite a haiku.\n<</SYS>>\n\n [/INST]");
  EXPECT_EQ(prompt(TemplateKind::plain), "<s>Write a haiku.\n");
}

// The reason render_prompt gives for refusing `messages`; empty when it renders them.
std::string refusal(TemplateKind kind, const std::vector<ChatMessage>& messages) {
  const Tokenizer tokenizer = Tokenizer::from_file(write_tokenizer(true));
  return st::testing::thrown_message<std::invalid_argument>([&] { ChatTemplate(kind, tokenizer).render_prompt(messages); });
}

// Mistral-7B-Instruct's: one <s>, the system prompt inside the first user turn, no generation
// header; the multi-turn spans are prefixes of the longer prompts.
TEST(ChatTemplate, Mistral) {
  EXPECT_EQ(render("mistral"), "<s> [INST] Be brief.\n\nHi [/INST] Hello!</s> [INST] 2+2? [/INST]| 4</s>");
  EXPECT_EQ(spans(TemplateKind::mistral, TrainOn::all),
            "<s> [INST] S\n\na [/INST]| b</s>[ [INST] c [/INST]] d</s>[ [INST] e [/INST]] f</s>");
  EXPECT_NE(refusal(TemplateKind::mistral, {{ChatRole::system, "s"}}).find("add the user's message"), std::string::npos);
}

TEST(ChatTemplate, PromptEndingWithTheAssistantIsRefusedWithTheFix) {
  const std::string why = refusal(TemplateKind::chatml, {{ChatRole::system, "s"}, {ChatRole::user, "a"}, {ChatRole::assistant, "b"}});
  EXPECT_NE(why.find("ends with an assistant turn"), std::string::npos) << why;
  EXPECT_NE(why.find("end the prompt with a user message"), std::string::npos) << why;
}

TEST(ChatTemplate, ToolMessagesAreRefusedByName) {
  const std::string why =
      refusal(TemplateKind::llama3, {{ChatRole::user, "weather?"}, {ChatRole::assistant, "call"}, {ChatRole::tool, "{\"t\": 3}"}});
  EXPECT_NE(why.find("message 2 is a 'tool' message, which template 'llama3' does not render"), std::string::npos)
      << why;
}

TEST(ChatTemplate, PromptAndCompletionTokenizeApart) {
  const Tokenizer tokenizer = Tokenizer::from_file(write_tokenizer(true));
  const ChatTemplate chat(TemplateKind::llama3, tokenizer);
  const std::vector<int32_t> prompt = chat.prompt_ids({{ChatRole::user, "Hi"}});
  const std::vector<int32_t> completion = chat.completion_ids({{ChatRole::user, "Hi"}}, "Yo");
  EXPECT_EQ(prompt.front(), *tokenizer.token_id("<|begin_of_text|>"));
  EXPECT_EQ(prompt.back(), *tokenizer.token_id("\xC4\x8A"));  // "\n" as its byte symbol
  EXPECT_EQ(completion, (std::vector<int32_t>{'Y' - 0, 'o' - 0, *tokenizer.token_id("<|eot_id|>")}));
}

TEST(ChatTemplate, BadTurnsAndUnknownNamesAreRefused) {
  const Tokenizer tokenizer = Tokenizer::from_file(write_tokenizer(true));
  const ChatTemplate chat(TemplateKind::llama3, tokenizer);
  EXPECT_THROW(chat.render_prompt({}), std::invalid_argument);
  EXPECT_THROW(chat.render_prompt({{ChatRole::user, "a"}, {ChatRole::assistant, "b"}}), std::invalid_argument);
  EXPECT_THROW(chat.render_prompt({{ChatRole::user, "a"}, {ChatRole::user, "b"}}), std::invalid_argument);
  EXPECT_THROW(chat.render_prompt({{ChatRole::tool, "a"}}), std::invalid_argument);
  TemplateKind kind = TemplateKind::plain;
  EXPECT_FALSE(find_enum("vicuna", kind));
  EXPECT_TRUE(find_enum("qwen", kind));
  EXPECT_EQ(kind, TemplateKind::qwen);
  EXPECT_STREQ(enum_name(TemplateKind::chatml), "chatml");
}

}  // namespace
}  // namespace st
