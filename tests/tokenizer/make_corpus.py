"""make_corpus.py N [seed]: N diverse test strings as JSON lines on stdout, the same for the same
arguments: scripts of many languages, emoji sequences, combining marks, code, whitespace runs of
every kind, long numbers, contractions in any case, special-token look-alikes, random code points,
and a few long documents. tokenizer_parity.sh encodes them with shardtune and Hugging Face
tokenizers."""
import json
import sys

MASK = (1 << 64) - 1
count = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
state = int(sys.argv[2]) if len(sys.argv) > 2 else 20261123


def random():
    """xorshift64*: the same stream on every Python."""
    global state
    state ^= state >> 12
    state ^= (state << 25) & MASK
    state ^= state >> 27
    return (((state * 0x2545F4914F6CDD1D) & MASK) >> 11) / 2**53


def pick(items):
    return items[int(random() * len(items))]


def between(low, high):
    return low + int(random() * (high - low + 1))


words = ["hello", "World", "tokenizer", "Straße", "naïve", "café", "résumé", "Ελληνικά", "русский", "язык",
         "日本語", "こんにちは", "中文字符", "한국어", "안녕하세요", "العربية", "עברית", "हिन्दी", "தமிழ்", "ไทย", "Tiếng Việt",
         "ǅemal", "ﬁnance", "İstanbul", "ß", "ǈ", "Ⅻ", "x²", "½", "١٢٣", "๑๒๓", "A", "I", "a"]
emoji = ["🤗", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇩🇪", "❤️", "🧑🏿‍💻", "😀😃😄", "☕", "🔥", "✔︎", "🫠"]
code = ["def f(x):\n    return x**2\n", "for (int i = 0; i < n; ++i) {\n\tsum += a[i];\n}",
        "{\"key\": [1, 2.5, null], \"ok\": true}", "<div class=\"a\">&amp;</div>", "SELECT * FROM t WHERE id=42;",
        "x = re.compile(r'\\s+(?!\\S)')", "#include <vector>\n", "  if __name__ == '__main__':\r\n    main()",
        "$ ls -la | grep '^d'", "a->b; c::d<e>(f);", "```python\nprint('hi')\n```", "// TODO: fix\n"]
# U+0085 (in Unicode's White_Space) and U+FEFF (not in it) included: the Rust tokenizers and PCRE2
# both take \s as White_Space (tokenizers.js, the earlier oracle, took ECMAScript's, the opposite
# on both, so the corpus left them out then).
spaces = [" ", "  ", "\t", "\n", "\r\n", "\n\n", "\u00a0", "\u2003", "\u3000", "\u200b", "\u2028", "\u1680",
          "\u202f", "\v", "\f", " \n ", "\t\t\n", "\u0085", "\ufeff"]
contractions = ["don't", "I'M", "we'LL", "It'S", "they've", "you'd", "she'd've", "O'Neil", "rock'n'roll", "'tis"]
specials = ["<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>", "<|begin_of_text|>", "<|eot", "|>", "<|",
            "<s>", "</s>", "[INST]", "<|im_start|>", "<think>", "</think>"]
combining = ["e\u0301", "a\u0308\u0323", "n\u0303", "\u0915\u094d\u0937", "Z\u0351\u036b\u0343"]


def number():
    digits = "".join(str(between(0, 9)) for _ in range(between(1, 30)))
    choices = [digits, f"{digits}.{between(0, 999)}", "1,234,567", "3.14e-10", f"-{digits}", "0x1F", "２０２６"]
    return pick(choices)


# Random code points from blocks complete by Unicode 14, the tables of Debian's PCRE2 10.42: a
# reference with later tables would split letters new since then differently for that reason alone.
blocks = [(0x20, 0x7E), (0xA0, 0x24F), (0x370, 0x3FF), (0x400, 0x52F), (0x591, 0x5F4), (0x600, 0x6FF),
          (0x900, 0x97F), (0xE01, 0xE5B), (0x1100, 0x11FF), (0x2000, 0x206F), (0x2100, 0x23FF), (0x2500, 0x27BF),
          (0x3000, 0x303F), (0x3041, 0x30FF), (0x4E00, 0x9FEF), (0xAC00, 0xD7A3), (0xF900, 0xFAFF), (0xFF01, 0xFFEF),
          (0x1D400, 0x1D7FF), (0x1F300, 0x1F64F), (0x1F680, 0x1F6FF), (0x20000, 0x2A6D6)]


def codepoint():
    low, high = pick(blocks)
    return chr(between(low, high))


def fragment():
    kind = between(0, 9)
    if kind <= 1:
        return pick(words)
    if kind == 2:
        return pick(emoji)
    if kind == 3:
        return pick(code)
    if kind == 4:
        return pick(spaces) * between(1, 12)
    if kind == 5:
        return number()
    if kind == 6:
        return pick(contractions)
    if kind == 7:
        return pick(specials)
    if kind == 8:
        return pick(combining)
    return "".join(codepoint() for _ in range(between(1, 8)))


def line():
    parts = []
    for _ in range(between(1, 14)):
        parts += [fragment(), pick(["", " ", " ", "", "\n", ", ", ". "])]
    return "".join(parts)


out = [json.dumps(line(), ensure_ascii=False) for _ in range(count)]
documents = max(1, count // 500)  # long documents: throughput, long pieces
out += [json.dumps(" ".join(line() for _ in range(400)), ensure_ascii=False) for _ in range(documents)]
sys.stdout.write("\n".join(out) + "\n")
