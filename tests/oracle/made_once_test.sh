#!/usr/bin/env bash
# made_once_test.sh <unused> <case>: inputs a peer makes, kept under their content key
# (tests/oracle/made_once.py), with a fake maker that counts its runs:
# - kept: the first run makes and keeps (files and folders, what it printed; nothing the output
#   folder held before); the next copies them
#   into place without running the maker, printing what it printed with this run's folders;
# - key: a changed input file, a changed argument, a changed maker script or a changed script on
#   the standard input (`python - ...`) is another key: made again; the output paths are names only;
# - peers_check: ST_PEERS=1 runs the maker and passes where it makes what is kept, and fails (3),
#   naming the file, where the kept copy differs (a maker that is not deterministic, or a changed
#   copy); a failing maker keeps nothing and its exit status is the tool's.
# shellcheck source=../e2e/harness.sh
source "$ST_SOURCE_DIR/tests/e2e/harness.sh"
python=${ST_REFERENCE_PYTHON:-python3}
export ST_MADE_CACHE=$work/kept
unset ST_PEERS
cat >"$work/maker.py" <<'PY'
import os, sys
source, folder, single = sys.argv[1:4]
with open(os.environ["MAKER_RUNS"], "a") as f:
    f.write("ran\n")
if os.environ.get("MAKER_FAILS"):
    sys.exit(5)
os.makedirs(os.path.join(folder, "sub"), exist_ok=True)
text = open(source).read() + os.environ.get("MAKER_NOISE", "")
open(os.path.join(folder, "sub", "weights.txt"), "w").write(text)
open(single, "w").write(text.upper())
print(f"made {folder}")
PY
echo "tiny model" >"$work/input.txt"
export MAKER_RUNS=$work/runs
# make_model [maker arguments...]: the fake maker through made_once.py.
make_model() {
  "$python" "$ST_SOURCE_DIR/tests/oracle/made_once.py" --work "$work" --output "$work/model" --output "$work/one.txt" \
    -- "$python" "$work/maker.py" "$work/input.txt" "$work/model" "$work/one.txt" "$@"
}
runs() { wc -l <"$MAKER_RUNS" 2>/dev/null || echo 0; }
kept_copies() { find "$ST_MADE_CACHE" -mindepth 1 -maxdepth 1 -type d ! -name '.*' | wc -l; }

case "$case_name" in
  kept)
    mkdir -p "$work/model" && echo earlier >"$work/model/earlier.txt"  # not the maker's: not kept
    run --exit 0 make_model
    expect_output "made and kept"
    [ "$(runs)" = 1 ] || fail "the maker ran $(runs) times"
    [ ! -e "$work/model/earlier.txt" ] || fail "an output folder's earlier file was left beside what the maker made"
    rm -rf "$work/model" "$work/one.txt"
    mkdir -p "$work/model" && echo stale >"$work/model/stale.txt"  # replaced, not merged
    run --exit 0 make_model
    expect_output "made_once.py: kept \([0-9a-f]{12}; made by: $(basename "$python") @work/maker.py @work/input.txt @work/model @work/one.txt\)"
    expect_output "^made $work/model$"
    [ "$(runs)" = 1 ] || fail "the maker ran again although its inputs did not change"
    [ "$(cat "$work/model/sub/weights.txt")" = "tiny model" ] || fail "the kept folder was not copied into place"
    [ "$(cat "$work/one.txt")" = "TINY MODEL" ] || fail "the kept file was not copied into place"
    [ ! -e "$work/model/stale.txt" ] || fail "the output folder kept a file of its own"
    [ "$(kept_copies)" = 1 ] || fail "$(kept_copies) copies kept"
    ;;
  key)
    run --exit 0 make_model
    echo "other model" >"$work/input.txt"
    run --exit 0 make_model
    expect_output "made and kept"
    [ "$(cat "$work/model/sub/weights.txt")" = "other model" ] || fail "a changed input was not made again"
    run --exit 0 make_model --extra
    expect_output "made and kept"
    echo "# another maker" >>"$work/maker.py"
    run --exit 0 make_model
    expect_output "made and kept"
    [ "$(runs)" = 4 ] || fail "the maker ran $(runs) times, expected 4 (input, argument, script changed)"
    run --exit 0 make_model
    expect_output "made_once.py: kept"
    # The script on the standard input is part of the key.
    stdin_make() {
      "$python" "$ST_SOURCE_DIR/tests/oracle/made_once.py" --work "$work" --output "$work/model" --output "$work/one.txt" \
        -- "$python" - "$work/input.txt" "$work/model" "$work/one.txt"
    }
    run --exit 0 stdin_make <"$work/maker.py"
    expect_output "made and kept"
    run --exit 0 stdin_make <"$work/maker.py"
    expect_output "made_once.py: kept"
    { cat "$work/maker.py"; echo "# changed"; } >"$work/changed.py"
    run --exit 0 stdin_make <"$work/changed.py"
    expect_output "made and kept"
    [ "$(runs)" = 6 ] || fail "the maker ran $(runs) times, expected 6 (two stdin scripts)"
    # Another scratch folder: the same key (outputs and inputs are names and contents).
    other=$(mktemp -d /tmp/st_e2e_XXXXXX)
    cp "$work/input.txt" "$work/maker.py" "$other/"
    out=$("$python" "$ST_SOURCE_DIR/tests/oracle/made_once.py" --work "$other" --output "$other/model" \
      --output "$other/one.txt" -- "$python" "$other/maker.py" "$other/input.txt" "$other/model" "$other/one.txt" 2>&1)
    rc=$?
    rm -rf "$other"
    [ $rc = 0 ] && grep -q "made_once.py: kept" <<<"$out" || fail "another scratch folder got another key: $out"
    ;;
  peers_check)
    run --exit 0 make_model
    ST_PEERS=1 run --exit 0 make_model
    expect_output "the maker reran and made what is kept"
    [ "$(runs)" = 2 ] || fail "ST_PEERS=1 did not run the maker"
    MAKER_NOISE=x ST_PEERS=1 run --exit 3 make_model
    expect_output "output 1 \(model\)/sub/weights.txt differs from the copy kept under $ST_MADE_CACHE/[0-9a-f]{64}: the maker is not deterministic"
    kept=$(find "$ST_MADE_CACHE" -mindepth 1 -maxdepth 1 -type d ! -name '.*')
    echo changed >"$kept/output1"
    ST_PEERS=1 run --exit 3 make_model
    expect_output "output 2 \(one.txt\) differs from the copy kept"
    rm -rf "$ST_MADE_CACHE"
    MAKER_FAILS=1 run --exit 5 make_model
    [ ! -d "$ST_MADE_CACHE" ] || [ "$(kept_copies)" = 0 ] || fail "a failing maker's outputs were kept"
    ;;
  *) fail "unknown case" ;;
esac
echo "PASS [$case_name]"
