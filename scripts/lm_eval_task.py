#!/usr/bin/env python3
"""An lm-evaluation-harness task as shardtune task files (docs/evaluation.md, "From the harness").

    python3 scripts/lm_eval_task.py TASK OUT_DIR [--include-path DIR]

TASK is a task name the harness knows, or one its YAML in --include-path defines (a local task:
`dataset_path: json` over your files). The harness itself loads the task - its dataset,
`process_docs`, Jinja templates and `!function` hooks - and renders every document with its own
doc_to_text / doc_to_choice / doc_to_target; this writes what it rendered: OUT_DIR/<task>.jsonl
(one task file per filter pipeline of a generate_until task: <task>_<filter>.jsonl when there
are several) and, when the few-shot examples come from another split, OUT_DIR/<task>.fewshot.jsonl.
`shardtune eval --tasks OUT_DIR/<task>.jsonl` then computes what the harness computes for it.

YAML is not read by `shardtune eval` itself: a harness task is a Python program as much as a
file (templates, hooks, dataset loading), and only the harness reads it faithfully. What the
task files cannot say is refused here, naming the field: per-document descriptions, few-shot
samplers other than the default, `gen_prefix`, sampling, filters other than regex + take_first,
multiple references.

Needs the Python environment of the tests (scripts/install-deps.sh --with-test-python), or any
with lm_eval installed.
"""
import argparse
import json
import os
import sys


def refuse(task, field, why):
    raise SystemExit(f"lm_eval_task.py: task {task}: {field} {why}; shardtune's task files cannot express it "
                     "(docs/evaluation.md, \"Task files\")")


def as_index(task, target, choices):
    """A multiple-choice target as the index of the right choice, as the harness reads it."""
    if isinstance(target, bool) or isinstance(target, list):
        refuse(task, "doc_to_target", f"gives {target!r}: one index or choice per document is what is read")
    if isinstance(target, int):
        return target
    if target in choices:
        return choices.index(target)
    if str(target).strip().isdigit():
        return int(target)
    refuse(task, "doc_to_target", f"gives {target!r}, neither an index nor one of the choices {choices!r}")


def documents(task, config, docs):
    kind = config.output_type
    out = []
    for doc in docs:
        if kind == "multiple_choice":
            context, choices = task.doc_to_text(doc), task.doc_to_choice(doc)
            if not isinstance(context, str):
                refuse(config.task, "doc_to_text", "gives one context per choice (an index)")
            out.append({"context": context, "choices": list(choices),
                        "gold": as_index(config.task, task.doc_to_target(doc), list(choices))})
        elif kind == "loglikelihood_rolling":
            out.append({"text": task.doc_to_target(doc)})
        else:
            target = task.doc_to_target(doc)
            if isinstance(target, list):
                refuse(config.task, "doc_to_target", "gives several references")
            out.append({"context": task.doc_to_text(doc), "target": str(target)})
    return out


def filters(config):
    """The filter pipelines of a generate_until task: [(name, shardtune filter or None)]."""
    pipelines = config.filter_list or [{"name": "none", "filter": [{"function": "take_first"}]}]
    out = []
    for pipeline in pipelines:
        steps = [dict(step) for step in pipeline["filter"]]
        functions = [step["function"] for step in steps]
        if functions == ["take_first"]:
            out.append((pipeline["name"], None))
        elif functions == ["regex", "take_first"]:
            regex = steps[0]
            out.append((pipeline["name"], {"regex": regex.get("regex_pattern", r"#### (\-?[0-9\.\,]+)"),
                                           "group_select": regex.get("group_select", 0),
                                           "fallback": regex.get("fallback", "[invalid]")}))
        else:
            refuse(config.task, f"filter_list '{pipeline['name']}'", f"is {functions}, not regex then take_first")
    return out


def header(task, config, kind, fewshot_file):
    head = {"kind": kind, "name": config.task, "num_fewshot": config.num_fewshot or 0}
    if config.description:
        if "{{" in config.description:
            refuse(config.task, "description", "is a template rendered per document")
        head["description"] = config.description
    head["target_delimiter"] = config.target_delimiter
    head["fewshot_delimiter"] = config.fewshot_delimiter
    if fewshot_file and head["num_fewshot"] > 0:
        head["fewshot_file"] = fewshot_file
    if config.gen_prefix:
        refuse(config.task, "gen_prefix", "is set")
    if kind == "generate_until":
        generation = dict(config.generation_kwargs or {})
        if generation.get("do_sample") or (generation.get("temperature") or 0) > 0:
            refuse(config.task, "generation_kwargs", "samples (shardtune's tasks decode greedily)")
        until = generation.get("until")
        if until is not None:
            head["until"] = [until] if isinstance(until, str) else list(until)
        if "max_gen_toks" in generation:
            head["max_gen_toks"] = generation["max_gen_toks"]
        for metric in config.metric_list or []:
            if metric.get("metric") == "exact_match":
                head["exact_match"] = {"regexes_to_ignore": list(metric.get("regexes_to_ignore", [])),
                                       "ignore_case": bool(metric.get("ignore_case", False)),
                                       "ignore_punctuation": bool(metric.get("ignore_punctuation", False))}
    return head


def write(path, head, docs):
    with open(path, "w") as f:
        f.write(json.dumps({"task": head}) + "\n")
        for doc in docs:
            f.write(json.dumps(doc) + "\n")


def convert(name, out_dir, include_path):
    from lm_eval.tasks import TaskManager, get_task_dict
    task = get_task_dict([name], TaskManager(include_path=include_path)).get(name)
    if task is None or not hasattr(task, "config"):
        raise SystemExit(f"lm_eval_task.py: {name} is a group or unknown to the harness; name one of its tasks")
    config = task.config
    kind = config.output_type
    if kind not in ("multiple_choice", "loglikelihood_rolling", "generate_until"):
        refuse(name, "output_type", f"is {kind}")
    # The harness fills the few-shot config from the task's; only a value of its own is refused.
    fewshot = task.fewshot_cfg
    if fewshot.sampler != "default":
        refuse(name, "fewshot_config.sampler", f"is {fewshot.sampler!r}")
    for field in ("fewshot_indices", "samples", "process_docs"):
        if getattr(fewshot, field) is not None:
            refuse(name, f"fewshot_config.{field}", "is set")
    for field in ("doc_to_text", "doc_to_choice", "doc_to_target", "gen_prefix", "fewshot_delimiter",
                  "target_delimiter"):
        if getattr(fewshot, field) not in (None, getattr(config, field)):
            refuse(name, f"fewshot_config.{field}", "formats the examples otherwise than the documents")
    os.makedirs(out_dir, exist_ok=True)
    docs = documents(task, config, task.eval_docs)
    # The harness leaves the document out of its own examples only where the few-shot split is the
    # test split: shardtune's fewshot_file naming the task file itself does that.
    fewshot_file = None
    if (config.num_fewshot or 0) > 0:
        if fewshot.split is not None and fewshot.split == config.test_split:
            fewshot_file = "SELF"
        else:
            fewshot_file = f"{name}.fewshot.jsonl"
            write(os.path.join(out_dir, fewshot_file), header(task, config, kind, None),
                  documents(task, config, task.fewshot_docs()))
    written = []
    pipelines = filters(config) if kind == "generate_until" else [(None, None)]
    for filter_name, pipeline in pipelines:
        stem = name if len(pipelines) == 1 else f"{name}_{filter_name}"
        head = header(task, config, kind, f"{stem}.jsonl" if fewshot_file == "SELF" else fewshot_file)
        head["name"] = stem
        if pipeline:
            head["filter"] = pipeline
        path = os.path.join(out_dir, f"{stem}.jsonl")
        write(path, head, docs)
        written.append(path)
    print(f"lm_eval_task.py: {name} ({kind}, {len(docs)} documents, {config.num_fewshot or 0}-shot) -> "
          + ", ".join(written))
    return written


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("task")
    parser.add_argument("out_dir")
    parser.add_argument("--include-path", help="a folder of task YAMLs (the harness's --include_path)")
    a = parser.parse_args()
    convert(a.task, a.out_dir, a.include_path)


if __name__ == "__main__":
    sys.exit(main())
