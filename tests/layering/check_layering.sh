#!/usr/bin/env bash
# check_layering.sh BUILD_DIR LAYER:HEADER ...: for each layer, its control probe (own header +
# a lower layer's) must build, and its upward probe (a higher layer's HEADER) must fail because
# HEADER is not on that layer's include path.
set -u
build=$1
shift
failures=0
for case in "$@"; do
  layer=${case%%:*}
  header=${case#*:}
  if ! out=$(cmake --build "$build" --target "layering_${layer}_control" 2>&1); then
    echo "FAIL $layer: the control probe (own and lower headers) does not build:"
    echo "$out" | tail -20
    failures=$((failures + 1))
    continue
  fi
  if out=$(cmake --build "$build" --target "layering_${layer}_upward" 2>&1); then
    echo "FAIL $layer: including $header (a higher layer) compiled; the layering is not enforced"
    failures=$((failures + 1))
  elif ! grep -q "${header}: No such file or directory" <<<"$out"; then
    echo "FAIL $layer: the upward probe failed for another reason than the missing include:"
    echo "$out" | tail -20
    failures=$((failures + 1))
  else
    echo "ok   $layer: #include \"$header\" is refused"
  fi
done
[ "$failures" -eq 0 ] || { echo "$failures layering check(s) failed"; exit 1; }
echo "all $# layers refuse wrong-way includes"
