// Chat templates by name, as LlamaFactory's `--template`: llama3, llama2, chatml, qwen (ChatML
// with Qwen 2.5's default system prompt), qwen3 / qwen3_nothink (ChatML with Qwen3's think block,
// thinking on or off), mistral (Mistral-7B-Instruct's [INST] format), plain.
// A prompt (messages) and a completion (the assistant's reply) are rendered and tokenized
// apart, so the prompt/completion boundary - where the loss mask starts - is exact. Special
// tokens are written as text and recognised by the tokenizer's added tokens (as transformers'
// apply_chat_template does). docs/data-format.md shows each rendering.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <memory>

#include "tokenizer/jinja_chat.h"
#include "tokenizer/tokenizer.h"
#include "util/enum_names.h"

namespace st {

// A message's role as chat templates and OpenAI-style records spell it; tool turns (tool,
// function, ipython) are read but no template here renders them.
enum class ChatRole { system, user, assistant, tool, function, ipython };
template <>
struct EnumNames<ChatRole> {
  static constexpr NamedValue<ChatRole> table[] = {{ChatRole::system, "system"},       {ChatRole::user, "user"},
                                                   {ChatRole::assistant, "assistant"}, {ChatRole::tool, "tool"},
                                                   {ChatRole::function, "function"},   {ChatRole::ipython, "ipython"}};
};

struct ChatMessage {
  ChatRole role = ChatRole::user;
  std::string content;
  bool trained = true;  // an assistant turn that may carry loss (false: LlamaFactory's loss_weight 0)
};

// qwen3 is Qwen3's own Jinja with its default, thinking on: the final reply is trained with its
// think block (empty when the reply has none); qwen3_nothink is the same Jinja with
// enable_thinking false: the empty think block closes the prompt and the reply is trained bare
// (reasoning in the data is dropped, as LlamaFactory's enable_thinking: false does). Both render
// earlier replies as Qwen3 does, without their reasoning. jinja is the model's own chat_template
// (tokenizer_config.json or chat_template.jinja) rendered as transformers renders it.
enum class TemplateKind { llama3, llama2, chatml, qwen, qwen3, qwen3_nothink, mistral, plain, jinja };
template <>
struct EnumNames<TemplateKind> {
  static constexpr NamedValue<TemplateKind> table[] = {{TemplateKind::llama3, "llama3"},
                                                       {TemplateKind::llama2, "llama2"},
                                                       {TemplateKind::chatml, "chatml"},
                                                       {TemplateKind::qwen, "qwen"},
                                                       {TemplateKind::qwen3, "qwen3"},
                                                       {TemplateKind::qwen3_nothink, "qwen3_nothink"},
                                                       {TemplateKind::mistral, "mistral"},
                                                       {TemplateKind::plain, "plain"},
                                                       {TemplateKind::jinja, "jinja"}};
};

// Which assistant turns of a conversation carry loss (SFT, `prep --train-on`).
enum class TrainOn { all, last };
template <>
struct EnumNames<TrainOn> {
  static constexpr NamedValue<TrainOn> table[] = {{TrainOn::all, "all"}, {TrainOn::last, "last"}};
};

// A conversation cut for training: the prompt up to the first trained reply, then the rest as
// spans, each an assistant reply with its end of turn (trained) or the turns between (not).
struct RenderedSpan {
  std::string text;
  bool trained = false;
};
struct RenderedConversation {
  std::string prompt;
  std::vector<RenderedSpan> completion;
};

// The same as ids: the completion's spans tokenized apart and concatenated, with the mask.
struct ConversationIds {
  std::vector<int32_t> prompt, completion;
  std::vector<uint8_t> loss_mask;  // per completion token
};

// The template a tokenizer's special tokens imply: llama3 (<|start_header_id|>, <|eot_id|>),
// chatml (<|im_start|>, <|im_end|>), qwen3 when that ChatML tokenizer has <think> and its Jinja
// reads enable_thinking (Qwen3's hybrid thinking); nullopt when they tell nothing (llama2,
// mistral and plain share <s>/</s>: name those).
std::optional<TemplateKind> detect_template(const Tokenizer& tokenizer);

// The system prompt a ChatML model's own Jinja template writes when a conversation has none:
// the text of its literal '<|im_start|>system\n...<|im_end|>' string (Qwen 2.5: "You are Qwen,
// ...", SmolLM2: "You are a helpful AI assistant named SmolLM, ..."); "" when it writes none.
std::string chatml_default_system(const std::string& jinja);

class ChatTemplate {
 public:
  // Throws TokenizerError when the tokenizer lacks a special token the template writes (e.g.
  // llama3 on a tokenizer without <|eot_id|>), naming the token and the template; for jinja,
  // when the tokenizer has no chat_template or it does not parse (the file, line and construct).
  ChatTemplate(TemplateKind kind, const Tokenizer& tokenizer, const JinjaOptions& jinja = {});
  // The template the tokenizer implies (detect_template) as the model's own renders it: ChatML
  // with the default system prompt of its Jinja, if it has one. nullopt as detect_template.
  static std::optional<ChatTemplate> implied_by(const Tokenizer& tokenizer);
  // The named template, else (a command's --template auto) the model's own: the built-in one its
  // special tokens imply when that renders the probe conversations exactly as its chat_template
  // does (faster), else jinja; the implied built-in one when it has no chat_template; nullopt
  // when it has neither. With jinja.template_file, jinja (named or auto; another name refused).
  static std::optional<ChatTemplate> named_or_implied(std::optional<TemplateKind> named, const Tokenizer& tokenizer,
                                                      const JinjaOptions& jinja = {});
  // Why auto picked this template, for the log ("" when it was named).
  const std::string& chosen_because() const { return chosen_because_; }

  // The prompt as text: the messages (system first if any, then alternating user / assistant,
  // ending with a user turn; or a system message alone, which the completion answers) and the
  // assistant's turn header. Throws std::invalid_argument with a short reason for a sequence the
  // template cannot render (e.g. one ending with an assistant turn). jinja: the template's own
  // rendering with add_generation_prompt; the turns it refuses throw jinja::TemplateError
  // (jinja::TemplateRaised for its raise_exception).
  std::string render_prompt(const std::vector<ChatMessage>& messages) const;
  // The completion as text: the reply to `prompt` (render_prompt's messages) and the end of the
  // assistant's turn. qwen3 writes it with its think block when it answers a user message (its
  // Jinja writes a reply to a system message alone without one). jinja: what the whole
  // conversation's rendering writes after the prompt; where the prompt ends with text that
  // rendering does not write before a reply (a reasoning template's "<think>\n"), the reply as
  // the model would write it after that prompt (without that text where it opens the reply) and
  // the template's end of turn.
  std::string render_completion(const std::vector<ChatMessage>& prompt, const std::string& reply) const;

  // A conversation ending with an assistant turn, cut after its last assistant turn that may be
  // trained (`trained`): with TrainOn::last the prompt is everything before that reply; with
  // TrainOn::all everything before the first trainable reply, and each later trainable
  // assistant turn is a trained span, written as the conversation writes it (qwen3: an earlier
  // reply without its reasoning, its header without the empty think block of qwen3_nothink). Throws std::invalid_argument when no turn may be trained,
  // for turns the template cannot render (as render_prompt) or, for `plain`, several trained
  // turns (it has no multi-turn form in which each prompt prefixes the next).
  RenderedConversation render_conversation(const std::vector<ChatMessage>& messages, TrainOn train_on) const;

  TemplateKind kind() const { return kind_; }
  const Tokenizer& tokenizer() const { return tokenizer_; }
  // jinja: whether the template writes its generation prompt whether asked or not (Llama 3's
  // first release did): every completion then ends with the next turn's header, as in TRL.
  bool ignores_generation_prompt() const;
  const std::string& default_system() const { return default_system_; }
  std::vector<int32_t> prompt_ids(const std::vector<ChatMessage>& messages) const;
  std::vector<int32_t> completion_ids(const std::vector<ChatMessage>& prompt, const std::string& reply) const;
  ConversationIds conversation_ids(const std::vector<ChatMessage>& messages, TrainOn train_on) const;

 private:
  // A prompt is opening + turn(i) for each message + generation_header (render_prompt).
  // An assistant turn is generation_header + reply; `final` is the conversation's last reply,
  // which Qwen3 writes with its think block, an earlier one without.
  std::string opening(const std::vector<ChatMessage>& messages) const;
  std::string turn(const std::vector<ChatMessage>& messages, size_t i) const;
  std::string generation_header(bool final = true) const;
  std::string reply_text(const std::string& content, bool final) const;
  // jinja (chat_template_jinja.cpp).
  std::string jinja_prompt(const std::vector<ChatMessage>& messages) const;
  std::string jinja_completion(const std::vector<ChatMessage>& prompt, const std::string& reply) const;
  RenderedConversation jinja_conversation(const std::vector<ChatMessage>& messages,
                                          const std::vector<size_t>& replies) const;

  TemplateKind kind_;
  const Tokenizer& tokenizer_;
  std::string bos_, eos_;  // plain: the model's (tokenizer_config.json), possibly empty
  std::string default_system_;  // chatml, qwen: written when a prompt has no system message
  std::shared_ptr<const JinjaChat> jinja_;  // jinja
  std::string chosen_because_;
};

// Where `a` and `b` render the probe conversations differently (which rendering, where, how), ""
// when they render them alike: prompts, completions and multi-turn cuts. What --template auto
// asks of a built-in template before it stands in for the model's own (template_probe.cpp).
// With `b_may_refuse`, a rendering `b` refuses (a multi-turn cut the model's template cannot make
// turn by turn) counts as alike.
std::string probe_difference(const ChatTemplate& a, const ChatTemplate& b, bool b_may_refuse = false);
// Whether `a` and `b` render the probe conversations' prompts alike (the completions aside).
bool probe_prompts_alike(const ChatTemplate& a, const ChatTemplate& b);

}  // namespace st
