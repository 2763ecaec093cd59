"""hf_chat_template.py MODEL_DIR [--template FILE] MODE CONVERSATIONS.jsonl OUTPUT.jsonl [MODE ...]: the
model's own Jinja chat_template (its tokenizer_config.json, or the file given) rendered by
transformers' apply_chat_template, as a user of transformers or TRL gets it; each MODE over its
conversations into its output (several in one run: transformers imports once, 2.6 s of CPU). One
JSON line per conversation:
  render: for {"messages", "reply"}: the prompt (with the generation prompt) and the whole
          conversation with the reply appended;
  turns:  for {"messages": [..., the assistant's last reply]}: multi-turn SFT as the template
          defines it: the whole rendering's ids (the model's tokenizer, no special tokens added),
          the loss mask over them (1 on each assistant reply, from where the template's generation
          prompt for that turn ends to where its rendering of the turn ends), and the same cut in
          text, `pieces`: [text, trained] runs that make up the whole rendering.
A template that writes an earlier reply otherwise than as the conversation's last (Qwen3: without
its reasoning, and without the empty think block enable_thinking false opens the last with) has
that turn cut as the whole conversation writes it: it ends where the next user turn begins, and
its header is the generation prompt without template options.
ST_TEMPLATE_ENABLE_THINKING=false passes enable_thinking=False (Qwen3's thinking off)."""
import json
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
from transformers import AutoTokenizer  # noqa: E402

model_dir, *arguments = sys.argv[1:] or [""]
chat_template = None
if arguments[:1] == ["--template"] and len(arguments) > 1:
    chat_template = open(arguments[1], encoding="utf-8").read()
    arguments = arguments[2:]
if not model_dir or not arguments or len(arguments) % 3:
    sys.exit("usage: hf_chat_template.py MODEL_DIR [--template FILE] MODE CONVERSATIONS.jsonl OUTPUT.jsonl [MODE ...]")
tokenizer = AutoTokenizer.from_pretrained(model_dir)
# Llama 3's template appends the generation prompt even without add_generation_prompt: a turn ends
# before it.
GENERATION_HEADER = "<|start_header_id|>assistant<|end_header_id|>\n\n"
OPTIONS = {"enable_thinking": False} if os.environ.get("ST_TEMPLATE_ENABLE_THINKING") == "false" else {}
SENTINEL = "\u2063sentinel\u2063"


def render(messages, add_generation_prompt, options=None):
    return tokenizer.apply_chat_template(messages, chat_template=chat_template, tokenize=False,
                                         add_generation_prompt=add_generation_prompt,
                                         **(OPTIONS if options is None else options))


def earlier_turn_end(messages):
    """The rendering up to the end of messages[-1], an assistant reply, as a conversation that goes
    on writes it: up to where a following user turn begins."""
    user = {"role": "user", "content": SENTINEL}
    alone = render([user], False)
    user_header = alone[:alone.index(SENTINEL)]
    went_on = render(messages + [user], False)
    at = went_on.index(SENTINEL) - len(user_header)
    if went_on[at:at + len(user_header)] != user_header:
        raise ValueError(f"no user turn header {json.dumps(user_header)} after the reply")
    return went_on[:at]


def encode(text):
    return tokenizer.encode(text, add_special_tokens=False)


def turns(messages):
    whole = render(messages, False)
    ids = encode(whole)
    mask = [0] * len(ids)

    def tokens_before(text):
        if not whole.startswith(text):
            raise ValueError(f"not a prefix of the conversation: {json.dumps(text)}")
        prefix = encode(text)
        if prefix != ids[:len(prefix)]:
            raise ValueError(f"ids of a prefix differ: {json.dumps(text)}")
        return len(prefix)

    pieces, cut = [], 0
    for k, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        end = render(messages[:k + 1], False)
        if end.endswith(GENERATION_HEADER) and not message["content"].endswith(GENERATION_HEADER):
            end = end[:-len(GENERATION_HEADER)]
        start = render(messages[:k], True)
        if k + 1 < len(messages) and not whole.startswith(end):
            end = earlier_turn_end(messages[:k + 1])
            if not whole.startswith(start):
                start = render(messages[:k], True, {})
        for t in range(tokens_before(start), tokens_before(end)):
            mask[t] = 1
        pieces += [[whole[cut:len(start)], 0], [whole[len(start):len(end)], 1]]
        cut = len(end)
    pieces.append([whole[cut:], 0])
    return {"ids": ids, "mask": mask, "pieces": pieces}


def rendered(mode, conversation):
    messages = conversation["messages"]
    if mode == "render":
        return {"prompt": render(messages, True),
                "whole": render(messages + [{"role": "assistant", "content": conversation["reply"]}], False)}
    if mode == "turns":
        return turns(messages)
    sys.exit(f"unknown mode {mode}: render or turns")


for mode, conversations, output in zip(arguments[0::3], arguments[1::3], arguments[2::3]):
    with open(output, "w", encoding="utf-8") as out:
        for line in open(conversations, encoding="utf-8"):
            if line.strip():
                out.write(json.dumps(rendered(mode, json.loads(line)), ensure_ascii=False) + "\n")
