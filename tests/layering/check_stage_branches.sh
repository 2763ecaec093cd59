#!/usr/bin/env bash
# check_stage_branches.sh SOURCE_DIR: the step contract (lib/train/objective.h) holds. Only the
# objectives and train.stage's enum table (objective_list.h) name a Stage value; everything else asks the
# Objective that objective_for(stage) returns, so a new objective touches no step code.
set -u
source_dir=$1
allowed='^(lib/train/objective\.cpp|lib/train/[a-z_]+_objective\.(h|cpp)|lib/train/objective_list\.h):'
cd "$source_dir" || exit 1
found=$(grep -rnE 'Stage::[a-z]' lib app --include='*.cpp' --include='*.h' | grep -vE "$allowed")
if [ -n "$found" ]; then
  echo "FAIL: a Stage value named outside the objectives; ask objective_for(stage) instead:"
  echo "$found"
  exit 1
fi
echo "ok: Stage values are named only in $(grep -rlE 'Stage::[a-z]' lib app --include='*.cpp' --include='*.h' | tr '\n' ' ')"
