#!/usr/bin/env bash
# template_parity.sh <render_template binary> <vocabulary|model dir> <template|auto> <vocabularies dir> [chat_template file]:
# shardtune's chat template against the model's own Jinja chat_template (tokenizer_config.json,
# or the given file - templates/ - over that vocabulary), rendered by transformers'
# apply_chat_template in the tests' Python environment (hf_chat_template.py):
# - prompts: on every conversation the prompts are equal, and prompt + completion starts the
#   whole rendered conversation - so the prompt/completion cut is where the model's template
#   puts it;
# - multi-turn SFT: conversations of 1-6 turns, system or not, cut into the same trained and
#   untrained text, and give the same ids (the model's tokenizer on the rendered text) and the same
#   loss mask (each assistant turn). Over a SentencePiece vocabulary (llama2, which the mistral
#   template uses) the ids are not compared: its normalizer prepends "▁" to every piece tokenized
#   apart, so each span's ids differ from the whole text's at its first token (as they do wherever
#   prompt and completion are tokenized apart, e.g. TRL's DPO).
# Contents carry no surrounding whitespace (Llama 3's template trims it). `chatml` is plain
# ChatML: its conversations always have a system message, since without one Qwen's template
# writes its default (that is template `qwen`). `mistral` has no system-only prompt (its template
# puts the system prompt into the first user turn). `auto` is the template the tokenizer implies,
# with the default system prompt the model's own template writes (Qwen 2.5's, SmolLM2's): half of
# its conversations have no system message. A model dir (an absolute path: the SmolLM2 fixture)
# stands for a vocabulary. Over Qwen3's template (qwen3, qwen3_nothink, auto on its vocabulary)
# replies may carry reasoning (<think>...</think>): earlier replies are written without it; the
# final reply keeps it with qwen3 and has none with qwen3_nothink (whose prompts its Jinja renders
# with enable_thinking false; we drop reasoning there as LlamaFactory does, the Jinja would keep
# it after the empty think block). qwen3_nothink has no system-only prompt: there the Jinja's
# generation prompt ends with the empty think block and its conversation has none, so no cut
# agrees with both (we keep the generation prompt; test_chat_template.cpp checks it).
set -euo pipefail
tool=$1 vocabulary=$2 template=$3 vocabularies=$4 chat_template=${5:-}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=vocabularies.sh
source "$here/vocabularies.sh"
need_oracles "$vocabularies"
python=$ST_ORACLE_PYTHON
model=$vocabularies/$vocabulary
[[ "$vocabulary" == /* ]] && model=$vocabulary
work=$(mktemp -d /tmp/st_tpl_XXXXXX)
trap 'rm -rf "$work"' EXIT
reasoning=0
[[ "$template" == qwen3* || ("$template" == auto && "$vocabulary" == qwen3) ]] && reasoning=1
[[ "$template" == qwen3_nothink ]] && export ST_TEMPLATE_ENABLE_THINKING=false
"$python" - "$work/conversations.jsonl" "$work/turns.jsonl" "$template" "$reasoning" <<'PY'
import json, random, sys
random.seed(7)
texts = ["Hi", "What is 2+2?", "Explain\nthis code:\n```py\nprint(1)\n```", "日本語で答えて", "Emoji 🤗 ok", "a  b\tc",
         "Sure.", "<b>bold</b>", "Line one\n\nLine two", "x" * 300, "Quotes \"'\" and \\ backslash"]
thoughts = ["<think>\nLet me add.\n</think>\n\n4", "<think>\n\n</think>\n\nHi", "<think>a\n\nb</think>x\ny",
            "</think>\nanswer", "<think>\nx</think>\n<think>y</think>z"] if sys.argv[4] == "1" else []
final_thoughts = thoughts if sys.argv[3] != "qwen3_nothink" else []
reply = lambda final: random.choice(texts + (final_thoughts if final else thoughts))
with open(sys.argv[1], "w") as out:
    for i in range(200):
        messages = [{"role": "system", "content": random.choice(texts)}] if sys.argv[3] != "auto" or i % 2 else []
        if i % 10 != 0 or sys.argv[3] in ("mistral", "qwen3_nothink") or not messages:  # every tenth prompt is the system message alone
            for turn in range(random.randint(0, 3)):
                messages += [{"role": "user", "content": random.choice(texts)}, {"role": "assistant", "content": reply(False)}]
            messages.append({"role": "user", "content": random.choice(texts)})
        out.write(json.dumps({"messages": messages, "reply": reply(True)}) + "\n")
with open(sys.argv[2], "w") as out:
    for i in range(120):
        system = sys.argv[3] == "chatml" or i % 2 == 0
        messages = [{"role": "system", "content": random.choice(texts)}] if system else []
        for turn in range(1 + i % 6):
            messages += [{"role": "user", "content": random.choice(texts)},
                         {"role": "assistant", "content": reply(turn == i % 6)}]
        out.write(json.dumps({"messages": messages}) + "\n")
PY
"$python" "$here/hf_chat_template.py" "$model" ${chat_template:+--template "$chat_template"} \
  render "$work/conversations.jsonl" "$work/jinja.jsonl" turns "$work/turns.jsonl" "$work/jinja_turns.jsonl"
"$tool" "$model" "$template" "$work/conversations.jsonl" >"$work/ours.jsonl"
"$python" - "$work/jinja.jsonl" "$work/ours.jsonl" <<'PY'
import json, sys
jinja, ours = ([json.loads(l) for l in open(p, encoding="utf-8")] for p in sys.argv[1:])
assert len(jinja) == len(ours) > 0
bad = 0
for i, (j, o) in enumerate(zip(jinja, ours)):
    if j["prompt"] != o["prompt"] or not j["whole"].startswith(o["prompt"] + o["completion"]):
        bad += 1
        if bad <= 3:
            print(f"conversation {i}:\n  jinja prompt {json.dumps(j['prompt'])[-160:]}\n  ours  prompt {json.dumps(o['prompt'])[-160:]}"
                  f"\n  jinja whole  {json.dumps(j['whole'])[-160:]}\n  ours  + completion {json.dumps(o['completion'])}")
print(f"{len(ours) - bad} of {len(ours)} conversations render as the model's chat_template does")
sys.exit(1 if bad else 0)
PY
"$tool" "$model" "$template" "$work/turns.jsonl" --turns >"$work/our_turns.jsonl"
"$python" - "$work/turns.jsonl" "$work/jinja_turns.jsonl" "$work/our_turns.jsonl" "$vocabulary" <<'PY'
import json, sys
conversations, jinja, ours = ([json.loads(l) for l in open(p, encoding="utf-8")] for p in sys.argv[1:4])
compare_ids = sys.argv[4] != "llama2"


def runs(pieces):
    """[text, trained] pieces with empty ones dropped and neighbours of one kind joined."""
    out = []
    for text, trained in pieces:
        if not text:
            continue
        if out and out[-1][1] == trained:
            out[-1][0] += text
        else:
            out.append([text, trained])
    return out


assert len(jinja) == len(ours) == len(conversations) > 0
bad = trained = 0
for i, (j, o) in enumerate(zip(jinja, ours)):
    n = len(o["ids"])
    # Ours ends after the last reply; Llama 3's rendering may go on with a generation prompt.
    jinja_runs, our_runs = runs(j["pieces"]), runs(o["pieces"])
    if len(jinja_runs) == len(our_runs) + 1 and jinja_runs[-1][1] == 0:
        jinja_runs = jinja_runs[:-1]
    same = jinja_runs == our_runs
    if compare_ids:
        same = same and o["ids"] == j["ids"][:n] and o["mask"] == j["mask"][:n] and not any(j["mask"][n:])
    trained += sum(o["mask"])
    if not same:
        bad += 1
        if bad <= 3:
            first = next((t for t in range(n) if t >= len(j["ids"]) or (o["ids"][t], o["mask"][t]) != (j["ids"][t], j["mask"][t])), n)
            turns = sum(m["role"] == "assistant" for m in conversations[i]["messages"])
            print(f"conversation {i} ({turns} turns): first difference at token {first}\n"
                  f"  jinja ids {j['ids'][max(0, first - 4):first + 4]} mask {j['mask'][max(0, first - 4):first + 4]}\n"
                  f"  ours  ids {o['ids'][max(0, first - 4):first + 4]} mask {o['mask'][max(0, first - 4):first + 4]}")
            if jinja_runs != our_runs:
                print(f"  jinja text runs {json.dumps(jinja_runs)[:300]}\n  ours  text runs {json.dumps(our_runs)[:300]}")
compared = "text cut, ids and loss mask" if compare_ids else "text cut into trained and untrained spans"
print(f"{len(ours) - bad} of {len(ours)} multi-turn conversations (1-6 turns) give the model template's {compared} "
      f"({trained} trained tokens)")
sys.exit(1 if bad else 0)
PY
