"""chat_parity.py RENDER_TEMPLATE VOCABULARY_DIR TEMPLATES_DIR [NAME ...]: every chat template in
TEMPLATES_DIR (the 38 of SOURCE.md) as `--template jinja` renders it against transformers'
apply_chat_template, over the Llama 3 vocabulary with the template's own bos/eos tokens and
kwargs (SOURCE.md), on the template parity test's conversations (system or none, one to four
turns, unicode, code, quotes, think blocks): the prompt's text and ids equal; the completion
equals what the whole conversation's rendering writes after the prompt (where it starts with
it; reasoning templates whose generation prompt opens a think block are cut by the rule
test_jinja_chat.cpp checks); a conversation one refuses the other refuses the same way
(raise_exception or another failure)."""
import datetime
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")
from transformers import AutoTokenizer  # noqa: E402
from transformers.utils import chat_template_utils as ctu  # noqa: E402

DATE = "2026-11-29"
fixed = datetime.datetime.strptime(DATE, "%Y-%m-%d")


class FixedClock(datetime.datetime):
    @classmethod
    def now(cls, tz=None):
        return fixed


ctu.datetime = FixedClock
render_template, vocabulary, templates = sys.argv[1:4]
names = sys.argv[4:] or sorted(f for f in os.listdir(templates) if f.endswith(".jinja"))
source_md = open(os.path.join(templates, "SOURCE.md"), encoding="utf-8").read()
WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the weather in a city.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "The city, e.g. Paris"},
        "unit": {"type": "string", "description": "celsius or fahrenheit", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city"]}}}
texts = ["Hi", "What is 2+2?", "Explain\nthis code:\n```py\nprint(1)\n```", "日本語で答えて", "Emoji 🤗 ok", "a  b\tc",
         "Sure.", "<b>bold</b>", "Line one\n\nLine two", "x" * 300, "Quotes \"'\" and \\ backslash"]
thoughts = ["<think>\nLet me add.\n</think>\n\n4", "<think>a\n\nb</think>x\ny"]


def conversations(seed):
    random.seed(seed)
    out = []
    for i in range(60):
        messages = [{"role": "system", "content": random.choice(texts)}] if i % 2 else []
        for _ in range(random.randint(0, 3)):
            messages += [{"role": "user", "content": random.choice(texts)},
                         {"role": "assistant", "content": random.choice(texts + thoughts)}]
        messages.append({"role": "user", "content": random.choice(texts)})
        out.append({"messages": messages, "reply": random.choice(texts + thoughts)})
    return out


def kwargs_of(name):
    row = next(line for line in source_md.splitlines() if line.startswith(f"| `{name}` |"))
    cell = [c.strip() for c in re.split(r"(?<!\\)\|", row)[1:-1]][5]
    kwargs = {k: v.replace("\\|", "|") for k, v in re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', cell)}
    if "tools=[" in cell:
        kwargs["tools"] = [WEATHER_TOOL]
    return kwargs


failed = 0
work = tempfile.mkdtemp(prefix="st_jinja_chat_")
try:
    # One vocabulary for every template: Llama 3's, with every template's bos/eos tokens as its
    # special tokens (as in each model's own tokenizer; else transformers would add them and the
    # ids would differ for that alone), loaded once by transformers.
    vocab = json.load(open(os.path.join(vocabulary, "tokenizer.json"), encoding="utf-8"))
    known = {t["content"] for t in vocab["added_tokens"]}
    next_id = max(t["id"] for t in vocab["added_tokens"]) + 1
    for name in names:
        for token in (kwargs_of(name).get("bos_token"), kwargs_of(name).get("eos_token")):
            if token and token not in known and token not in vocab["model"]["vocab"]:
                vocab["added_tokens"].append({"id": next_id, "content": token, "single_word": False, "lstrip": False,
                                              "rstrip": False, "normalized": False, "special": True})
                known.add(token)
                next_id += 1
    shared_vocabulary = os.path.join(work, "tokenizer.json")
    with open(shared_vocabulary, "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    os.makedirs(os.path.join(work, "base"))
    os.symlink(shared_vocabulary, os.path.join(work, "base", "tokenizer.json"))
    tokenizer = AutoTokenizer.from_pretrained(os.path.join(work, "base"))
    for name in names:
        kwargs = kwargs_of(name)
        model = os.path.join(work, name)
        os.makedirs(model)
        os.symlink(shared_vocabulary, os.path.join(model, "tokenizer.json"))
        chat_template = open(os.path.join(templates, name), encoding="utf-8", newline="").read()
        config = {"chat_template": chat_template, "bos_token": kwargs.get("bos_token"), "eos_token": kwargs.get("eos_token")}
        with open(os.path.join(model, "tokenizer_config.json"), "w", encoding="utf-8") as f:
            json.dump({k: v for k, v in config.items() if v is not None}, f, ensure_ascii=False)
        ours_kwargs = {k: v for k, v in kwargs.items() if k not in ("bos_token", "eos_token")}
        kwargs = {"chat_template": chat_template, **kwargs}
        rows = conversations(sum(map(ord, name)))
        lines = os.path.join(model, "conversations.jsonl")
        with open(lines, "w", encoding="utf-8") as f:
            f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
        env = dict(os.environ, ST_TEMPLATE_KWARGS=json.dumps(ours_kwargs), ST_TEMPLATE_DATE=DATE)
        ours = [json.loads(l) for l in subprocess.run([render_template, model, "jinja", lines], env=env, check=True,
                                                       capture_output=True, text=True).stdout.splitlines()]
        bad = cut_by_rule = refused = no_cut = 0
        for row, o in zip(rows, ours):
            try:
                prompt = tokenizer.apply_chat_template(row["messages"], tokenize=False, add_generation_prompt=True, **kwargs)
                whole = tokenizer.apply_chat_template(row["messages"] + [{"role": "assistant", "content": row["reply"]}],
                                                      tokenize=False, **kwargs)
                theirs = {"prompt": prompt, "whole": whole, "ids": tokenizer.encode(prompt, add_special_tokens=False)}
            except Exception as error:
                theirs = {"error": f"{type(error).__name__}: {error}", "raised": type(error).__name__ == "TemplateError"}
            if o.get("cut") and "error" not in theirs:
                # Renderings with no cut that is both the prompt the model sees and a prefix of
                # the conversation (test_jinja_chat.cpp): refused by name, counted apart.
                same = True
                no_cut += 1
            elif "error" in theirs or "error" in o:
                same = theirs.get("raised") == o.get("raised") and ("error" in theirs) == ("error" in o)
                refused += same
            elif theirs["whole"].startswith(theirs["prompt"]):
                same = (o["prompt"] == theirs["prompt"] and o["prompt_ids"] == theirs["ids"]
                        and o["completion"] == theirs["whole"][len(theirs["prompt"]):])
            else:
                cut_by_rule += 1
                same = o["prompt"] == theirs["prompt"] and o["prompt_ids"] == theirs["ids"]
            if not same:
                bad += 1
                if bad <= 2:
                    print(f"  {name}: conversation {rows.index(row)}\n    ours   {json.dumps(o, ensure_ascii=False)[:400]}"
                          f"\n    theirs {json.dumps(theirs, ensure_ascii=False)[:400]}")
        failed += bad > 0
        print(f"{name}: {len(rows) - bad} of {len(rows)} alike ({refused} refused alike, {cut_by_rule} cut after a "
              f"generation prompt the conversation does not write, {no_cut} without a cut, refused by name)")
finally:
    shutil.rmtree(work, ignore_errors=True)
print(f"{len(names) - failed} of {len(names)} templates render as transformers' apply_chat_template does")
sys.exit(1 if failed else 0)
