"""Inputs that a peer makes (tiny models transformers writes, a checkpoint bitsandbytes quantizes),
made once per content key and kept outside the clone (docs/testing.md, "Made inputs"):

usage: made_once.py --work DIR --output PATH... -- COMMAND...

The key is peer_record.py's (its format, the pinned tests/python/requirements.txt, the command with
each existing file or folder replaced by a hash of its content, a Python script with what it
imports from the test folders; the outputs by name), plus the script the command reads from its
standard input (`python - ...`). The outputs (files or folders) are kept under
$ST_MADE_CACHE/<key>/ (default ~/.cache/shardtune/made) with what the command printed:

- The key is kept: the outputs are copied into place and its output printed; the maker does not run.
- Otherwise the maker runs and what it made is kept for the next run (written aside, then renamed,
  so two tests making the same key at once keep one whole copy).
- ST_PEERS=1 (./scripts/test.sh --peers): the maker always runs, and what it makes now must equal,
  file for file and byte for byte, what is kept under its key (a maker that is not deterministic
  given its key cannot be kept), else this fails naming the first file that differs.
Exit status: the maker's when it fails, 3 when ST_PEERS=1 finds a kept copy that differs, else 0.
"""
import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile

import peer_record

CACHE = os.environ.get("ST_MADE_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "shardtune", "made")


def remove(path):
    if os.path.isdir(path):
        shutil.rmtree(path)
    elif os.path.exists(path):
        os.remove(path)


def copy_into_place(source, destination):
    remove(destination)
    if os.path.isdir(source):
        shutil.copytree(source, destination)
    else:
        shutil.copy2(source, destination)


def in_this_run(text):
    """Kept output with this run's folders for @work, @build and @src."""
    for root, name in peer_record.ROOTS:
        text = text.replace(name, root)
    return text


def tree_files(path):
    """{relative name: SHA-256} of a file or of every file in a folder."""
    if os.path.isdir(path):
        return peer_record.file_hashes(path)
    return {"": peer_record.sha256_file(path)} if os.path.exists(path) else {}


def first_difference(kept, fresh):
    for index, (old, new) in enumerate(zip(kept, fresh)):
        before, now = tree_files(old), tree_files(new)
        for name in sorted(set(before) | set(now)):
            if before.get(name) != now.get(name):
                return f"output {index + 1} ({os.path.basename(new)}){'/' + name if name else ''}"
    return None


def main():
    if "--" not in sys.argv:
        raise SystemExit(__doc__)
    split = sys.argv.index("--")
    parser = argparse.ArgumentParser(description="inputs a peer makes, made once per content key")
    parser.add_argument("--work", required=True)
    parser.add_argument("--output", action="append", default=[], required=True)
    args = parser.parse_args(sys.argv[1:split])
    command = sys.argv[split + 1:]
    work = os.path.abspath(args.work)
    # Hashing ignores the absolute paths inside input files (peer_record's roots), so a clone in
    # another folder, or another scratch folder, gets the same key.
    peer_record.ROOTS.extend(peer_record.roots(work))
    outputs = [os.path.abspath(path) for path in args.output]
    stdin_script = sys.stdin.read() if "-" in command[1:2] else None
    key, shown = peer_record.command_key(command, work, {path: None for path in outputs + args.output})
    if stdin_script is not None:
        key = hashlib.sha256(f"{key}\nstdin:{hashlib.sha256(stdin_script.encode()).hexdigest()}".encode()).hexdigest()
    kept = os.path.join(CACHE, key)
    kept_outputs = [os.path.join(kept, f"output{index}") for index in range(len(outputs))]
    checking = os.environ.get("ST_PEERS") == "1"

    if os.path.isdir(kept) and not checking:
        for source, destination in zip(kept_outputs, outputs):
            copy_into_place(source, destination)
        with open(os.path.join(kept, "printed.txt")) as f:
            sys.stdout.write(in_this_run(f.read()))
        print(f"made_once.py: kept ({key[:12]}; made by: {shown})")
        return 0

    for path in outputs:  # what the maker makes, nothing left from before
        remove(path)
    made = subprocess.run(command, input=stdin_script, stdout=subprocess.PIPE, text=True)
    sys.stdout.write(made.stdout)
    if made.returncode != 0:
        return made.returncode
    if os.path.isdir(kept):  # ST_PEERS=1: the maker must make what is kept
        problem = first_difference(kept_outputs, outputs)
        if problem:
            print(f"made_once.py: {shown}: {problem} differs from the copy kept under {kept}: the maker is not "
                  f"deterministic given its key, or the kept copy was changed (delete it to make it again)",
                  file=sys.stderr)
            return 3
        print(f"made_once.py: the maker reran and made what is kept ({key[:12]})")
        return 0
    os.makedirs(CACHE, exist_ok=True)
    aside = tempfile.mkdtemp(prefix=f".{key[:12]}-", dir=CACHE)
    for source, destination in zip(outputs, [os.path.join(aside, f"output{i}") for i in range(len(outputs))]):
        copy_into_place(source, destination)
    with open(os.path.join(aside, "printed.txt"), "w") as f:
        f.write(peer_record.normalised(made.stdout))
    with open(os.path.join(aside, "command.txt"), "w") as f:
        f.write(shown + "\n")
    try:
        os.rename(aside, kept)
    except OSError:  # another test kept the same key first
        shutil.rmtree(aside, ignore_errors=True)
    print(f"made_once.py: made and kept ({key[:12]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
