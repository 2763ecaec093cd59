"""jinja_parity.py RENDER_JINJA TEMPLATES_DIR [NAME ...]: each template (the 38 of SOURCE.md)
rendered by shardtune's interpreter (render_jinja) and by transformers' own environment, on the
variables template_contexts.py writes for it (44 conversations: system or none, one to four
turns, with and without the generation prompt, unicode, code, think blocks, a tool call and its
result): the same text and the same {% generation %} spans, or the same kind of refusal."""
import json
import os
import subprocess
import sys
import tempfile

from transformers.utils import chat_template_utils as ctu

render_jinja, templates = sys.argv[1:3]
names = sys.argv[3:] or sorted(f for f in os.listdir(templates) if f.endswith(".jinja"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from template_contexts import DATE, failure, fix_clock, refused_alike, write_contexts  # noqa: E402

fix_clock(ctu)
failed = 0
with tempfile.TemporaryDirectory(prefix="st_jinja_parity_") as work:
    for name in names:
        contexts = os.path.join(work, name + ".jsonl")
        write_contexts(os.path.join(templates, "SOURCE.md"), name, contexts)
        path = os.path.join(templates, name)
        ours = [json.loads(l) for l in subprocess.run([render_jinja, path, contexts, "--date", DATE], check=True,
                                                       capture_output=True, text=True).stdout.splitlines()]
        compiled = ctu._compile_jinja_template(open(path, encoding="utf-8", newline="").read())
        bad = refused = 0
        for i, line in enumerate(open(contexts, encoding="utf-8")):
            try:
                text, spans = ctu._render_with_assistant_indices(compiled_template=compiled, **json.loads(line))
                theirs = {"text": text, "generation": [list(s) for s in spans]}
            except Exception as error:
                theirs = failure(error)
            o = ours[i]
            if "error" in theirs or "error" in o:
                same = refused_alike(o, theirs)
                refused += same
            else:
                same = o["text"] == theirs["text"] and o["generation"] == theirs["generation"]
            if not same:
                bad += 1
                if bad <= 2:
                    print(f"  {name} context {i}:\n    ours   {json.dumps(o, ensure_ascii=False)[:300]}\n"
                          f"    theirs {json.dumps(theirs, ensure_ascii=False)[:300]}")
        failed += bad > 0
        print(f"{name}: {len(ours) - bad} of {len(ours)} alike ({refused} refused alike)")
print(f"{len(names) - failed} of {len(names)} templates render as transformers renders them")
sys.exit(1 if failed else 0)
