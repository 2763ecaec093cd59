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
