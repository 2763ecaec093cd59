#!/usr/bin/env bash
# grpo_loss_test.sh <policy_gradient_outputs binary> <case>: the clipped policy-gradient loss of
# GRPO and its variants (train/policy_gradient_loss.h) against TRL 1.16's GRPOTrainer._compute_loss
# on the same per-token inputs (grpo_loss_inputs.py), in float64: each loss type, the KL term with
# and without bias correction, GSPO's sequence ratio, two-sided clipping, the entropy quantile; and
# RLOO's loss (leave_one_out_terms) against RLOOTrainer._compute_loss, its clip binding or not.
# TRL's results come from their record while the inputs and the peer are unchanged.
# shellcheck source=../e2e/harness.sh
source "$ST_SOURCE_DIR/tests/e2e/harness.sh"
# shellcheck source=peer_record.sh
source "$ST_SOURCE_DIR/tests/oracle/peer_record.sh"
inputs_peer_and_ours grpo_loss_inputs.py trl grpo_loss_peer.py float64
run --exit 0 python3 "$ST_SOURCE_DIR/tests/oracle/grpo_loss_compare.py" "$work/peer.json" "$work/ours.json"
echo "PASS: the GRPO and RLOO losses equal TRL's _compute_loss in every case"
