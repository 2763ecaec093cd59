#!/usr/bin/env bash
# warpers_test.sh <warper_draws binary> <case>: sampling's warped distribution
# (model/logits_warpers.h: temperature, top_k, top_p, min_p, and all four in generate's order)
# against transformers' own processors for the same GenerationConfig (warpers_peer.py), and
# 100,000 seeded draws from it against transformers' distribution by chi-square
# (warpers_compare.py). transformers' results come from their record while the inputs and the
# peer are unchanged.
# shellcheck source=../e2e/harness.sh
source "$ST_SOURCE_DIR/tests/e2e/harness.sh"
# shellcheck source=peer_record.sh
source "$ST_SOURCE_DIR/tests/oracle/peer_record.sh"
inputs_peer_and_ours warpers_inputs.py transformers warpers_peer.py float64
run --exit 0 python3 "$ST_SOURCE_DIR/tests/oracle/warpers_compare.py" "$work/peer.json" "$work/ours.json" 100000
echo "PASS: every warper keeps transformers' tokens with its probabilities, and the draws fit them"
