"""`shardtune eval` against lm-evaluation-harness itself (its `hf` model, CPU, fp32) on one model and
the same documents: three local tasks, written both as shardtune task files and as harness task
YAMLs over local JSON files -
  st_mc   multiple_choice, 2-shot drawn from the task's own documents: acc, acc_norm (+ stderr)
  st_ppl  loglikelihood_rolling: word_perplexity, byte_perplexity, bits_per_byte
  st_gen  generate_until, 1-shot, until "\\n", a regex filter then exact_match (+ stderr)
Every metric and standard error must agree: accuracies and exact match equal, perplexities and
bits per byte to relative 1e-6 (past that the judge is the harness in float64, as for scores);
the few-shot contexts are the same (each st_mc document's context, from both logs).
The harness's YAMLs converted by scripts/lm_eval_task.py (the harness rendering its own
documents) must give the same task files' documents and the same shardtune results.
Prints one markdown row per metric (docs/fidelity.md); exits 1 on a difference.
The harness's results come from their record (tests/oracle/records/, peer_record.py), re-derived
by `lm_eval_check.py harness` when the model, this script or the pinned packages change.

usage: lm_eval_check.py SHARDTUNE MODEL_DIR WORK_DIR
       lm_eval_check.py harness MODEL_DIR OUT_EXACT.json OUT_FP32.json OUT_FLOAT64.json
"""
import json
import os
import subprocess
import sys

import lm_eval
from lm_eval.tasks import TaskManager

import peer_record
from exact_float64 import exact_float64
from float64_judge import no_farther_from_exact

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import lm_eval_task  # noqa: E402

TOLERANCE = 1e-6

# Questions a small instruct model answers partly right: capitals (mostly right) and products
# (mostly wrong), so the accuracies are neither 0 nor 1.
CAPITALS = [("France", "Paris"), ("Japan", "Tokyo"), ("Italy", "Rome"), ("Spain", "Madrid"), ("Germany", "Berlin"),
            ("Egypt", "Cairo"), ("Canada", "Ottawa"), ("Kenya", "Nairobi"), ("Peru", "Lima"), ("Norway", "Oslo"),
            ("Greece", "Athens"), ("Chile", "Santiago"), ("Cuba", "Havana"), ("Poland", "Warsaw"),
            ("Austria", "Vienna"), ("Ireland", "Dublin"), ("Portugal", "Lisbon"), ("Turkey", "Ankara")]
TEXTS = [
    "The quick brown fox jumps over the lazy dog. It is a sentence that uses every letter.",
    "Water boils at one hundred degrees Celsius at sea level, and freezes at zero.",
    "In 1969, astronauts landed on the Moon for the first time and walked on its surface.",
    "Photosynthesis turns light, water and carbon dioxide into sugar and oxygen in plants.",
    "A haiku has three lines of five, seven and five syllables; it often names a season.",
    "Café, naïve, façade: words borrowed from French keep their accents in careful English.",
]


def write_tasks(work):
    cities = [city for _, city in CAPITALS]
    mc, gen = [], []
    for i, (country, city) in enumerate(CAPITALS):
        choices = [city] + [cities[(i + k) % len(cities)] for k in (3, 7, 11)]
        order = [(i + k) % 4 for k in range(4)]
        shuffled = [choices[j] for j in order]
        mc.append({"context": f"Q: What is the capital of {country}?\nA:", "choices": shuffled, "gold": order.index(0)})
    # Products the model mostly gets wrong, with choices of unequal lengths (acc_norm differs).
    for i in range(18):
        a, b = 13 + 3 * i, 7 + (5 * i) % 13
        choices = [str(a * b), str(a * b + 10), str(a + b), str(a * b * 10 + 1)]
        order = [(i + k) % 4 for k in range(4)]
        mc.append({"context": f"Q: What is {a} times {b}?\nA:", "choices": [choices[j] for j in order],
                   "gold": order.index(0)})
    for a in range(2, 14):
        b = (a * 7) % 11 + 1
        gen.append({"context": f"Q: What is {a} plus {b}?\nA:", "target": str(a + b)})
    ppl = [{"text": text} for text in TEXTS]
    headers = {
        "st_mc": {"kind": "multiple_choice", "num_fewshot": 2, "fewshot_file": "st_mc.jsonl"},
        "st_ppl": {"kind": "loglikelihood_rolling"},
        "st_gen": {"kind": "generate_until", "num_fewshot": 1, "fewshot_file": "st_gen.jsonl", "until": ["\n"],
                   "max_gen_toks": 8, "filter": {"regex": "(-?[0-9]+)", "group_select": 0, "fallback": "[invalid]"}},
    }
    documents = {"st_mc": mc, "st_ppl": ppl, "st_gen": gen}
    for name, docs in documents.items():
        with open(os.path.join(work, name + ".jsonl"), "w") as f:
            f.write(json.dumps({"task": dict(headers[name], name=name)}) + "\n")
            for doc in docs:
                f.write(json.dumps(doc) + "\n")
        with open(os.path.join(work, name + ".json"), "w") as f:  # the harness's local dataset
            json.dump(docs, f)
    data = lambda name: (f"dataset_path: json\ndataset_kwargs:\n  data_files:\n    test: {work}/{name}.json\n"
                         f"test_split: test\nfewshot_split: test\n")
    mean = lambda metric: f"  - metric: {metric}\n    aggregation: mean\n    higher_is_better: true\n"
    yamls = {
        "st_mc": (f"task: st_mc\n{data('st_mc')}output_type: multiple_choice\nnum_fewshot: 2\n"
                  "doc_to_text: \"{{context}}\"\ndoc_to_choice: \"{{choices}}\"\ndoc_to_target: \"{{gold}}\"\n"
                  f"metric_list:\n{mean('acc')}{mean('acc_norm')}"),
        "st_ppl": (f"task: st_ppl\n{data('st_ppl')}output_type: loglikelihood_rolling\ndoc_to_text: \"\"\n"
                   "doc_to_target: \"{{text}}\"\nmetric_list:\n"
                   "  - metric: word_perplexity\n    aggregation: weighted_perplexity\n    higher_is_better: false\n"
                   "  - metric: byte_perplexity\n    aggregation: weighted_perplexity\n    higher_is_better: false\n"
                   "  - metric: bits_per_byte\n    aggregation: bits_per_byte\n    higher_is_better: false\n"),
        "st_gen": (f"task: st_gen\n{data('st_gen')}output_type: generate_until\nnum_fewshot: 1\n"
                   "doc_to_text: \"{{context}}\"\ndoc_to_target: \"{{target}}\"\n"
                   "generation_kwargs:\n  until: [\"\\n\"]\n  max_gen_toks: 8\n  do_sample: false\n"
                   "filter_list:\n  - name: strict\n    filter:\n      - function: regex\n"
                   "        regex_pattern: \"(-?[0-9]+)\"\n        group_select: 0\n      - function: take_first\n"
                   f"metric_list:\n{mean('exact_match')}"),
    }
    os.makedirs(os.path.join(work, "yaml"), exist_ok=True)
    for name, text in yamls.items():
        with open(os.path.join(work, "yaml", name + ".yaml"), "w") as f:
            f.write(text)


def harness(model_dir, work, dtype, tasks=("st_mc", "st_ppl", "st_gen")):
    return lm_eval.simple_evaluate(
        model="hf", model_args=f"pretrained={model_dir},dtype={dtype}", tasks=list(tasks),
        task_manager=TaskManager(include_path=os.path.join(work, "yaml")), device="cpu", batch_size=1,
        log_samples=True, random_seed=0, numpy_random_seed=1234, torch_random_seed=1234, fewshot_random_seed=1234)


def shardtune_eval(binary, model_dir, task_dir, out, samples=None):
    tasks = ",".join(os.path.join(task_dir, name + ".jsonl") for name in ["st_mc", "st_ppl", "st_gen"])
    extra = ["--log-samples", samples] if samples else []
    subprocess.run([binary, "eval", "--model", model_dir, "--tasks", tasks, "--output", out, "--device", "cpu",
                    "--overwrite"] + extra, check=True, stdout=subprocess.DEVNULL)
    return json.load(open(out))["results"]


def converted_agree(binary, model_dir, work, ours):
    """scripts/lm_eval_task.py on the harness's YAMLs: the same documents, the same results."""
    converted = os.path.join(work, "converted")
    for name in ["st_mc", "st_ppl", "st_gen"]:
        lm_eval_task.convert(name, converted, os.path.join(work, "yaml"))
    same_documents = all(
        [json.loads(line) for line in open(os.path.join(work, name + ".jsonl"))][1:] ==
        [json.loads(line) for line in open(os.path.join(converted, name + ".jsonl"))][1:]
        for name in ["st_mc", "st_ppl", "st_gen"])
    # A pipeline the task files cannot say is refused by name, not dropped.
    with open(os.path.join(work, "yaml", "st_gen.yaml")) as f:
        bad = f.read().replace("task: st_gen", "task: st_gen_lower").replace("- function: take_first",
                                                                              "- function: lowercase")
    os.makedirs(os.path.join(work, "bad_yaml"), exist_ok=True)
    with open(os.path.join(work, "bad_yaml", "st_gen_lower.yaml"), "w") as f:
        f.write(bad)
    try:
        lm_eval_task.convert("st_gen_lower", os.path.join(work, "refused"), os.path.join(work, "bad_yaml"))
        refused = False
    except SystemExit as error:
        refused = "filter_list 'strict'" in str(error) and "'lowercase'" in str(error)
        print(f"refused as it should be: {error}")
    results = shardtune_eval(binary, model_dir, converted, f"{work}/converted.json")
    same_results = all(results[task]["metrics"] == ours[task]["metrics"] for task in ours)
    print(f"scripts/lm_eval_task.py on the harness's YAMLs: documents {'equal' if same_documents else 'DIFFER'}, "
          f"shardtune eval results {'equal' if same_results else 'DIFFER'}")
    return same_documents and same_results and refused


PPL_KEYS = ["word_perplexity,none", "byte_perplexity,none", "bits_per_byte,none"]


def harness_peer(model_dir, out_exact, out_fp32, out_float64):
    """The peer's side, recorded by peer_record.py: the harness on its own copy of the tasks.
    out_exact: the accuracies, exact match and their standard errors, and each st_mc document's
    few-shot context (fp32 noise cannot move them); out_fp32 / out_float64: the perplexity task's
    metrics in fp32 and in float64 (the judge past the 1e-6 screen)."""
    import tempfile
    with tempfile.TemporaryDirectory() as work:
        write_tasks(work)
        theirs = harness(model_dir, work, "float32")
        with exact_float64():  # no float32 islands in the judge
            exact_run = harness(model_dir, work, "float64", tasks=["st_ppl"])
    exact = {task: theirs["results"][task] for task in ["st_mc", "st_gen"]}
    exact = {task: {k: v for k, v in metrics.items() if k != "alias"} for task, metrics in exact.items()}
    exact["st_mc_contexts"] = [sample["arguments"][0][0] for sample in
                               sorted(theirs["samples"]["st_mc"], key=lambda s: s["doc_id"])]
    exact["lm_eval"] = getattr(lm_eval, "__version__", "")
    ppl = lambda run: {k: v for k, v in run["results"]["st_ppl"].items() if k.split(",")[0].replace("_stderr", "") + ",none" in PPL_KEYS}
    for path, value in [(out_exact, exact), (out_fp32, ppl(theirs)), (out_float64, ppl(exact_run))]:
        with open(path, "w") as f:
            json.dump(value, f, indent=1, sort_keys=True)
            f.write("\n")


def recorded_harness(model_dir, work):
    """The harness's results through their record (peer_record.py)."""
    paths = [os.path.join(work, f"lm_eval.{name}.json") for name in ["exact", "fp32", "float64"]]
    peer_record.run_recorded("harness", os.path.dirname(work),
                             [(paths[0], "exact"), (paths[1], f"fp32={paths[2]}"), (paths[2], "float64")],
                             [sys.executable, os.path.abspath(__file__), "harness", model_dir, *paths])
    exact, fp32, float64 = (json.load(open(path)) for path in paths)
    results = {"st_mc": exact["st_mc"], "st_gen": exact["st_gen"], "st_ppl": fp32}
    return results, float64, exact["st_mc_contexts"], exact["lm_eval"]


def main():
    if sys.argv[1] == "harness":
        harness_peer(*sys.argv[2:6])
        return
    binary, model_dir, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    write_tasks(work)
    ours = shardtune_eval(binary, model_dir, work, f"{work}/ours.json", f"{work}/ours_samples.jsonl")
    theirs, exact_ppl, their_contexts, version = recorded_harness(model_dir, work)
    rows, bad = [], 0
    keys = {"st_mc": [("acc", "acc,none"), ("acc_norm", "acc_norm,none")],
            "st_ppl": [("word_perplexity", "word_perplexity,none"), ("byte_perplexity", "byte_perplexity,none"),
                       ("bits_per_byte", "bits_per_byte,none")],
            "st_gen": [("exact_match", "exact_match,strict")]}
    for task, pairs in keys.items():
        for ours_name, key in pairs:
            mine = ours[task]["metrics"][ours_name]
            value, stderr = theirs[task][key], theirs[task].get(key.replace(",", "_stderr,"))
            difference = abs(mine["value"] - value) / max(abs(value), 1e-12)
            verdict = "equal" if difference == 0 else f"rel {difference:.2g}"
            ok = difference <= TOLERANCE
            if not ok and task == "st_ppl":
                truth = exact_ppl[key]
                ok = no_farther_from_exact(abs(mine["value"] - truth), abs(value - truth), floor=TOLERANCE * abs(truth))
                verdict += f" (float64 {truth:.10g}: shardtune {'closer' if ok else 'farther'})"
            if isinstance(stderr, (int, float)) and mine.get("stderr") is not None:
                ok = ok and abs(mine["stderr"] - stderr) <= TOLERANCE * max(abs(stderr), 1e-12)
                verdict += f", stderr {mine['stderr']:.6g} / {stderr:.6g}"
            bad += not ok
            rows.append(f"| {task} | {ours_name} | {mine['value']:.10g} | {value:.10g} | {verdict} | "
                        f"{'ok' if ok else 'DIFFERS'} |")
    # The few-shot contexts: each multiple-choice document's whole context, from both logs.
    our_contexts = [json.loads(line)["context"] for line in open(f"{work}/ours_samples.jsonl")
                    if json.loads(line)["task"] == "st_mc"]
    same_contexts = sum(a.rstrip() == b.rstrip() for a, b in zip(our_contexts, their_contexts))
    bad += same_contexts != len(their_contexts) or len(our_contexts) != len(their_contexts)
    print("| task | metric | shardtune | lm-eval | difference | verdict |\n|---|---|---|---|---|---|")
    print("\n".join(rows))
    print(f"st_mc 2-shot contexts: {same_contexts} of {len(their_contexts)} equal; lm-eval {version}")
    bad += not converted_agree(binary, model_dir, work, ours)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
