"""suite_cpu.py CTEST_LOG < dump-acct output: the CPU of a ctest run by entry, program and tier
(bench/suite_cpu.sh runs it). Each process record (acct v3: command, user and system time, run
time, pid, parent pid, start) is charged to the ctest entry whose process it descends from; an
entry's process is told by its run time, which the ctest log gives to 0.01 s. Pids are reused
over a run, so a parent is the record of that pid alive when the child started."""
import collections
import datetime
import re
import sys

TIERS = ("unit", "mpi", "e2e", "oracle", "cuda")
durations = {}
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    match = re.search(r"Test +#\d+: (\S+) .*?([0-9.]+) sec$", line.rstrip())
    if match:
        durations[match.group(1)] = float(match.group(2))

records = []
for line in sys.stdin:
    fields = [field.strip() for field in line.split("|")]
    if len(fields) < 15:
        continue
    records.append({
        "index": len(records), "command": fields[0], "cpu": (float(fields[2]) + float(fields[3])) / 100,
        "run": float(fields[4]) / 100, "pid": int(fields[9]), "parent": int(fields[10]),
        "start": datetime.datetime.strptime(fields[14], "%a %b %d %H:%M:%S %Y").timestamp()})

by_pid = collections.defaultdict(list)
for record in records:
    by_pid[record["pid"]].append(record)
children = collections.defaultdict(list)
for record in records:
    alive = [p for p in by_pid.get(record["parent"], []) if p["index"] != record["index"] and
             p["start"] - 1 <= record["start"] <= p["start"] + p["run"] + 1]
    if alive:
        parent = max(alive, key=lambda p: p["start"] if p["start"] <= record["start"] + 1 else -1)
        children[parent["index"]].append(record)

ctests = [r for r in records if r["command"] == "ctest"]
if not ctests:
    sys.exit("suite_cpu.py: no ctest process in the accounting records")
ctest = max(ctests, key=lambda r: r["run"])
during = [r for r in records if r["start"] >= ctest["start"]]


def descendants(root):
    seen, todo, found = set(), [root], []
    while todo:
        record = todo.pop()
        if record["index"] in seen:
            continue
        seen.add(record["index"])
        found.append(record)
        todo.extend(children.get(record["index"], []))
    return found


entries, unmatched = [], dict(durations)
for child in children[ctest["index"]]:
    processes = descendants(child)
    name = min(unmatched, key=lambda n: abs(unmatched[n] - child["run"]), default=None)
    if name is None or abs(unmatched[name] - child["run"]) > 0.6:
        name = f"(unnamed {child['command']})"
    else:
        del unmatched[name]
    entry_programs = collections.Counter()
    for process in processes:
        entry_programs[process["command"]] += process["cpu"]
    entries.append((sum(entry_programs.values()), child["run"], name, entry_programs))

total = sum(r["cpu"] for r in during)
print(f"suite_cpu: {total:.0f} s of CPU while ctest ran ({ctest['run']:.0f} s wall); "
      f"{sum(e[0] for e in entries):.0f} s inside {len(entries)} entries")
programs = collections.Counter()
counts = collections.Counter()
for record in during:
    programs[record["command"]] += record["cpu"]
    counts[record["command"]] += 1
print("by program (CPU s, processes):")
for command, cpu in programs.most_common(12):
    print(f"  {cpu:8.1f}  {counts[command]:6d}  {command}")
tiers = collections.Counter()
for cpu, _, name, _ in entries:
    tiers[next((t for t in TIERS if name.startswith(t + "_")), "other")] += cpu
print("by tier (CPU s): " + ", ".join(f"{tier} {cpu:.0f}" for tier, cpu in tiers.most_common()))
print("the 25 entries that used the most CPU (CPU s, wall s, entry, its top programs):")
for cpu, run, name, top in sorted(entries, key=lambda e: -e[0])[:25]:
    print(f"  {cpu:7.1f} {run:7.1f}  {name}  " + ", ".join(f"{c} {v:.0f}" for c, v in top.most_common(3)))
