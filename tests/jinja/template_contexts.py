"""template_contexts.py SOURCE.md TEMPLATE_FILE_NAME OUT.jsonl: the variables each shared template
is rendered with in the parity test: its kwargs from SOURCE.md's table (bos/eos tokens, and for
the templates that need them a tools list, functions, datetime), over conversations of every
shape the chat templates meet in training data: system or none, one to five turns, with and
without the generation prompt, unicode, code, quotes, whitespace, think blocks, a tool call and
its result; add_generation_prompt both ways."""
import datetime
import json
import random
import re
import sys



WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the weather in a city.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "The city, e.g. Paris"},
        "unit": {"type": "string", "description": "celsius or fahrenheit", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city"]}}}
DATE = "2026-11-29"  # strftime_now's day on both sides


def fix_clock(chat_template_utils, date=DATE):
    """transformers' strftime_now reads datetime.now(): pinned to `date` at midnight."""
    fixed = datetime.datetime.strptime(date, "%Y-%m-%d")

    class FixedClock(datetime.datetime):
        @classmethod
        def now(cls, tz=None):
            return fixed

    chat_template_utils.datetime = FixedClock


def failure(error):
    """A rendering transformers refused, as render_jinja and render_template print theirs."""
    return {"error": f"{type(error).__name__}: {error}", "raised": type(error).__name__ == "TemplateError"}


def refused_alike(ours, theirs):
    """Both refused, the same way (the template's raise_exception, or another failure)."""
    return ("error" in theirs) == ("error" in ours) and theirs.get("raised") == ours.get("raised")


def kwargs_of(source_md, name):
    """The template's kwargs from SOURCE.md's table: bos/eos tokens, and a tools list where it needs one."""
    row = next(line for line in open(source_md, encoding="utf-8") if line.startswith(f"| `{name}` |"))
    cell = [c.strip() for c in re.split(r"(?<!\\)\|", row)[1:-1]][5]
    kwargs = {k: v.replace("\\|", "|") for k, v in re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', cell)}
    if "tools=[" in cell:
        kwargs["tools"] = [WEATHER_TOOL]
    return kwargs


def write_contexts(source_md, name, out_path):
    """Writes the variables of each rendering of template `name` to out_path, one JSON line each."""
    kwargs = kwargs_of(source_md, name)
    random.seed(sum(map(ord, name)))
    texts = ["Hi", "What is 2+2?", "Explain\nthis code:\n```py\nprint(1)\n```", "日本語で答えて", "Emoji 🤗 ok", "a  b\tc",
             "Sure.", "<b>bold</b>", "Line one\n\nLine two", "x" * 300, "Quotes \"'\" and \\ backslash", "  padded  ",
             "Привет, мир"]
    replies = texts + ["<think>\nLet me add.\n</think>\n\n4", "<think>a\n\nb</think>x\ny", "The answer is 4."]
    conversations = [
        ([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}], False),
        ([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"}], True),
        ([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"},
          {"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}], False),
    ]
    for i in range(40):
        messages = [{"role": "system", "content": random.choice(texts)}] if i % 2 else []
        for turn in range(1 + i % 4):
            messages.append({"role": "user", "content": random.choice(texts)})
            messages.append({"role": "assistant", "content": random.choice(replies)})
        generation_prompt = i % 3 == 0
        if generation_prompt:
            messages.append({"role": "user", "content": random.choice(texts)})
        conversations.append((messages, generation_prompt))
    # A tool call and its result, for the templates that render tools.
    tool_turns = [{"role": "user", "content": "Weather in Paris?"},
                  {"role": "assistant", "content": "", "tool_calls": [{"id": "call12345", "type": "function", "function": {
                      "name": "get_weather", "arguments": {"city": "Paris"}}}]},
                  {"role": "tool", "tool_call_id": "call12345", "name": "get_weather", "content": "18 C"},
                  {"role": "assistant", "content": "It is 18 C."}]
    conversations.append((tool_turns, False))
    with open(out_path, "w", encoding="utf-8") as out:
        for messages, generation_prompt in conversations:
            context = {"messages": messages, "tools": None, "documents": None, "add_generation_prompt": generation_prompt,
                   **kwargs}
            out.write(json.dumps(context, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    write_contexts(*sys.argv[1:4])
