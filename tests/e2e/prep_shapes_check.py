"""prep_shapes_check.py DATASET_DIR KIND TRAIN_ON EXPECTED.json: the pairs `shardtune prep` wrote
equal an independent Llama 3 rendering of the expected conversations with the byte-level test
tokenizer of data_test.sh (ids 0-255 are bytes, then <|begin_of_text|>, <|start_header_id|>,
<|end_header_id|>, <|eot_id|>). EXPECTED is a list of {"messages": [[role, content], ...]} (SFT:
ending with the assistant) or with "chosen"/"rejected" replies (DPO). SFT loss masks: every
assistant reply (with its <|eot_id|>) carries loss with TRAIN_ON all, only the last with last.
"""
import glob
import json
import sys

import h5py

BOT, SH, EH, EOT = 256, 257, 258, 259


def text(s):
    return list(s.encode())


def header(role):
    return [SH] + text(role) + [EH] + text("\n\n")


def turn(role, content):
    return header(role) + text(content) + [EOT]


def prompt_ids(messages):
    ids = [BOT]
    for role, content in messages:
        ids += turn(role, content)
    return ids + header("assistant")


def sft_pair(messages, train_on):
    replies = [i for i, (role, _) in enumerate(messages) if role == "assistant"]
    trained = replies if train_on == "all" else replies[-1:]
    completion, mask = [], []
    for i in range(trained[0], len(messages)):
        role, content = messages[i]
        if i in trained and i != trained[0]:
            completion += header("assistant")
            mask += [0] * len(header("assistant"))
        ids = text(content) + [EOT] if i in trained else turn(role, content)
        completion += ids
        mask += [1 if i in trained else 0] * len(ids)
    return prompt_ids(messages[: trained[0]]), completion, mask


def read_pairs(directory, kind):
    pairs = []
    for path in sorted(glob.glob(directory + "/*.h5")):
        with h5py.File(path) as f:
            def column(name, i):
                offsets = f[(name if name != "completion_loss_mask" else "completion") + "_offsets"]
                return f[name][offsets[i]:offsets[i + 1]].tolist()
            for i in range(f.attrs["num_pairs"]):
                if kind == "dpo":
                    pairs.append((column("prompt", i), column("chosen", i), column("rejected", i)))
                else:
                    completion = column("completion", i)
                    mask = column("completion_loss_mask", i) if "completion_loss_mask" in f else [1] * len(completion)
                    pairs.append((column("prompt", i), completion, mask))
    return pairs


def main():
    directory, kind, train_on, expected_path = sys.argv[1:]
    expected = []
    for conversation in json.load(open(expected_path, encoding="utf-8")):
        messages = [tuple(m) for m in conversation["messages"]]
        if kind == "dpo":
            expected.append((prompt_ids(messages), text(conversation["chosen"]) + [EOT],
                             text(conversation["rejected"]) + [EOT]))
        else:
            expected.append(sft_pair(messages, train_on))
    got = read_pairs(directory, kind)
    if got != expected:
        for i, (g, e) in enumerate(zip(got, expected)):
            if g != e:
                print(f"pair {i}:\n  prep     {g}\n  expected {e}")
                break
        print(f"{len(got)} pairs from prep, {len(expected)} expected")
        sys.exit(1)
    masked = sum(1 for pair in got if kind == "sft" and 0 in pair[2])
    print(f"{len(got)} {kind} pairs equal the independent rendering ({masked} with masked turns)")


main()
