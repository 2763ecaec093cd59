"""tensorboard_check.py <run dir> <tensorboard_event.proto>: reads the run's TensorBoard event
files back with code independent of shardtune's writer - the python protobuf package on the
same .proto (compiled here by protoc), CRC-32C from the crc32c package, and TensorBoard's own
reader where it is installed - and checks them against metrics.jsonl and config.resolved.ini:
- every record is framed with correct masked CRC-32Cs and parses as an Event;
- every number of every metrics.jsonl record is a scalar at its step, equal as float32, and
  there is no other scalar and no (tag, step) twice (a resumed run appends without duplicates);
- the newest "config" text is the resolved config.
"""
import glob
import importlib
import json
import os
import struct
import subprocess
import sys
import tempfile

import crc32c


def masked(data):
    crc = crc32c.crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def records(path):
    data = open(path, "rb").read()
    at = 0
    while at < len(data):
        header = data[at:at + 8]
        (length,) = struct.unpack("<Q", header)
        (length_crc,) = struct.unpack("<I", data[at + 8:at + 12])
        assert length_crc == masked(header), f"{path}: bad length CRC at byte {at}"
        event = data[at + 12:at + 12 + length]
        (event_crc,) = struct.unpack("<I", data[at + 12 + length:at + 16 + length])
        assert len(event) == length and event_crc == masked(event), f"{path}: bad event CRC at byte {at}"
        yield event
        at += 16 + length


def flatten(record, prefix=""):
    for key, value in record.items():
        if isinstance(value, dict):
            yield from flatten(value, prefix + key + "/")
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and key != "step":
            yield prefix + key, value


def float32(value):
    return struct.unpack("<f", struct.pack("<f", value))[0]


def main():
    run, proto = sys.argv[1], sys.argv[2]
    out = tempfile.mkdtemp()
    subprocess.run(["protoc", f"--python_out={out}", f"-I{os.path.dirname(proto)}", proto], check=True)
    sys.path.insert(0, out)
    pb = importlib.import_module(os.path.basename(proto)[:-len(".proto")] + "_pb2")

    files = sorted(glob.glob(os.path.join(run, "tensorboard", "*tfevents*")))
    assert files, f"no event files in {run}/tensorboard"
    scalars, texts, versions = {}, [], 0
    for path in files:
        for raw in records(path):
            event = pb.Event()
            event.ParseFromString(raw)
            if event.WhichOneof("what") == "file_version":
                versions += 1
                assert event.file_version == "brain.Event:2", event.file_version
                continue
            for value in event.summary.value:
                if value.WhichOneof("value") == "simple_value":
                    key = (value.tag, event.step)
                    assert key not in scalars, f"scalar {key} twice in {run}/tensorboard"
                    scalars[key] = value.simple_value
                else:
                    assert value.metadata.plugin_data.plugin_name == "text" and value.tensor.dtype == 7, value
                    texts.append((event.step, value.tag, value.tensor.string_val[0].decode()))
    assert versions == len(files), f"{versions} file_version events in {len(files)} files"

    expected = {}
    for line in open(os.path.join(run, "metrics.jsonl")):
        record = json.loads(line)
        if "step" not in record:
            continue
        for tag, value in flatten(record):
            key = (tag, record["step"])
            assert key not in expected, f"metrics.jsonl holds {key} twice"
            expected[key] = value
    missing = sorted(set(expected) - set(scalars))
    extra = sorted(set(scalars) - set(expected))
    assert not missing, f"{len(missing)} metrics.jsonl values not in TensorBoard, e.g. {missing[:3]}"
    assert not extra, f"{len(extra)} TensorBoard scalars not in metrics.jsonl, e.g. {extra[:3]}"
    wrong = [k for k, v in expected.items() if float32(v) != scalars[k] and not (v != v and scalars[k] != scalars[k])]
    assert not wrong, f"{len(wrong)} values differ, e.g. {wrong[0]}: {expected[wrong[0]]} vs {scalars[wrong[0]]}"

    configs = sorted((step, text) for step, tag, text in texts if tag == "config")
    assert configs, "no config text"
    shown = "".join(line[4:] + "\n" for line in configs[-1][1].splitlines())
    resolved = open(os.path.join(run, "config.resolved.ini")).read()
    assert shown == resolved, "the newest config text is not config.resolved.ini"

    checked = "protobuf + crc32c"
    try:  # TensorBoard's own reader, where the package is installed
        from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
        count = sum(1 for path in files for _ in EventFileLoader(path).Load())
        assert count == sum(1 for path in files for _ in records(path)), "TensorBoard reads another event count"
        checked += " + tensorboard's EventFileLoader"
    except ImportError:
        pass
    steps = sorted({step for _, step in scalars})
    print(f"tensorboard: {len(files)} file(s), {len(scalars)} scalars over {len(steps)} steps "
          f"({steps[0]}..{steps[-1]}) equal metrics.jsonl, config text at steps {[s for s, _ in configs]} ({checked})")


if __name__ == "__main__":
    main()
