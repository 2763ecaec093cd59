"""llamafactory_check.py: LlamaFactory's demo data as `shardtune prep` wrote it, against an
independent reading of the same files (LlamaFactory's documented meaning, Llama 3's chat format)
tokenized by another encoder (tokenizers.js, run by the caller between the two steps).

  render SHAPE KIND INPUT WORK   the expected texts of every record: WORK/texts.jsonl (one JSON
                                 string a line, for js_encode.mjs) and WORK/layout.json
  compare KIND DATASET_DIR WORK CUTOFF
                                 WORK/ids.jsonl (the texts' ids) assembled into pairs, fitted to
                                 CUTOFF as prep documents it, equal the pairs in DATASET_DIR

SHAPE: alpaca (instruction / input / output), sharegpt_ranking (conversations + chosen/rejected
messages), sharegpt_kto (messages with role/content tags and a boolean label, the kto_tag: the
final reply is the completion, labelled desirable or not), v1 (LlamaFactory's messages with typed content parts and loss_weight; DPO records are
chosen_messages / rejected_messages).
"""
import glob
import json
import sys

import h5py

ROLES = {"human": "user", "gpt": "assistant", "system": "system"}


def header(role):
    return f"<|start_header_id|>{role}<|end_header_id|>\n\n"


def prompt_text(messages):
    return "<|begin_of_text|>" + "".join(header(r) + c + "<|eot_id|>" for r, c in messages) + header("assistant")


def completion_text(reply):
    return reply + "<|eot_id|>"


def sft_spans(messages, trained):
    """(prompt, [(text, trained)]): the prompt up to the first trained reply, then each trained
    reply and the turns between (untrained); turns after the last trained reply are left out."""
    replies = [i for i, (role, _) in enumerate(messages) if role == "assistant" and trained[i]]
    prompt = prompt_text(messages[: replies[0]])
    spans = []
    for k, i in enumerate(replies):
        spans.append((completion_text(messages[i][1]), True))
        if k + 1 < len(replies):
            between = "".join(header(r) + c + "<|eot_id|>" for r, c in messages[i + 1: replies[k + 1]])
            spans.append((between + header("assistant"), False))
    return prompt, spans


def v1_messages(messages):
    out, trained = [], []
    for m in messages:
        out.append((m["role"], "".join(part["value"] for part in m["content"])))
        trained.append(m.get("loss_weight", 1.0 if m["role"] == "assistant" else 0.0) == 1.0)
    return out, trained


def records(path):
    with open(path, encoding="utf-8") as f:
        if path.endswith(".jsonl"):
            return [json.loads(line) for line in f if line.strip()]
        return json.load(f)


def expected_record(shape, kind, record):
    """DPO: (prompt, chosen, rejected) texts; SFT: (prompt, [(span, trained)])."""
    if shape == "alpaca":
        user = record["instruction"] + ("\n" + record["input"] if record.get("input") else "")
        return prompt_text([("user", user)]), [(completion_text(record["output"]), True)]
    if shape == "sharegpt_kto":
        messages = [(m["role"], m["content"]) for m in record["messages"]]
        assert messages[-1][0] == "assistant"
        return prompt_text(messages[:-1]), [(completion_text(messages[-1][1]), True)], bool(record["label"])
    if shape == "sharegpt_ranking":
        messages = [(ROLES[m["from"]], m["value"]) for m in record["conversations"]]
        return prompt_text(messages), completion_text(record["chosen"]["value"]), \
            completion_text(record["rejected"]["value"])
    if kind == "dpo":
        chosen, _ = v1_messages(record["chosen_messages"])
        rejected, _ = v1_messages(record["rejected_messages"])
        assert chosen[:-1] == rejected[:-1]
        return prompt_text(chosen[:-1]), completion_text(chosen[-1][1]), completion_text(rejected[-1][1])
    messages, trained = v1_messages(record["messages"])
    return sft_spans(messages, trained)


def render(shape, kind, path, work):
    texts, layout = [], []

    def index(text):
        texts.append(text)
        return len(texts) - 1

    for record in records(path):
        expected = expected_record(shape, kind, record)
        if kind == "dpo":
            layout.append([index(t) for t in expected])
        else:
            layout.append([index(expected[0]), [[index(t), trained] for t, trained in expected[1]], *expected[2:]])
    with open(work + "/texts.jsonl", "w", encoding="utf-8") as f:
        f.writelines(json.dumps(t, ensure_ascii=False) + "\n" for t in texts)
    json.dump(layout, open(work + "/layout.json", "w"))
    print(f"rendered {len(layout)} {kind} records of {path} ({len(texts)} texts)")


def fit(prompt, chosen, rejected, mask, cutoff):
    """prep's documented truncation (docs/data-format.md): LlamaFactory's infer_seqlen shares
    (processor_utils.py), the prompt keeping its end (>= 1 token), the responses their start."""
    longest = max(len(chosen), len(rejected))
    if len(prompt) + longest <= cutoff:
        return prompt, chosen, rejected, mask, False
    if longest * 2 < cutoff:
        most = cutoff
    elif len(prompt) * 2 < cutoff:
        most = cutoff - len(prompt)
    else:
        most = int(cutoff * (longest / (len(prompt) + longest)))
    keep = min(len(prompt), max(cutoff - min(most, longest), min(len(prompt), 1)))
    room = cutoff - keep
    return prompt[len(prompt) - keep:], chosen[:room], rejected[:room], mask[:room], True


def written_pairs(directory, kind):
    pairs = []
    for path in sorted(glob.glob(directory + "/*.h5")):
        with h5py.File(path) as f:
            def column(name, offsets, i):
                return f[name][f[offsets][i]:f[offsets][i + 1]].tolist()
            for i in range(f.attrs["num_pairs"]):
                prompt = column("prompt", "prompt_offsets", i)
                if kind == "dpo":
                    pairs.append((prompt, column("chosen", "chosen_offsets", i), column("rejected", "rejected_offsets", i)))
                    continue
                completion = column("completion", "completion_offsets", i)
                mask = column("completion_loss_mask", "completion_offsets", i) if "completion_loss_mask" in f \
                    else [1] * len(completion)
                pairs.append((prompt, completion, mask) + ((bool(f["label"][i]),) if kind == "kto" else ()))
    return pairs


def compare(kind, directory, work, cutoff):
    ids = [json.loads(line) for line in open(work + "/ids.jsonl", encoding="utf-8")]
    expected, truncated = [], 0
    for entry in json.load(open(work + "/layout.json")):
        if kind == "dpo":
            prompt, chosen, rejected = (ids[k] for k in entry)
            prompt, chosen, rejected, _, cut = fit(prompt, chosen, rejected, [], cutoff)
            expected.append((prompt, chosen, rejected))
        else:
            completion, mask = [], []
            for k, trained in entry[1]:
                completion += ids[k]
                mask += [1 if trained else 0] * len(ids[k])
            prompt, completion, _, mask, cut = fit(ids[entry[0]], completion, [], mask, cutoff)
            expected.append((prompt, completion, mask) + tuple(entry[2:]))
        truncated += cut
    got = written_pairs(directory, kind)
    same = sum(g == e for g, e in zip(got, expected))
    print(f"{same} of {len(expected)} pairs equal the independent rendering ({len(got)} written, "
          f"{truncated} truncated to {cutoff} tokens)")
    for i, (g, e) in enumerate(zip(got, expected)):
        if g != e:
            print(f"pair {i} differs:\n  got      {[x[:40] for x in g]}\n  expected {[x[:40] for x in e]}")
            break
    return same == len(expected) == len(got)


if __name__ == "__main__":
    if sys.argv[1] == "render":
        render(*sys.argv[2:6])
    else:
        sys.exit(0 if compare(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])) else 1)
