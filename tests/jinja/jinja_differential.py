"""jinja_differential.py RENDER_JINJA_CASES [COUNT] [SEED|fresh]: COUNT templates from
jinja_grammar.py (seed 0 unless given; `fresh`: one from the clock, printed so that a difference
can be rendered again) rendered by lib/jinja (render_jinja_cases) and by Jinja2 in
transformers' environment (the one apply_chat_template compiles with: sandboxed, trim_blocks,
lstrip_blocks, loop controls, its tojson). They must agree on each: the same text, or both
failing, raise_exception's failure alike. Prints every difference (up to 20, with the template)
and exits 1 on any. COUNT defaults to $ST_JINJA_CASES or 4000. The oracle tier runs seed 0; the
fuzz tier (fuzz_jinja_differential) a fresh seed each run; a long campaign more:
    ST_JINJA_CASES=200000 tests/jinja/run_oracle.sh jinja_differential.py build/tests/jinja/render_jinja_cases"""
import copy
import json
import os
import subprocess
import sys
import tempfile
import time

from jinja2.sandbox import ImmutableSandboxedEnvironment
from transformers.utils import chat_template_utils as ctu

import jinja_grammar

# lib/jinja's integers are int64 (lib/jinja/builtins.h): an operator whose integer result leaves
# it fails ("integer overflow") where Python's ints grow (8 ** (1 | center | count) is 8 ** 80).
# Jinja2 judges under the same bound: transformers' environment class intercepts the arithmetic
# operators (before its first compile, which decides what is intercepted) and fails the same way,
# so such a template must fail in both; so must a power whose result is complex in Python (a
# negative number to a fractional power), a type lib/jinja does not have. Every other result is
# Python's own.
INT64_MIN, INT64_MAX = -2 ** 63, 2 ** 63 - 1


def _lib_jinja_bound(result):
    if isinstance(result, int) and not isinstance(result, bool) and not INT64_MIN <= result <= INT64_MAX:
        raise OverflowError("integer overflow (int64)")
    if isinstance(result, complex):  # (-2) ** 1.5: lib/jinja has no complex type and fails there
        raise ValueError("complex result")
    return result


_binop, _unop = ImmutableSandboxedEnvironment.call_binop, ImmutableSandboxedEnvironment.call_unop
ImmutableSandboxedEnvironment.intercepted_binops = frozenset({"+", "-", "*", "//", "%", "**"})
ImmutableSandboxedEnvironment.intercepted_unops = frozenset({"-"})
ImmutableSandboxedEnvironment.call_binop = lambda self, context, op, a, b: _lib_jinja_bound(_binop(self, context, op, a, b))
ImmutableSandboxedEnvironment.call_unop = lambda self, context, op, a: _lib_jinja_bound(_unop(self, context, op, a))

render_cases = sys.argv[1]
count = int(sys.argv[2]) if len(sys.argv) > 2 else int(os.environ.get("ST_JINJA_CASES", "4000"))
seed = 0 if len(sys.argv) <= 3 else int(time.time()) if sys.argv[3] == "fresh" else int(sys.argv[3])
cases = jinja_grammar.cases(seed, count)


def jinja2_row(case):
    try:  # a copy each time: Jinja2's indent appends "\n" to a list given to it, sandbox or not
        return {"text": ctu._compile_jinja_template(case["template"]).render(**copy.deepcopy(case["variables"]))}
    except Exception as error:  # the template's own failure: compared by whether it was raise_exception's
        return {"error": f"{type(error).__name__}: {error}", "raised": type(error).__name__ == "TemplateError"}


started = time.time()
expected = [jinja2_row(case) for case in cases]
python_seconds = time.time() - started
with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as handle:
    for case in cases:
        handle.write(json.dumps(case, ensure_ascii=False) + "\n")
    path = handle.name
started = time.time()
try:
    output = subprocess.run([render_cases, path], check=True, capture_output=True, text=True).stdout
finally:
    os.unlink(path)
cpp_seconds = time.time() - started
actual = [json.loads(line) for line in output.splitlines()]
assert len(actual) == len(cases), f"render_jinja_cases printed {len(actual)} rows for {len(cases)} cases"

differences = []
for case, want, got in zip(cases, expected, actual):
    same = want.get("text") == got.get("text") if "text" in want else "error" in got and want["raised"] == got["raised"]
    if not same:
        differences.append((case["template"], want, got))
rendered = sum("text" in row for row in expected)
print(f"{count} generated templates (seed {seed}): {rendered} rendered and {count - rendered} failed in Jinja2; "
      f"{len(differences)} differ (Jinja2 {python_seconds:.1f} s, lib/jinja {cpp_seconds:.1f} s)")
for template, want, got in differences[:20]:
    print(f"\n--- template: {template!r}\n    Jinja2:    {want}\n    lib/jinja: {got}")
sys.exit(1 if differences else 0)
