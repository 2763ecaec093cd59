"""eval_fixtures.py OUT_DIR: a tiny byte-level Llama, its tokenizer, four task files and the
metrics lm-evaluation-harness's definitions give for them, computed here independently of
shardtune: contexts from Python's own random.Random(seed).sample, requests as the harness's HF
model class makes them, float64 log-probs from llama_reference.py, greedy decoding without a
cache, Python's re for the answer filter and word counts.

  model/            config.json, model.safetensors, tokenizer.json (ids 0-255 = bytes, 256-259 specials)
  mc.jsonl          multiple choice, 2-shot from its own documents, multi-byte UTF-8 choices
  mc_zero.jsonl     multiple choice, 0-shot: an empty context, trailing whitespace, a context cut to fit
  ppl.jsonl         loglikelihood_rolling, texts longer than --max-length (several windows)
  gen.jsonl         generate_until, 1-shot from gen_train.jsonl, stop strings, a regex filter, exact match
  expected.json     {task: {metric: {"value", "stderr"}}}
  expected_samples.jsonl  per document: "task", "doc" and the log-likelihoods or output

The lm_head rows of 16 ASCII tokens are large and in +/- pairs (one of a pair always scores >= 0),
the others small: greedy output stays printable text, every token keeps its own log-prob.
"""
import json
import math
import os
import random
import re
import statistics
import string
import sys

import torch

import llama_reference
import make_fixtures

MAX_LENGTH = 96
BOS, EOS = 256, 257
CONFIG = dict(make_fixtures.LLAMA, vocab_size=260, rope_scaling=None, bos_token_id=BOS, eos_token_id=EOS,
              max_position_embeddings=128)
OUTPUT_TOKENS = [ord(c) for c in "0123456789 #\nabc"]

MC = {"task": {"kind": "multiple_choice", "num_fewshot": 2, "fewshot_file": "mc.jsonl", "description": "Pick one.\n\n"}}
MC_DOCS = [
    {"context": "Q: caf\u00e9 or tea?\nA:", "choices": ["caf\u00e9", "tea", "\u65e5\u672c\u8336"], "gold": 0},
    {"context": "Q: 2+2?\nA:", "choices": ["4", "five", "\U0001F642"], "gold": 0},
    {"context": "Q: na\u00efve spelling?\nA:", "choices": ["naive", "na\u00efve"], "gold": 1},
    {"context": "Q: colour of sky?\nA:", "choices": ["blue", "gr\u00fcn", "\u7ea2"], "gold": 0},
    {"context": "Q: largest?\nA:", "choices": ["1", "10", "100", "1000"], "gold": 3},
    {"context": "Q: \u00bfqu\u00e9?\nA:", "choices": ["s\u00ed", "no"], "gold": 0},
    {"context": "Q: pick z\nA:", "choices": ["x", "y", "z"], "gold": 2},
]
MC_ZERO = {"task": {"name": "mc_zero", "kind": "multiple_choice", "target_delimiter": ""}}
MC_ZERO_DOCS = [
    {"context": "", "choices": ["alpha", "beta"], "gold": 1},
    {"context": "Answer: ", "choices": ["yes", "no", "\u00e9t\u00e9"], "gold": 2},
    {"context": "Long context " * 12 + "end:", "choices": [" one", " two"], "gold": 0},
]
PPL = {"task": {"kind": "loglikelihood_rolling"}}
PPL_DOCS = [
    {"text": "The quick brown fox jumps over the lazy dog. " * 4},
    {"text": " Leading space,\ttabs\u3000and ideographic space; caf\u00e9 \u65e5\u672c\u8a9e.\n\nNew paragraph here."},
    {"text": "short"},
    {"text": "\u00e9" * 70 + " end"},
]
GEN = {"task": {"kind": "generate_until", "num_fewshot": 1, "fewshot_file": "gen_train.jsonl", "until": ["\n\n", "a"],
                "max_gen_toks": 12, "filter": {"regex": "([0-9]+)", "group_select": 0, "fallback": "[none]"},
                "exact_match": {"regexes_to_ignore": [","], "ignore_case": True}}}
GEN_CONTEXTS = ["Q: 3 + 4 = ?\nA:", "Q: what is 12 * 2?\nA:", "Q: count to 3\nA:", "Q: 100 - 1?\nA:",
                "Q: " + "pad " * 30 + "9?\nA:", "Q: 0?\nA:"]
GEN_TRAIN = [{"context": "Q: 1 + 1?\nA:", "target": " 2"}, {"context": "Q: 5 - 5?\nA:", "target": " 0"},
             {"context": "Q: 6 / 2?\nA:", "target": " 3"}]


def tokenizer_files(directory, eos="</s>"):
    """A byte-level tokenizer: ids 0-255 the bytes (GPT-2's alphabet, no merges), 256-259 <s>, </s>
    and ChatML's markers (so the chat template is detected); BOS <s>, EOS `eos`."""
    printable = lambda b: ord("!") <= b <= ord("~") or 0xA1 <= b <= 0xAC or b >= 0xAE
    vocab, extra = {}, 256
    for b in range(256):
        vocab[chr(b if printable(b) else extra)] = b
        extra += 0 if printable(b) else 1
    added = [{"id": 256 + i, "content": t, "special": True} for i, t in enumerate(["<s>", "</s>", "<|im_start|>", "<|im_end|>"])]
    with open(os.path.join(directory, "tokenizer.json"), "w") as f:
        json.dump({"model": {"type": "BPE", "vocab": vocab, "merges": []}, "added_tokens": added,
                   "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True}}, f)
    with open(os.path.join(directory, "tokenizer_config.json"), "w") as f:
        json.dump({"bos_token": "<s>", "eos_token": eos}, f)


def encode(text):  # no merges: every byte is its own token
    return list(text.encode("utf-8"))


def harness_contexts(spec, docs, fewshot_docs, own):
    rnd = random.Random(spec.get("fewshot_seed", 1234))
    k = spec.get("num_fewshot", 0)
    target_delimiter, fewshot_delimiter = spec.get("target_delimiter", " "), spec.get("fewshot_delimiter", "\n\n")
    contexts = []
    for doc in docs:
        text = spec.get("description", "")
        if k:
            drawn = rnd.sample(fewshot_docs, k + 1 if own else k)
            for example in [x for x in drawn if x != doc][:k]:
                target = example["choices"][example["gold"]] if "choices" in example else example["target"]
                text += example["context"] + target_delimiter + target + fewshot_delimiter
        contexts.append(text + doc["context"])
    return contexts


def loglikelihood(weights, context, continuation):
    spaces = len(context) - len(context.rstrip())
    if spaces:
        continuation, context = context[-spaces:] + continuation, context[:-spaces]
    if context == "":
        prompt, completion = [BOS], encode(continuation)
    else:
        prompt = encode(context)
        completion = encode(context + continuation)[len(prompt):]
    prompt = prompt[-(MAX_LENGTH + 1 - len(completion)):]
    logps = llama_reference.token_logps(CONFIG, weights, prompt + completion)
    return sum(logps[len(prompt) - 1:])


def mean_stderr(values):
    return {"value": statistics.fmean(values),
            "stderr": statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else None}


def multiple_choice(name, spec, docs, fewshot_docs, own, weights, samples):
    per_doc = {"acc": [], "acc_norm": [], "acc_bytes": []}
    for d, (doc, context) in enumerate(zip(docs, harness_contexts(spec, docs, fewshot_docs, own))):
        lls = [loglikelihood(weights, context, spec.get("target_delimiter", " ") + c) for c in doc["choices"]]
        picks = {"acc": lls, "acc_norm": [ll / len(c) for ll, c in zip(lls, doc["choices"])],
                 "acc_bytes": [ll / len(c.encode("utf-8")) for ll, c in zip(lls, doc["choices"])]}
        for metric, scores in picks.items():
            ranked = sorted(scores, reverse=True)
            if len(ranked) > 1 and ranked[0] - ranked[1] < 1e-3:
                sys.exit("%s doc %d: %s near tie (%g); change the fixture" % (name, d, metric, ranked[0] - ranked[1]))
            per_doc[metric].append(1.0 if scores.index(max(scores)) == doc["gold"] else 0.0)
        samples.append({"task": name, "doc": d, "loglikelihoods": lls})
    return {metric: mean_stderr(values) for metric, values in per_doc.items()}


def rolling_windows(tokens):
    windows, first = [], min(MAX_LENGTH, len(tokens))
    windows.append(([BOS], tokens[:first]))
    predicted = first
    while predicted < len(tokens):
        length = min(len(tokens) - predicted, MAX_LENGTH)
        end = predicted + length
        windows.append((tokens[end - MAX_LENGTH - 1:predicted], tokens[predicted:end]))
        predicted = end
    return windows


def perplexity(name, docs, weights, samples):
    total = words = nbytes = ntokens = 0.0
    for d, doc in enumerate(docs):
        tokens = encode(doc["text"])
        ll = 0.0
        for context, predicted in rolling_windows(tokens):
            ll += sum(llama_reference.token_logps(CONFIG, weights, context + predicted)[len(context) - 1:])
        total += ll
        words += len(re.split(r"\s+", doc["text"]))
        nbytes += len(doc["text"].encode("utf-8"))
        ntokens += len(tokens)
        samples.append({"task": name, "doc": d, "loglikelihood": ll})
    return {"word_perplexity": {"value": math.exp(-total / words), "stderr": None},
            "byte_perplexity": {"value": math.exp(-total / nbytes), "stderr": None},
            "bits_per_byte": {"value": -total / nbytes / math.log(2), "stderr": None},
            "token_perplexity": {"value": math.exp(-total / ntokens), "stderr": None}}


def greedy_output(weights, context, spec):
    prompt = encode(context)[-(MAX_LENGTH - spec["max_gen_toks"]):] or [BOS]
    ids, gap = llama_reference.greedy_decode(CONFIG, weights, prompt, spec["max_gen_toks"])
    if gap < 1e-3:
        sys.exit("greedy decoding of %r has a near tie (%g); change the fixture" % (context, gap))
    text = bytes(i for i in ids if i < 256).decode("utf-8")
    for stop in spec["until"]:
        text = text.split(stop)[0]
    return text


def answer_filter(text, spec):
    found = re.findall(spec["filter"]["regex"], text)
    if not found:
        return spec["filter"]["fallback"]
    match = found[spec["filter"]["group_select"]]
    if isinstance(match, tuple):
        match = next((m for m in match if m), spec["filter"]["fallback"])
    return match.strip()


def normalised(text, options):
    for pattern in options["regexes_to_ignore"]:
        text = re.sub(pattern, "", text)
    return text.lower() if options["ignore_case"] else text


def main(out):
    os.makedirs(os.path.join(out, "model"), exist_ok=True)
    weights = make_fixtures.random_weights(CONFIG, 11, torch.float32)
    head = weights["lm_head.weight"] * 0.05
    half = len(OUTPUT_TOKENS) // 2
    for i, token in enumerate(OUTPUT_TOKENS):
        row = weights["lm_head.weight"][OUTPUT_TOKENS[i % half]] * 3.0
        head[token] = row if i < half else -row
    weights["lm_head.weight"] = head
    make_fixtures.write_checkpoint(os.path.join(out, "model"), CONFIG, weights, 1)
    tokenizer_files(os.path.join(out, "model"))

    def write_task(name, header, docs):
        with open(os.path.join(out, name), "w") as f:
            if header:
                f.write(json.dumps(header) + "\n")
            for doc in docs:
                f.write(json.dumps(doc) + "\n")

    samples, expected = [], {}
    write_task("mc.jsonl", MC, MC_DOCS)
    expected["mc"] = multiple_choice("mc", MC["task"], MC_DOCS, MC_DOCS, True, weights, samples)
    write_task("mc_zero.jsonl", MC_ZERO, MC_ZERO_DOCS)
    expected["mc_zero"] = multiple_choice("mc_zero", MC_ZERO["task"], MC_ZERO_DOCS, [], False, weights, samples)
    write_task("ppl.jsonl", PPL, PPL_DOCS)
    expected["ppl"] = perplexity("ppl", PPL_DOCS, weights, samples)

    spec = GEN["task"]
    # Targets (the few-shot answers) are fixed; each reference is the model's own answer for even
    # documents and one it did not give for odd ones, so exact match sees both outcomes.
    docs = [{"context": c, "target": " %d" % (7 * i)} for i, c in enumerate(GEN_CONTEXTS)]
    write_task("gen_train.jsonl", None, GEN_TRAIN)
    contexts = harness_contexts(spec, docs, GEN_TRAIN, False)
    matches = []
    for d, (doc, context) in enumerate(zip(docs, contexts)):
        output = greedy_output(weights, context, spec)
        filtered = answer_filter(output, spec)
        doc["answer"] = filtered.upper() if d % 2 == 0 else "no such answer"
        matches.append(1.0 if normalised(filtered, spec["exact_match"]) == normalised(doc["answer"], spec["exact_match"]) else 0.0)
        samples.append({"task": "gen", "doc": d, "output": output, "filtered": filtered})
    write_task("gen.jsonl", GEN, docs)
    expected["gen"] = {"exact_match": mean_stderr(matches)}

    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(expected, f, indent=2)
    with open(os.path.join(out, "expected_samples.jsonl"), "w") as f:
        for sample in samples:
            f.write(json.dumps(sample) + "\n")
    print("eval fixtures written to", out)


if __name__ == "__main__":
    main(sys.argv[1])
