// jinja_turns.mjs <jinja.js> <tokenizers.mjs> <model dir> <conversations.jsonl>: multi-turn SFT
// as the model's own chat_template defines it, for each conversation {"messages": [..., the
// assistant's last reply]}: the whole conversation rendered by @huggingface/jinja and encoded by
// tokenizers.js, and the loss mask over those ids: 1 on each assistant reply, from where the
// template's generation prompt for that turn ends to where its rendering of the turn ends; and
// the same cut in text: `pieces`, [text, trained] runs that make up the whole rendering.
import fs from "fs";
const [jinjaLibrary, tokenizersLibrary, modelDir, conversations] = process.argv.slice(2);
const { Template } = await import(jinjaLibrary);
const { Tokenizer } = await import(tokenizersLibrary);
const config = JSON.parse(fs.readFileSync(`${modelDir}/tokenizer_config.json`, "utf8"));
const tokenizer = new Tokenizer(JSON.parse(fs.readFileSync(`${modelDir}/tokenizer.json`, "utf8")), config);
const template = new Template(config.chat_template);
const token = (t) => (t && typeof t === "object" ? t.content : t) ?? "";
const common = { bos_token: token(config.bos_token), eos_token: token(config.eos_token) };
const render = (messages, add_generation_prompt) => template.render({ ...common, messages, add_generation_prompt });
// Llama 3's template appends the generation prompt even without add_generation_prompt: a turn
// ends before it.
const generationHeader = "<|start_header_id|>assistant<|end_header_id|>\n\n";
const encode = (text) => tokenizer.encode(text, { add_special_tokens: false }).ids;
for (const line of fs.readFileSync(conversations, "utf8").split("\n").filter((l) => l.length > 0)) {
  const { messages } = JSON.parse(line);
  const whole = render(messages, false);
  const ids = encode(whole);
  const mask = new Array(ids.length).fill(0);
  const tokensBefore = (text) => {
    if (!whole.startsWith(text)) throw new Error(`not a prefix of the conversation: ${JSON.stringify(text)}`);
    const prefix = encode(text);
    if (prefix.some((id, i) => id !== ids[i])) throw new Error(`ids of a prefix differ: ${JSON.stringify(text)}`);
    return prefix.length;
  };
  const pieces = [];
  let cut = 0;
  messages.forEach((message, k) => {
    if (message.role !== "assistant") return;
    let end = render(messages.slice(0, k + 1), false);
    if (end.endsWith(generationHeader) && !message.content.endsWith(generationHeader)) {
      end = end.slice(0, -generationHeader.length);
    }
    const start = render(messages.slice(0, k), true);
    for (let t = tokensBefore(start); t < tokensBefore(end); ++t) mask[t] = 1;
    pieces.push([whole.slice(cut, start.length), 0], [whole.slice(start.length, end.length), 1]);
    cut = end.length;
  });
  pieces.push([whole.slice(cut), 0]);
  console.log(JSON.stringify({ ids, mask, pieces }));
}
