"""jinja_reference.py TEMPLATE CONTEXTS.jsonl [--date YYYY-MM-DD]: the template rendered by
transformers' own Jinja environment (the one apply_chat_template uses: sandboxed, trim_blocks,
lstrip_blocks, loopcontrols, AssistantTracker, raise_exception, strftime_now, its tojson) once per
line of variables, printed as render_jinja prints it: {"text", "generation"} or {"error", "raised"}.
--date fixes strftime_now's clock at that day's midnight."""
import datetime
import json
import sys

from transformers.utils import chat_template_utils as ctu

template_path, contexts = sys.argv[1:3]
if len(sys.argv) > 4 and sys.argv[3] == "--date":
    fixed = datetime.datetime.strptime(sys.argv[4], "%Y-%m-%d")

    class FixedClock(datetime.datetime):
        @classmethod
        def now(cls, tz=None):
            return fixed

    datetime.datetime = FixedClock
    ctu.datetime = FixedClock
source = open(template_path, encoding="utf-8", newline="").read()
compiled = ctu._compile_jinja_template(source)
for line in open(contexts, encoding="utf-8"):
    if not line.strip():
        continue
    context = json.loads(line)
    try:
        text, indices = ctu._render_with_assistant_indices(compiled_template=compiled, **context)
        row = {"text": text, "generation": [list(pair) for pair in indices]}
    except Exception as error:  # the template's own failure, compared by kind
        row = {"error": f"{type(error).__name__}: {error}", "raised": type(error).__name__ == "TemplateError"}
    print(json.dumps(row, ensure_ascii=False))
