"""A peer's result, recorded and re-derived only when its inputs change (docs/testing.md, "Peer
records"): the oracle tests run shardtune live and compare it with what TRL, transformers, PEFT,
bitsandbytes or lm-eval produced for the same inputs, kept under tests/oracle/records/.

usage: peer_record.py NAME --work DIR [--output PATH[:KIND]]... -- COMMAND...

NAME      the record, a path under the records folder (tests/oracle/records/NAME.json)
--work    the test's scratch folder: in the command it reads as @work, so the key does not
          depend on where the test ran
--output  a file the command writes; KIND is how two runs of the peer may differ:
            exact          not at all (token ids, text, counts)
            float64        numbers stored to 12 significant digits and equal to them
            fp32=PATH      numbers within what the float64 judge allows (float64_judge.py): a
                           fresh run's value y' and the recorded y, with z the float64 output
                           PATH's number in the same place, pass where |y' - z| <= max(2|y - z|,
                           1e-7 max(|z|, 1)) and the same with y and y' swapped: the judge's
                           rule (shardtune no farther from float64 than 2x TRL's fp32) both ways
The key is a SHA-256 of what determines the outputs: this file's format version, the pinned
tests/python/requirements.txt, and the command, each argument that names an existing file or
folder replaced by a hash of its content (a Python script with the scripts it imports from
tests/oracle, tests/support and tests/reference), the rest as written, @work for the scratch
folder, @build and @src for the build and source folders (also inside input files of up to 16
MiB: a PEFT adapter_config.json names its base's path). Output paths are names, never inputs.

- The record's key equals the command's: its outputs are written in place; the peer does not run.
- Missing, or a stale key: the peer runs, the record is (re)written from its outputs, with the
  command that made it, and the tool says "record refreshed: commit it" (and appends the name to
  $ST_PEER_RECORDS_LOG, which test.sh lists at the end).
- ST_PEERS=1 (./scripts/test.sh --peers): the peer always runs; a record of the same key must hold
  what it produced, within KIND, or this fails naming the first number that differs.
- A record whose outputs no longer match the checksum it carries was edited by hand: refused.
  Delete it to rerun the peer.
- Variants: where an input is shardtune's own trained output, its bytes follow the machine's
  arithmetic (BLAS kernels), so another CPU makes another key. ST_PEER_RECORD_VARIANT=1 writes a
  refreshed record whose case already has one of another key beside it, as <name>~<key[:12]>.json,
  and every run takes the variant of its key where the case's own record is not of it. A refresh
  of the case's own record (its inputs changed) deletes its variants: their inputs changed too.
Exit status: the peer's when it fails, 3 for a record refused or contradicted, else 0.
"""
import argparse
import ast
import datetime
import glob
import hashlib
import json
import math
import os
import platform
import re
import subprocess
import sys
import time

from float64_judge import judged_ratio

FORMAT = "peer-record 1"
HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
REQUIREMENTS = os.path.join(SOURCE, "tests", "python", "requirements.txt")
# Where a script's own imports are found (the oracles' sys.path additions).
IMPORT_DIRS = [HERE, os.path.join(SOURCE, "tests", "support"), os.path.join(SOURCE, "tests", "reference")]
FLOAT64_DIGITS = 12
# A number in a peer's text output: JSON's, Python's repr, CSV's.
NUMBER = re.compile(r"-?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|-?(?:inf|Infinity)|NaN|nan")


class Refused(Exception):
    pass


# Folders whose absolute paths an input file may name (a PEFT adapter_config.json names its base
# model's path): read as @work, @build, @src inside small input files too, so that a clone in
# another folder gets the same keys. main sets the scratch folder; the build folder is the one
# holding the reference fixtures (ST_REFERENCE_DIR, set by ctest).
ROOTS = []
SMALL_FILE = 16 << 20


def roots(work):
    found = [(work, "@work"), (SOURCE, "@src")]
    if os.environ.get("ST_REFERENCE_DIR"):
        found.append((os.path.dirname(os.path.abspath(os.environ["ST_REFERENCE_DIR"])), "@build"))
    return sorted(found, key=lambda root: -len(root[0]))  # the longest first: a build folder inside the source


def normalised(text):
    for root, name in ROOTS:
        text = text.replace(root, name)
    return text


def sha256_file(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        if ROOTS and os.path.getsize(path) <= SMALL_FILE:
            data = f.read()
            for root, name in ROOTS:
                data = data.replace(root.encode(), name.encode())
            digest.update(data)
            return digest.hexdigest()
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def local_imports(path):
    """The .py files of IMPORT_DIRS that a script imports, by module name."""
    try:
        with open(path) as f:
            tree = ast.parse(f.read(), path)
    except (SyntaxError, UnicodeDecodeError):
        return []
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    found = []
    for name in sorted(names):
        for folder in [os.path.dirname(os.path.abspath(path))] + IMPORT_DIRS:
            candidate = os.path.join(folder, name + ".py")
            if os.path.isfile(candidate):
                found.append(candidate)
                break
    return found


def script_hash(path):
    """A Python script with everything it imports from the test folders, recursively."""
    seen, todo, parts = set(), [os.path.abspath(path)], []
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        parts.append(f"{os.path.basename(current)}:{sha256_file(current)}")
        todo.extend(local_imports(current))
    return hashlib.sha256("\n".join(sorted(parts)).encode()).hexdigest()


def file_hashes(path):
    """{name relative to the folder: SHA-256} of its files, in a fixed order (folders sorted)."""
    found = {}
    for root, dirs, files in os.walk(path):
        dirs.sort()
        for name in sorted(files):
            full = os.path.join(root, name)
            found[os.path.relpath(full, path)] = sha256_file(full)
    return found


def folder_hash(path):
    parts = [f"{name}:{digest}" for name, digest in file_hashes(path).items()]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def argument_key(argument, work, outputs):
    """What an argument contributes to the key, and how the record's command shows it."""
    shown = normalised(argument)
    if argument in outputs:
        return f"output:{shown}", shown
    if os.path.isfile(argument):
        kind = "script" if argument.endswith(".py") else "file"
        digest = script_hash(argument) if kind == "script" else sha256_file(argument)
        return f"{kind}:{digest}", shown
    if os.path.isdir(argument):
        return f"folder:{folder_hash(argument)}", shown
    # An option with a path after '=' (--adapter=DIR) is not used by the oracles: written as is.
    return f"text:{shown}", shown


def command_key(command, work, outputs):
    parts = [FORMAT, f"requirements:{sha256_file(REQUIREMENTS)}", f"program:{os.path.basename(command[0])}"]
    shown = [os.path.basename(command[0])]
    for argument in command[1:]:
        part, text = argument_key(argument, work, outputs)
        parts.append(part)
        shown.append(text)
    return hashlib.sha256("\n".join(parts).encode()).hexdigest(), " ".join(shown)


def round_float64(text):
    """Every non-integer number to FLOAT64_DIGITS significant digits (the digits a float64 record
    holds: far below the fp32 noise its judge weighs, above any last-bit difference of a rerun)."""

    def rounded(match):
        token = match.group(0)
        if re.fullmatch(r"-?\d+", token):
            return token
        value = float(token)
        return token if not math.isfinite(value) else format(value, f".{FLOAT64_DIGITS}g")

    return NUMBER.sub(rounded, text)


# A variant record: <name><VARIANT><the first 12 hex digits of its key>.json beside <name>.json.
VARIANT = "~"


def outputs_checksum(outputs):
    text = json.dumps(outputs, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def read_record(path):
    with open(path) as f:
        record = json.load(f)
    if record.get("format") != FORMAT:
        raise Refused(f"{path}: format {record.get('format')!r}, this tool writes {FORMAT!r}; delete it to rerun the peer")
    if outputs_checksum(record["outputs"]) != record.get("outputs_sha256"):
        raise Refused(f"{path}: its outputs do not match the checksum it carries (edited by hand?); a record is "
                      f"written by the peer's run only: delete it to rerun the peer")
    return record


def split_numbers(text):
    """The text without its numbers (the skeleton two runs must share) and the numbers."""
    return NUMBER.sub("#", text), NUMBER.findall(text)


def compare_fp32(name, recorded, fresh, judge):
    skeleton, old = split_numbers(recorded)
    fresh_skeleton, new = split_numbers(fresh)
    judge_skeleton, exact = split_numbers(judge)
    if skeleton != fresh_skeleton or skeleton != judge_skeleton:
        return f"{name}: the text around the numbers differs from the record's (or its float64 judge's)"
    for index, (y, y_new, z) in enumerate(zip(old, new, exact)):
        if y == y_new:
            continue
        if re.fullmatch(r"-?\d+", y) or not all(math.isfinite(float(v)) for v in (y, y_new, z)):
            return f"{name}: number {index}: recorded {y}, the peer now {y_new}"
        y, y_new, z = float(y), float(y_new), float(z)
        floor = 1e-7 * max(abs(z), 1.0)
        # Both ways: each fp32 run as close to float64 as the judge lets shardtune be of the other.
        if max(judged_ratio(abs(y_new - z), abs(y - z), floor), judged_ratio(abs(y - z), abs(y_new - z), floor)) > 1.0:
            return (f"{name}: number {index}: recorded {y!r}, the peer now {y_new!r}, float64 {z!r}: past what "
                    f"the float64 judge allows")
    return None


def machine():
    """Where the record was made: the CPU's model name (its arithmetic is what a rerun may differ by)."""
    try:
        with open("/proc/cpuinfo") as f:
            names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
    except OSError:
        names = []
    return f"{platform.machine()}, {names[0] if names else 'CPU unknown'}, {len(names) or '?'} cores"


def stored_text(path, kind):
    with open(path) as f:
        text = f.read()
    return round_float64(text) if kind == "float64" else text


def run_recorded(name, scratch, outputs, command):
    """For the Python oracles (the shell's is `recorded` in peer_record.sh): COMMAND's outputs
    through the record ST_TEST_NAME/NAME. outputs: [(path, kind)], kind as --output takes it."""
    test = os.environ.get("ST_TEST_NAME", "oracle")
    specs = [f"--output={path}:{kind}" for path, kind in outputs]
    subprocess.run([sys.executable, os.path.abspath(__file__), f"{test}/{name}", "--work", scratch, *specs, "--",
                    *command], check=True)


def main():
    if "--" not in sys.argv:
        raise SystemExit(__doc__)
    split = sys.argv.index("--")
    parser = argparse.ArgumentParser(description="a peer's recorded result")
    parser.add_argument("name")
    parser.add_argument("--work", required=True)
    parser.add_argument("--output", action="append", default=[])
    args = parser.parse_args(sys.argv[1:split])
    command = sys.argv[split + 1:]
    work = os.path.abspath(args.work)
    ROOTS.extend(roots(work))
    outputs = {}  # path -> (kind, judge path)
    for spec in args.output:
        path, _, kind = spec.partition(":")
        kind = kind or "exact"
        judge = None
        if kind.startswith("fp32="):
            kind, judge = "fp32", kind[len("fp32="):]
        if kind not in ("exact", "float64", "fp32"):
            raise SystemExit(f"peer_record.py: --output {spec}: the kind is exact, float64 or fp32=PATH")
        outputs[path] = (kind, judge)
    records = os.environ.get("ST_PEER_RECORDS") or os.path.join(HERE, "records")
    key, shown = command_key(command, work, outputs)
    names = {path: normalised(path) for path in outputs}
    checking = os.environ.get("ST_PEERS") == "1"

    # The record of this key: the case's own, else its variant of this key (another machine's
    # arithmetic, where an input is shardtune's own trained output).
    record_path = os.path.join(records, args.name + ".json")
    variant_path = os.path.join(records, f"{args.name}{VARIANT}{key[:12]}.json")
    try:
        record = read_record(record_path) if os.path.exists(record_path) else None
        if (record is None or record["key"] != key) and os.path.exists(variant_path):
            record_path, record = variant_path, read_record(variant_path)
    except Refused as refused:
        print(f"peer_record.py: {refused}", file=sys.stderr)
        return 3
    why = "missing" if record is None else "its inputs changed"
    if record is not None and record["key"] != key and os.environ.get("ST_PEER_RECORD_VARIANT") == "1":
        # kept beside the case's own record, not over it
        record_path, record, why = variant_path, None, "a variant of another key beside the case's record"
    if record is not None and record["key"] == key and not checking:
        for path, name in names.items():
            with open(path, "w") as f:
                f.write("\n".join(record["outputs"][name]["lines"]))
        print(f"peer_record.py: {args.name}: recorded ({key[:12]}; the peer's command: {record['command']})")
        return 0

    for path in outputs:
        if os.path.exists(path):
            os.remove(path)
    started = time.time()
    status = subprocess.call(command)
    seconds = time.time() - started
    if status != 0:
        return status
    fresh = {}
    for path, (kind, judge) in outputs.items():
        text = stored_text(path, kind)
        with open(path, "w") as f:  # the test reads what the record holds, fresh or recorded
            f.write(text)
        fresh[names[path]] = {"kind": kind, "lines": text.split("\n")}
        if kind == "fp32":
            fresh[names[path]]["judge"] = normalised(judge)

    if record is not None and record["key"] == key:  # ST_PEERS=1: the peer must still produce it
        for name, output in fresh.items():
            old, new = "\n".join(record["outputs"][name]["lines"]), "\n".join(output["lines"])
            if output["kind"] == "fp32":
                judge = "\n".join(record["outputs"][output["judge"]]["lines"])
                problem = compare_fp32(name, old, new, judge)
            else:
                problem = None if old == new else f"{name}: differs from the record ({output['kind']})"
            if problem:
                print(f"peer_record.py: {args.name}: the record is not what the peer produces now: {problem}",
                      file=sys.stderr)
                return 3
        print(f"peer_record.py: {args.name}: the peer reran ({seconds:.1f} s) and its record holds")
        return 0

    record = {
        "format": FORMAT,
        "name": args.name,
        "key": key,
        "command": shown,
        "made_by": "tests/oracle/peer_record.py (the peer's own run; never edited by hand)",
        "made": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "machine": machine(),
        "peer_seconds": round(seconds, 1),
        "outputs": fresh,
    }
    record["outputs_sha256"] = outputs_checksum(fresh)
    os.makedirs(os.path.dirname(record_path), exist_ok=True)
    temporary = f"{record_path}.{os.getpid()}.tmp"
    with open(temporary, "w") as f:
        json.dump(record, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(temporary, record_path)
    if record_path != variant_path:  # the case's own inputs changed: its variants' did too
        for stale in glob.glob(os.path.join(records, glob.escape(args.name) + VARIANT + "*.json")):
            os.remove(stale)
    print(f"peer_record.py: {args.name}: record refreshed ({why}; the peer took {seconds:.1f} s): commit it")
    log = os.environ.get("ST_PEER_RECORDS_LOG")
    if log:
        with open(log, "a") as f:
            f.write(f"{os.path.relpath(record_path, SOURCE)}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
