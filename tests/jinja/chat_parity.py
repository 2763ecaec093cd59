"""chat_parity.py RENDER_TEMPLATE VOCABULARY_DIR TEMPLATES_DIR [NAME ...]: every chat template in
TEMPLATES_DIR (the 38 of SOURCE.md) as `--template jinja` renders it against transformers'
apply_chat_template, over the Llama 3 vocabulary with the template's own bos/eos tokens and
kwargs (SOURCE.md), on the template parity test's conversations (system or none, one to four
turns, unicode, code, quotes, think blocks): the prompt's text and ids equal; the completion
equals what the whole conversation's rendering writes after the prompt (where it starts with
it; reasoning templates whose generation prompt opens a think block are cut by the rule
test_jinja_chat.cpp checks); a conversation one refuses the other refuses the same way
(raise_exception or another failure)."""
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")
from transformers import AutoTokenizer  # noqa: E402
from transformers.utils import chat_template_utils as ctu  # noqa: E402

render_template, vocabulary, templates = sys.argv[1:4]
names = sys.argv[4:] or sorted(f for f in os.listdir(templates) if f.endswith(".jinja"))
source_md = os.path.join(templates, "SOURCE.md")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from template_contexts import DATE, failure, fix_clock, kwargs_of as source_kwargs, refused_alike  # noqa: E402

fix_clock(ctu)
texts = ["Hi", "What is 2+2?", "Explain\nthis code:\n```py\nprint(1)\n```", "日本語で答えて", "Emoji 🤗 ok", "a  b\tc",
         "Sure.", "<b>bold</b>", "Line one\n\nLine two", "x" * 300, "Quotes \"'\" and \\ backslash"]
thoughts = ["<think>\nLet me add.\n</think>\n\n4", "<think>a\n\nb</think>x\ny"]


def conversations(seed):
    random.seed(seed)
    out = []
    for i in range(40):
        messages = [{"role": "system", "content": random.choice(texts)}] if i % 2 else []
        for _ in range(random.randint(0, 3)):
            messages += [{"role": "user", "content": random.choice(texts)},
                         {"role": "assistant", "content": random.choice(texts + thoughts)}]
        messages.append({"role": "user", "content": random.choice(texts)})
        out.append({"messages": messages, "reply": random.choice(texts + thoughts)})
    return out


def kwargs_of(name):
    return source_kwargs(source_md, name)


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
    # Every template's conversations in one file, each line naming its template and kwargs:
    # one launch of render_template (loading the vocabulary takes it seconds) renders them all.
    batches, lines = [], os.path.join(work, "conversations.jsonl")
    with open(lines, "w", encoding="utf-8") as f:
        for name in names:
            kwargs = kwargs_of(name)
            rows = conversations(sum(map(ord, name)))
            batches.append((name, kwargs, rows))
            for r in rows:
                f.write(json.dumps({**r, "template_file": os.path.join(os.path.abspath(templates), name),
                                    "template_kwargs": kwargs}, ensure_ascii=False) + "\n")
    env = dict(os.environ, ST_TEMPLATE_DATE=DATE)
    rendered = iter([json.loads(l) for l in subprocess.run([render_template, os.path.join(work, "base"), "llama3", lines],
                                                            env=env, check=True, capture_output=True,
                                                            text=True).stdout.splitlines()])
    for name, kwargs, rows in batches:
        chat_template = open(os.path.join(templates, name), encoding="utf-8", newline="").read()
        kwargs = {"chat_template": chat_template, **kwargs}
        ours = [next(rendered) for _ in rows]
        bad = cut_by_rule = refused = no_cut = 0
        for row, o in zip(rows, ours):
            try:
                prompt = tokenizer.apply_chat_template(row["messages"], tokenize=False, add_generation_prompt=True, **kwargs)
                whole = tokenizer.apply_chat_template(row["messages"] + [{"role": "assistant", "content": row["reply"]}],
                                                      tokenize=False, **kwargs)
                theirs = {"prompt": prompt, "whole": whole, "ids": tokenizer.encode(prompt, add_special_tokens=False)}
            except Exception as error:
                theirs = failure(error)
            if o.get("cut") and "error" not in theirs:
                # Renderings with no cut that is both the prompt the model sees and a prefix of
                # the conversation (test_jinja_chat.cpp): refused by name, counted apart.
                same = True
                no_cut += 1
            elif "error" in theirs or "error" in o:
                same = refused_alike(o, theirs)
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
