// jinja_render.mjs <jinja.js> <model dir> <conversations.jsonl>: the model's own chat_template
// (tokenizer_config.json) rendered by @huggingface/jinja for each conversation: the prompt
// (with the generation prompt) and the whole conversation with the reply appended, as JSON lines.
import fs from "fs";
const [library, modelDir, conversations] = process.argv.slice(2);
const { Template } = await import(library);
const config = JSON.parse(fs.readFileSync(`${modelDir}/tokenizer_config.json`, "utf8"));
const template = new Template(config.chat_template);
const token = (t) => (t && typeof t === "object" ? t.content : t) ?? "";
const common = { bos_token: token(config.bos_token), eos_token: token(config.eos_token) };
for (const line of fs.readFileSync(conversations, "utf8").split("\n").filter((l) => l.length > 0)) {
  const { messages, reply } = JSON.parse(line);
  const prompt = template.render({ ...common, messages, add_generation_prompt: true });
  const whole = template.render({ ...common, messages: [...messages, { role: "assistant", content: reply }],
                                  add_generation_prompt: false });
  console.log(JSON.stringify({ prompt, whole }));
}
