#!/usr/bin/env bash
# check_footprints.sh SOURCE_DIR: what one objective or one model family costs stays what
# docs/architecture.md measured. The code (comments aside) that names KTO, Qwen3, the reward
# model or its score head lives only in the files that declare them on the contracts; anything
# else asks the Objective, the example schema or the family row, so the next objective or family
# writes as few files.
set -u
source_dir=$1
cd "$source_dir" || exit 1
status=0
# check NAME PATTERN ALLOWED_FILE...
check() {
  local name=$1 pattern=$2
  shift 2
  local found=() file
  while IFS= read -r file; do
    if sed -e 's://.*$::' -e 's:^\s*#.*$::' "$file" | grep -qE "$pattern"; then found+=("$file"); fi
  done < <(find lib app cuda -type f \( -name '*.h' -o -name '*.cpp' -o -name '*.cu' -o -name '*.cuh' -o -name 'CMakeLists.txt' \) | sort)
  local extra=() allowed
  for file in "${found[@]}"; do
    allowed=0
    for a in "$@"; do [ "$file" = "$a" ] && allowed=1; done
    [ $allowed = 1 ] || extra+=("$file")
  done
  if [ ${#extra[@]} -gt 0 ]; then
    echo "FAIL: $name is named outside its ${#@} files (ask the contract instead): ${extra[*]}"
    status=1
  else
    echo "ok: $name is named in ${#found[@]} files: ${found[*]}"
  fi
}
# The other tools' config vocabularies name each objective's keys as those tools do
# (LlamaFactory's kto_chosen_weight, TRL's `trl kto` and KTOConfig), as dataset_info.cpp names
# LlamaFactory's kto_tag column.
check KTO '(^|[^A-Za-z0-9])(kto|KTO)([^a-z]|$)|Kto[A-Z]' \
  lib/train/kto_objective.cpp lib/train/kto_options.h lib/train/objective_list.h lib/train/objective.cpp \
  lib/CMakeLists.txt lib/data/pair_table.h lib/train/batch_loss.h lib/prep/dataset_info.cpp \
  lib/train/llamafactory_config.cpp lib/train/trl_config.cpp lib/train/foreign_config.h
check Qwen3 '[Qq]wen3' lib/hf/model_family.h lib/hf/presets.cpp lib/tokenizer/chat_template.h lib/tokenizer/chat_template.cpp
# The reward model: its objective is 5 files on the step contract; the score head it trains is a
# head kind the hf, model, fsdp, ckpt and serving layers branch on in these 12.
check "the rm objective" 'Stage::rm|RmOptions|RmObjective|rm_objective|rm_options' \
  lib/train/rm_objective.cpp lib/train/rm_options.h lib/train/objective_list.h lib/train/objective.cpp lib/CMakeLists.txt
check "the score head" 'ModelHead::score' \
  lib/hf/model_config.cpp lib/hf/model_config_export.cpp lib/hf/param_table.cpp lib/model/llama_units.cpp lib/model/sequence_scorer.cpp \
  lib/model/score_jsonl.cpp lib/fsdp/fsdp_model.cpp lib/fsdp/shard_source.cpp lib/ckpt/checkpoint_model.cpp \
  lib/eval/preference_accuracy.cpp lib/train/objective.cpp lib/train/rm_objective.cpp app/cmd_score.cpp
# Gemma 3: a family row and its presets. What it brought that the next family reuses is named by
# capability, not by family: the norm style, the sandwich norms, the GeGLU activation, the scaled
# embedding and query scale (its row's choices, read where each piece computes), the layer kinds
# (full and sliding layers, each kind's positions built once per micro-batch) and an image-text
# checkpoint's language model.
check "Gemma" '[Gg]emma' lib/hf/model_family.h lib/hf/presets.cpp
check "the norm style and sandwich norms" 'NormStyle::one_plus_weight|LayerNorms::sandwich|pre_feedforward_norm|post_feedforward_norm' \
  lib/hf/model_family.h lib/hf/param_table.h lib/hf/param_table.cpp lib/hf/model_config.cpp lib/model/rms_norm.cpp \
  lib/model/llama_blocks.cpp lib/fsdp/memory_estimate.cpp lib/fsdp/recompute.cpp
check "the layer kinds" 'sliding_positions|positions_of|ModelAttention|model_attention|layer_types|local_rope' \
  lib/hf/model_family.h lib/hf/model_config.h lib/hf/model_config.cpp lib/hf/model_config_export.cpp lib/hf/presets.cpp \
  lib/hf/gated_delta_config.cpp lib/model/rope.h lib/model/rope.cpp \
  lib/model/llama_units.h lib/model/llama_units.cpp lib/model/context_split.h lib/model/context_split.cpp \
  lib/model/decode_batch.h lib/model/decode_batch.cpp lib/model/sequence_scorer.cpp lib/model/shared_prompt_scorer.cpp \
  lib/fsdp/fsdp_model.h lib/fsdp/fsdp_model.cpp
check "an image-text checkpoint's language model" 'multimodal_text|MultimodalWrapper|kMultimodalWrappers|language_model' \
  lib/hf/model_family.h lib/hf/model_config.h lib/hf/model_config.cpp lib/hf/expert_checkpoint.cpp \
  lib/ckpt/hf_export.cpp lib/train/run_setup.cpp
# The hybrids' Gated DeltaNet: a token mixer beside attention. Its config part (hf/gated_delta_config),
# its parameter rows, the mixer itself (model/gated_delta_*, its rule's GPU kernels in
# cuda/gated_delta_*), the decoder layer that picks it per
# layer, generation's cache of its state and the refusal of context parallelism; nothing else
# names it.
check "the Gated DeltaNet token mixer" 'gated_delta|GatedDelta|TokenMixer|token_mixers|linear_attention|hybrid\(\)' \
  lib/CMakeLists.txt lib/hf/gated_delta_config.h lib/hf/gated_delta_config.cpp lib/hf/model_config.h lib/hf/model_config.cpp \
  lib/hf/model_config_export.cpp lib/hf/model_family.h lib/hf/param_table.h lib/hf/param_table.cpp \
  lib/model/gated_delta_rule.h lib/model/gated_delta_rule.cpp lib/model/gated_delta_mixer.h lib/model/gated_delta_mixer.cpp \
  lib/model/gated_delta_layer.h lib/model/gated_delta_layer.cpp lib/model/llama_blocks.h lib/model/llama_blocks.cpp \
  lib/model/decode_batch.cpp lib/train/run_setup.cpp lib/hf/presets.cpp lib/fsdp/memory_estimate.cpp \
  lib/model/gated_delta_kernel.h lib/model/gated_delta_kernel.cpp cuda/CMakeLists.txt cuda/gated_delta_programs.h \
  cuda/gated_delta_rule.h cuda/gated_delta_rule.cu
# Mixture of experts: the families are their rows (model_family.h, presets.cpp), the expert
# naming styles (param_table.h) and the config keys only their style has (read in model_config.cpp,
# written in model_config_export.cpp); the expert MLP is a module beside the dense one, which the
# decoder layer picks per layer.
check "the MoE families" '[Qq]wen3_?[Mm]oe|[Mm]ixtral' \
  lib/hf/model_family.h lib/hf/presets.cpp lib/hf/model_config.cpp lib/hf/model_config_export.cpp lib/hf/param_table.h
check "the expert MLP" 'moe_block|ExpertWeights|expert_outputs' \
  lib/model/moe_block.h lib/model/moe_block.cpp lib/model/llama_blocks.h lib/model/llama_blocks.cpp lib/CMakeLists.txt
# A shared expert beside the routed ones (Qwen3.5-MoE): its family style, its width, its rows, its
# math in the expert MLP and its activations in the plan.
check "the shared expert" 'shared_expert|shared_intermediate|qwen_shared|shared_gate|shared_up|shared_down' \
  lib/hf/model_family.h lib/hf/model_config.h lib/hf/model_config.cpp lib/hf/model_config_export.cpp \
  lib/hf/param_table.h lib/hf/param_table.cpp lib/model/moe_block.h lib/model/moe_block.cpp lib/fsdp/memory_estimate.cpp \
  lib/train/run_setup.cpp lib/hf/lora_target.h
# The router's load-balancing loss: tallied by the sparse units (fsdp/router_tally, the unit's
# node), made a loss by the model, added per micro-batch by the trainer, logged as a LossSums row.
check "the router loss" 'RouterTally|RouterLoss|router_loss' \
  lib/fsdp/router_tally.h lib/fsdp/router_tally.cpp lib/fsdp/unit_function.h lib/fsdp/unit_function.cpp \
  lib/fsdp/fsdp_model.h lib/fsdp/fsdp_model.cpp lib/train/trainer.h lib/train/trainer.cpp lib/train/batch_loss.h \
  lib/train/objective.h lib/train/rm_objective.cpp lib/train/moe_options.h lib/train/train_metrics.cpp lib/CMakeLists.txt
# Expert parallelism: the dispatcher is the model's ExpertExchange (the batch carries it to the
# expert MLP), implemented over its own communicator group (sharding.h's expert groups); the engine
# gathers an experts unit over that group; decoding gathers a rank's own experts (whole_model,
# llama_weights) and keeps the group's forwards paired (decode_lockstep); the key, its rules and
# the estimate (with the run's inputs to it) name it.
check "expert parallelism" 'ExpertExchange|expert_exchange|exchange_rows|expert_shard|add_expert_groups|expert_parallel' \
  lib/model/expert_exchange.h lib/model/expert_exchange.cpp lib/model/llama_blocks.h lib/model/llama_blocks.cpp \
  lib/model/llama_units.h lib/model/llama_units.cpp lib/model/moe_block.cpp lib/model/decode_lockstep.h \
  lib/model/decode_lockstep.cpp lib/fsdp/expert_group.h lib/fsdp/expert_group.cpp lib/fsdp/whole_model.cpp \
  lib/fsdp/sharding.h lib/fsdp/sharding.cpp lib/fsdp/fsdp_model.h lib/fsdp/fsdp_model.cpp lib/fsdp/unit_layout.h lib/fsdp/unit_layout.cpp \
  lib/distributed/dist_options.h lib/train/train_config_schema.cpp lib/train/train_config_validate.cpp \
  lib/train/recompute_choice.cpp lib/fsdp/memory_estimate.h lib/fsdp/memory_estimate.cpp app/memory_report.cpp \
  app/train_dry_run.cpp lib/CMakeLists.txt
exit $status
