// js_encode.mjs <tokenizers.mjs> <model dir> <corpus.jsonl> <ids.jsonl>: the JavaScript encoder
// (@huggingface/tokenizers, tokenizers.js) on the corpus, no special tokens added; prints the
// throughput on one core, as tokenize_corpus does for the C++ one.
import fs from "fs";
const [library, modelDir, corpus, output] = process.argv.slice(2);
const { Tokenizer } = await import(library);
const json = JSON.parse(fs.readFileSync(`${modelDir}/tokenizer.json`, "utf8"));
const config = JSON.parse(fs.readFileSync(`${modelDir}/tokenizer_config.json`, "utf8"));
const tokenizer = new Tokenizer(json, config);
const texts = fs.readFileSync(corpus, "utf8").split("\n").filter((l) => l.length > 0).map((l) => JSON.parse(l));
let bytes = 0;
const rows = [];
const start = process.hrtime.bigint();
for (const text of texts) {
  rows.push(tokenizer.encode(text, { add_special_tokens: false }).ids);
  bytes += Buffer.byteLength(text, "utf8");
}
const seconds = Number(process.hrtime.bigint() - start) / 1e9;
fs.writeFileSync(output, rows.map((r) => JSON.stringify(r)).join("\n") + "\n");
console.log(`js (tokenizers.js): ${texts.length} strings, ${(bytes / 1e6).toFixed(2)} MB in ${seconds.toFixed(3)} s = ` +
            `${(bytes / 1e6 / seconds).toFixed(2)} MB/s on one core`);
