"""twins.py RENDER_TEMPLATE VOCABULARIES_DIR TEMPLATES_DIR: each built-in template against its
Jinja twin rendered by `--template jinja` over the same vocabulary: llama3 with Llama 3's own
template (the llama3 vocabulary's), qwen with Qwen 2.5's (its vocabulary's and the shared file),
qwen3 with Qwen3's (its vocabulary's and the shared file). On the template parity test's
conversations (contents without surrounding whitespace, which Llama 3's template trims; think
blocks over Qwen3) they give the same prompt, completion and prompt ids, and the same multi-turn
cut (ids, loss mask, trained and untrained text). Qwen3 rewrites earlier replies (drops their
reasoning), which the jinja cut refuses turn by turn (--train-on last): those are counted apart.
Llama 3's first template writes the generation prompt even when not asked: its prompts are
compared, and its completions must differ from llama3's by exactly that trailing header (what
TRL's completions carry with it), which is why --template auto keeps llama3 for it (checked here
too, with auto's choice for each vocabulary)."""
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

render_template, vocabularies, templates = sys.argv[1:4]
TWINS = [("llama3", "llama3", None), ("qwen2_5", "qwen", None), ("qwen2_5", "qwen", "Qwen-Qwen2.5-7B-Instruct.jinja"),
         ("qwen3", "qwen3", None), ("qwen3", "qwen3", "Qwen-Qwen3-0.6B.jinja")]
texts = ["Hi", "What is 2+2?", "Explain\nthis code:\n```py\nprint(1)\n```", "日本語で答えて", "Emoji 🤗 ok", "a  b\tc",
         "Sure.", "<b>bold</b>", "Line one\n\nLine two", "x" * 300, "Quotes \"'\" and \\ backslash"]
thoughts = ["<think>\nLet me add.\n</think>\n\n4", "<think>a\n\nb</think>x\ny"]


HEADER = "<|start_header_id|>assistant<|end_header_id|>\n\n"
AUTO = {"llama3": "llama3", "qwen2_5": "chatml", "qwen3": "qwen3"}


def run(model, template, lines, *extra):
    out = subprocess.run([render_template, model, template, lines, *extra], check=True, capture_output=True, text=True)
    return [json.loads(l) for l in out.stdout.splitlines()], out.stderr


def alike(builtin, ours, twin, mode):
    if builtin != "llama3":
        return ours == twin
    if mode:  # the one trained reply of a single turn ends with the header in the jinja cut
        return twin["pieces"][:-1] == ours["pieces"][:-1] and twin["pieces"][-1] == [ours["pieces"][-1][0] + HEADER, 1]
    return (ours["prompt"] == twin["prompt"] and ours["prompt_ids"] == twin["prompt_ids"]
            and twin["completion"] == ours["completion"] + HEADER)


failed = 0
work = tempfile.mkdtemp(prefix="st_twins_")
try:
    for vocabulary, builtin, shared in TWINS:
        model = os.path.join(vocabularies, vocabulary)
        if shared:
            model = os.path.join(work, shared)
            os.makedirs(model)
            shutil.copy(os.path.join(vocabularies, vocabulary, "tokenizer.json"), model)
            config = json.load(open(os.path.join(vocabularies, vocabulary, "tokenizer_config.json"), encoding="utf-8"))
            config["chat_template"] = open(os.path.join(templates, shared), encoding="utf-8").read()
            json.dump(config, open(os.path.join(model, "tokenizer_config.json"), "w", encoding="utf-8"))
        random.seed(11)
        replies = texts + (thoughts if builtin == "qwen3" else [])
        prompts, turns = os.path.join(work, "prompts.jsonl"), os.path.join(work, "turns.jsonl")
        with open(prompts, "w", encoding="utf-8") as p, open(turns, "w", encoding="utf-8") as t:
            for i in range(100):
                messages = [{"role": "system", "content": random.choice(texts)}] if i % 2 else []
                for _ in range(random.randint(0, 3)):
                    messages += [{"role": "user", "content": random.choice(texts)},
                                 {"role": "assistant", "content": random.choice(replies)}]
                p.write(json.dumps({"messages": messages + [{"role": "user", "content": random.choice(texts)}],
                                    "reply": random.choice(replies)}) + "\n")
                t.write(json.dumps({"messages": messages + [{"role": "user", "content": random.choice(texts)},
                                                            {"role": "assistant", "content": random.choice(replies)}]}) + "\n")
        bad = refused = 0
        for mode in ([], ["--turns"]):
            lines = turns if mode else prompts
            for ours, twin in zip(run(model, builtin, lines, *mode)[0], run(model, "jinja", lines, *mode)[0]):
                if twin.get("cut"):
                    refused += 1
                elif not alike(builtin, ours, twin, mode):
                    bad += 1
                    if bad <= 2:
                        print(f"  {builtin} vs jinja ({shared or vocabulary + '/tokenizer_config.json'}):\n"
                              f"    built-in {json.dumps(ours, ensure_ascii=False)[:300]}\n"
                              f"    jinja    {json.dumps(twin, ensure_ascii=False)[:300]}")
        if not shared:
            chosen = run(model, "auto", prompts)[1]
            if f"auto: {AUTO[vocabulary]} (" not in chosen:
                bad += 1
                print(f"  auto over {vocabulary}: {chosen.strip()}, expected {AUTO[vocabulary]}")
        failed += bad > 0
        print(f"{builtin} = jinja over {shared or vocabulary + '/tokenizer_config.json'}: {200 - bad - refused} of 200 "
              f"renderings alike, {bad} differ, {refused} multi-turn cuts the jinja template refuses (--train-on last)")
finally:
    shutil.rmtree(work, ignore_errors=True)
sys.exit(1 if failed else 0)
