"""check_cases.py CASES.json: each case of the interpreter's unit tests (tests/unit/jinja/cases.json)
rendered by transformers' own Jinja environment, so that every expected text and every expected
kind of failure is what a transformers user gets, not what we believe it is."""
import json
import sys

import jinja2
from transformers.utils import chat_template_utils as ctu

bad = 0
cases = json.load(open(sys.argv[1], encoding="utf-8"))
for i, case in enumerate(cases):
    try:
        compiled = ctu._cached_compile_jinja_template(case["template"])
    except jinja2.exceptions.TemplateSyntaxError as error:
        got = {"error": "syntax", "message": str(error)}
    else:
        try:
            got = {"text": compiled.render(**case["variables"])}
        except jinja2.exceptions.TemplateSyntaxError as error:
            got = {"error": "syntax", "message": str(error)}
        except Exception as error:
            raised = type(error) is jinja2.exceptions.TemplateError
            got = {"error": "raised" if raised else "failed", "message": f"{type(error).__name__}: {error}"}
    # transformers_error / transformers_text: a difference README.md states (an include refused
    # at parse time; a complex power failing)
    expected_kind = None if "transformers_text" in case else case.get("transformers_error", case.get("error"))
    expected_text = case.get("transformers_text", case.get("text"))
    if expected_kind != got.get("error") or (not expected_kind and expected_text != got["text"]):
        bad += 1
        print(f"case {i}: {json.dumps(case['template'])}\n  expected {json.dumps(expected_text if expected_kind is None else expected_kind)}\n"
              f"  transformers {json.dumps(got.get('text', got.get('message')))}")
print(f"{len(cases) - bad} of {len(cases)} cases render in transformers' environment as the unit tests expect")
sys.exit(1 if bad else 0)
