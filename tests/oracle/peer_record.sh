# Sourced by the oracle scripts (after tests/e2e/harness.sh): a peer's run through its record
# (peer_record.py; docs/testing.md, "Peer records").
# recorded <name> [--output PATH[:KIND]]... -- <command...>: the command's outputs from
# tests/oracle/records/<test>/<case>/<name>.json where its key matches, else from running it (the
# record then refreshed). The record tool needs only the standard library.
recorded() {
  local name=$1
  shift
  "${ST_REFERENCE_PYTHON:-python3}" "$ST_SOURCE_DIR/tests/oracle/peer_record.py" "$ST_TEST_NAME/$name" --work "$work" "$@"
}
# made_once --output PATH... -- <command...>: inputs a peer makes (a tiny model, a quantized
# checkpoint), copied from the copy kept under their content key where there is one, else made
# and kept (made_once.py; docs/testing.md, "Made inputs").
made_once() {
  "${ST_REFERENCE_PYTHON:-python3}" "$ST_SOURCE_DIR/tests/oracle/made_once.py" --work "$work" "$@"
}
# inputs_peer_and_ours <inputs.py> <name> <peer.py> <kind>: the shape of the small oracles whose
# inputs a standard-library script writes: $work/inputs.json from tests/oracle/<inputs.py>, the
# peer's $work/peer.json (<kind> as --output takes it) from its record or from running
# tests/oracle/<peer.py> INPUTS OUT in $ST_ORACLE_PYTHON (skipped, 77, without it), and $bin's
# $work/ours.json from the same inputs.
inputs_peer_and_ours() {
  local here=$ST_SOURCE_DIR/tests/oracle python=${ST_ORACLE_PYTHON:-}
  [ -x "$python" ] || { echo "SKIP: no oracle python ($python)"; exit 77; }
  python3 "$here/$1" "$work/inputs.json" || fail "could not write the inputs ($1)"
  recorded "$2" --output "$work/peer.json:$4" -- "$python" "$here/$3" "$work/inputs.json" "$work/peer.json" \
    >"$work/peer.log" 2>&1 || fail "the peer ($3) failed: $(tail -5 "$work/peer.log")"
  grep "^peer_record.py:" "$work/peer.log"
  run --exit 0 "$bin" "$work/inputs.json" "$work/ours.json"
}
