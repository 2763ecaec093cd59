// make_corpus.mjs N [seed]: N diverse test strings as JSON lines on stdout, the same for the same
// arguments: scripts of many languages, emoji sequences, combining marks, code, whitespace runs
// of every kind, long numbers, contractions in any case, special-token look-alikes, random code
// points, and a few long documents. js_parity.sh tokenizes them with both encoders.
const count = Number(process.argv[2] || 10000);
let state = BigInt(process.argv[3] || 20261123);
function random() {  // xorshift64*: deterministic across Node versions
  state ^= state >> 12n; state ^= (state << 25n) & 0xffffffffffffffffn; state ^= state >> 27n;
  return Number(((state * 0x2545f4914f6cdd1dn) & 0xffffffffffffffffn) >> 11n) / 2 ** 53;
}
const pick = (list) => list[Math.floor(random() * list.length)];
const between = (low, high) => low + Math.floor(random() * (high - low + 1));

const words = ["hello", "World", "tokenizer", "Straße", "naïve", "café", "résumé", "Ελληνικά", "русский", "язык",
  "日本語", "こんにちは", "中文字符", "한국어", "안녕하세요", "العربية", "עברית", "हिन्दी", "தமிழ்", "ไทย", "Tiếng Việt",
  "ǅemal", "ﬁnance", "İstanbul", "ß", "ǈ", "Ⅻ", "x²", "½", "١٢٣", "๑๒๓", "A", "I", "a"];
const emoji = ["🤗", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇩🇪", "❤️", "🧑🏿‍💻", "😀😃😄", "☕", "🔥", "✔︎", "🫠"];
const code = ["def f(x):\n    return x**2\n", "for (int i = 0; i < n; ++i) {\n\tsum += a[i];\n}",
  "{\"key\": [1, 2.5, null], \"ok\": true}", "<div class=\"a\">&amp;</div>", "SELECT * FROM t WHERE id=42;",
  "x = re.compile(r'\\s+(?!\\S)')", "#include <vector>\n", "  if __name__ == '__main__':\r\n    main()",
  "$ ls -la | grep '^d'", "a->b; c::d<e>(f);", "```python\nprint('hi')\n```", "// TODO: fix\n"];
// Not U+FEFF or U+0085: tokenizers.js's \s is ECMAScript's (U+FEFF in, U+0085 out), the Rust
// tokenizers' and PCRE2's is Unicode White_Space (the opposite on both), so the two oracles
// disagree there by design.
const spaces = [" ", "  ", "\t", "\n", "\r\n", "\n\n", "\u00a0", "\u2003", "\u3000", "\u200b", "\u2028", "\u1680",
  "\u202f", "\v", "\f", " \n ", "\t\t\n"];
const contractions = ["don't", "I'M", "we'LL", "It'S", "they've", "you'd", "she'd've", "O'Neil", "rock'n'roll", "'tis"];
const specials = ["<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>", "<|begin_of_text|>", "<|eot", "|>", "<|",
  "<s>", "</s>", "[INST]", "<|im_start|>"];
const combining = ["e\u0301", "a\u0308\u0323", "n\u0303", "\u0915\u094d\u0937", "Z\u0351\u036b\u0343"];

function number() {
  const digits = Array.from({ length: between(1, 30) }, () => between(0, 9)).join("");
  return pick([digits, `${digits}.${between(0, 999)}`, "1,234,567", "3.14e-10", `-${digits}`, "0x1F", "２０２６"]);
}
// Random code points from blocks complete by Unicode 14, the tables of Debian's PCRE2 10.42: the
// JavaScript side's ICU knows later versions, whose new letters (e.g. Egyptian Hieroglyphs
// Extended-A, Unicode 16) would split differently for that reason alone.
const blocks = [[0x20, 0x7e], [0xa0, 0x24f], [0x370, 0x3ff], [0x400, 0x52f], [0x591, 0x5f4], [0x600, 0x6ff],
  [0x900, 0x97f], [0xe01, 0xe5b], [0x1100, 0x11ff], [0x2000, 0x206f], [0x2100, 0x23ff], [0x2500, 0x27bf],
  [0x3000, 0x303f], [0x3041, 0x30ff], [0x4e00, 0x9fef], [0xac00, 0xd7a3], [0xf900, 0xfaff], [0xff01, 0xffef],
  [0x1d400, 0x1d7ff], [0x1f300, 0x1f64f], [0x1f680, 0x1f6ff], [0x20000, 0x2a6d6]];
function codepoint() {
  const [low, high] = pick(blocks);
  return String.fromCodePoint(between(low, high));
}
function fragment() {
  switch (between(0, 9)) {
    case 0: case 1: return pick(words);
    case 2: return pick(emoji);
    case 3: return pick(code);
    case 4: return pick(spaces).repeat(between(1, 12));
    case 5: return number();
    case 6: return pick(contractions);
    case 7: return pick(specials);
    case 8: return pick(combining);
    default: return Array.from({ length: between(1, 8) }, codepoint).join("");
  }
}
function line() {
  const parts = [];
  for (let i = between(1, 14); i > 0; --i) parts.push(fragment(), pick(["", " ", " ", "", "\n", ", ", ". "]));
  return parts.join("");
}
const out = [];
for (let i = 0; i < count; ++i) out.push(JSON.stringify(line()));
for (let i = 0; i < Math.max(1, count / 500); ++i) {  // long documents: throughput, long pieces
  out.push(JSON.stringify(Array.from({ length: 400 }, line).join(" ")));
}
process.stdout.write(out.join("\n") + "\n");
