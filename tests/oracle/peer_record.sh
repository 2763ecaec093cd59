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
