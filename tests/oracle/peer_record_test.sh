#!/usr/bin/env bash
# peer_record_test.sh <unused> <case>: the peer records (tests/oracle/peer_record.py) with a fake
# peer whose fp32 noise the test sets, and the records the repository holds:
# - reused: a missing record runs the peer once and says "record refreshed: commit it"; the next
#   run writes the same outputs from the record without running the peer;
# - stale: an input file changed (or the command) reruns the peer and replaces the record;
# - edited_fails: a number changed by hand in a record (the fake peer's, and a copy of a real TRL
#   record) is refused, naming the record; one whose checksum was forged too passes a plain run
#   but not ST_PEERS=1, which reruns the peer;
# - deleted_reruns: a deleted record reruns the peer, and the test passes with the same outputs;
# - peers_noise: ST_PEERS=1 accepts a fresh fp32 run within what the float64 judge allows and
#   refuses one past it, and a float64 record must hold to its 12 digits;
# - peer_fails: a peer that fails writes no record and its exit status is the tool's;
# - variant: with ST_PEER_RECORD_VARIANT=1 another key's record is written beside the case's own
#   (<name>~<key[:12]>.json), which stays; each key then reads its own record without a rerun;
#   without it, a stale key still replaces the case's own record, and its variants go;
# - records_intact: every record under tests/oracle/records/ carries its format, the command that
#   made it and outputs that match its checksum.
# shellcheck source=../e2e/harness.sh
source "$ST_SOURCE_DIR/tests/e2e/harness.sh"
tool=$ST_SOURCE_DIR/tests/oracle/peer_record.py
python=${ST_REFERENCE_PYTHON:-python3}
export ST_PEER_RECORDS=$work/records
unset ST_PEERS ST_PEER_RECORDS_LOG  # the fake peer's records are no repository's
cat >"$work/peer.py" <<'PY'
import json, os, sys
source, out32, out64 = sys.argv[1:4]
value = float(open(source).read())
with open(os.environ["PEER_RUNS"], "a") as f:
    f.write("ran\n")
noise = float(os.environ.get("PEER_NOISE", "0"))
with open(out32, "w") as f:
    f.write(json.dumps({"step": 1, "loss": value + 1e-7 + noise}) + "\n")
with open(out64, "w") as f:
    f.write(json.dumps({"step": 1, "loss": value + float(os.environ.get("PEER_FLOAT64_NOISE", "0"))}) + "\n")
PY
echo 0.693147180559945 >"$work/input.txt"
export PEER_RUNS=$work/runs
# peer [name]: the fake peer through its record.
peer() {
  "$python" "$tool" "${1:-fake/case}" --work "$work" --output "$work/a.jsonl:fp32=$work/b.jsonl" \
    --output "$work/b.jsonl:float64" -- "$python" "$work/peer.py" "$work/input.txt" "$work/a.jsonl" "$work/b.jsonl"
}
runs() { wc -l <"$PEER_RUNS" 2>/dev/null || echo 0; }
record=$work/records/fake/case.json

case "$case_name" in
  reused)
    run --exit 0 peer
    expect_output "record refreshed \(missing; .*\): commit it"
    [ "$(runs)" = 1 ] || fail "the peer ran $(runs) times"
    grep -qF "\"command\": \"$(basename "$python") @work/peer.py @work/input.txt @work/a.jsonl @work/b.jsonl\"" "$record" ||
      fail "the record does not carry its command: $(grep command "$record")"
    cp "$work/a.jsonl" "$work/a.first"
    rm "$work/a.jsonl" "$work/b.jsonl"
    run --exit 0 peer
    expect_output "fake/case: recorded"
    [ "$(runs)" = 1 ] || fail "the peer ran again although its inputs did not change"
    cmp "$work/a.jsonl" "$work/a.first" || fail "the recorded output differs from the peer's"
    ;;
  stale)
    run --exit 0 peer
    key=$(grep '"key"' "$record")
    echo 0.5 >"$work/input.txt"
    run --exit 0 peer
    expect_output "record refreshed \(its inputs changed; .*\): commit it"
    [ "$(runs)" = 2 ] || fail "a changed input did not rerun the peer"
    [ "$(grep '"key"' "$record")" != "$key" ] || fail "the key did not change with the input"
    grep -q '"loss": 0.5' "$work/b.jsonl" || fail "the outputs are not the new run's"
    ;;
  edited_fails)
    run --exit 0 peer
    sed -i -E 's/(loss\\": 0\.69314)7/\18/' "$record"
    grep -q 'loss\\": 0.693148' "$record" || fail "the edit did not take"
    run --exit 3 peer
    expect_output "fake/case.json: its outputs do not match the checksum it carries \(edited by hand\?\)"
    [ "$(runs)" = 1 ] || fail "the peer ran over an edited record"
    # A real record of TRL's, one loss changed by hand.
    real=$(find "$ST_SOURCE_DIR/tests/oracle/records/trl_test" -name '*.json' | sort | head -1)
    [ -n "$real" ] || fail "no TRL record under tests/oracle/records/trl_test"
    name=${real#"$ST_SOURCE_DIR/tests/oracle/records/"}
    mkdir -p "$(dirname "$work/records/$name")"
    "$python" - "$real" "$work/records/$name" <<'PY' || fail "could not edit the real record"
import re, sys
text = open(sys.argv[1]).read()
edited, count = re.subn(r'(\\"loss\\": -?\d+\.\d)(\d)', lambda m: m.group(1) + str((int(m.group(2)) + 1) % 10), text, count=1)
assert count == 1, "no loss in the record"
open(sys.argv[2], "w").write(edited)
PY
    run --exit 3 "$python" "$tool" "${name%.json}" --work "$work" --output "$work/x" -- true
    expect_output "its outputs do not match the checksum it carries"
    # The checksum forged as well: a plain run cannot tell, a run of the peers can.
    rm -rf "$work/records"
    run --exit 0 peer
    "$python" - "$record" <<'PY' || fail "could not forge the record"
import json, sys
sys.path.insert(0, __import__("os").environ["ST_SOURCE_DIR"] + "/tests/oracle")
import peer_record
record = json.load(open(sys.argv[1]))
lines = record["outputs"]["@work/a.jsonl"]["lines"]
lines[0] = lines[0].replace("0.69314", "0.69324")
record["outputs_sha256"] = peer_record.outputs_checksum(record["outputs"])
json.dump(record, open(sys.argv[1], "w"), indent=1, sort_keys=True)
PY
    run --exit 0 peer
    expect_output "fake/case: recorded"
    ST_PEERS=1 run --exit 3 peer
    expect_output "the record is not what the peer produces now: @work/a.jsonl: number 1: recorded 0.6932"
    ;;
  deleted_reruns)
    run --exit 0 peer
    cp "$work/a.jsonl" "$work/a.first"
    rm "$record"
    run --exit 0 peer
    expect_output "record refreshed \(missing"
    [ "$(runs)" = 2 ] || fail "a deleted record did not rerun the peer"
    cmp "$work/a.jsonl" "$work/a.first" || fail "the rerun peer's outputs differ"
    [ -f "$record" ] || fail "no record written again"
    ;;
  peers_noise)
    run --exit 0 peer
    # The fp32 value is 1e-7 from float64; the judge allows a fresh run 2e-7 from it.
    PEER_NOISE=5e-8 ST_PEERS=1 run --exit 0 peer
    expect_output "the peer reran .* and its record holds"
    PEER_NOISE=4e-7 ST_PEERS=1 run --exit 3 peer
    expect_output "past what the float64 judge allows"
    PEER_FLOAT64_NOISE=1e-10 ST_PEERS=1 run --exit 3 peer
    expect_output "@work/b.jsonl: differs from the record \(float64\)"
    PEER_FLOAT64_NOISE=1e-14 ST_PEERS=1 run --exit 0 peer
    [ "$(runs)" = 5 ] || fail "ST_PEERS=1 did not rerun the peer each time"
    ;;
  peer_fails)
    run --exit 7 "$python" "$tool" fake/failing --work "$work" --output "$work/x:exact" -- sh -c 'echo partial >"$0"; exit 7' "$work/x"
    [ ! -e "$work/records/fake/failing.json" ] || fail "a failed peer wrote a record"
    ;;
  variant)
    run --exit 0 peer
    own=$(grep '"key"' "$record")
    echo 0.5 >"$work/input.txt"  # another machine's input: another key
    ST_PEER_RECORD_VARIANT=1 run --exit 0 peer
    expect_output "record refreshed \(a variant of another key beside the case's record; .*\): commit it"
    [ "$(grep '"key"' "$record")" = "$own" ] || fail "the variant replaced the case's own record"
    variant=$(find "$work/records/fake" -name 'case~*.json')
    [ "$(echo "$variant" | wc -l)" = 1 ] && [ -n "$variant" ] || fail "no one variant beside the record: $variant"
    grep -qF "$(basename "$variant" .json | cut -d~ -f2)" "$variant" || fail "the variant is not named by its key"
    run --exit 0 peer
    expect_output "fake/case: recorded"
    grep -q '"loss": 0.5' "$work/b.jsonl" || fail "the variant's outputs were not read"
    echo 0.693147180559945 >"$work/input.txt"
    run --exit 0 peer
    expect_output "fake/case: recorded"
    grep -q '"loss": 0.6931471805' "$work/b.jsonl" || fail "the case's own outputs were not read"
    [ "$(runs)" = 2 ] || fail "the peer ran $(runs) times, not once per key"
    echo 0.25 >"$work/input.txt"  # without the variable: a stale key replaces the case's own record
    run --exit 0 peer
    [ "$(grep '"key"' "$record")" != "$own" ] || fail "a stale key did not replace the case's own record"
    [ ! -e "$variant" ] || fail "the case's own inputs changed, and its variant stayed"
    ;;
  records_intact)
    "$python" - "$ST_SOURCE_DIR/tests/oracle/records" <<'PY' || fail "a record is not as the peer wrote it"
import glob, sys
sys.path.insert(0, __import__("os").environ["ST_SOURCE_DIR"] + "/tests/oracle")
import peer_record
paths = sorted(glob.glob(sys.argv[1] + "/**/*.json", recursive=True))
assert paths, "no records"
for path in paths:
    record = peer_record.read_record(path)  # raises on a format or checksum that does not hold
    assert record["command"] and record["key"] and record["made_by"].startswith("tests/oracle/peer_record.py"), path
print(f"{len(paths)} records intact")
PY
    ;;
  *) fail "unknown case" ;;
esac
echo "PASS [$case_name]"
