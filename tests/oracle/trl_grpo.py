"""TRL's own GRPOTrainer on the CPU, as the oracle of `shardtune train --train.stage grpo` with a
replay file (grpo.rollouts): trains MODEL_DIR on the prompts of PROMPTS.jsonl ({"prompt_ids"} per
line) with the completions of ROLLOUTS.jsonl (line i: {"completion_ids": [[...] x G]}, row i's
group), served by TRL's own `rollout_func` hook in place of its generation, and writes TRL's
per-step log (loss, grad_norm, learning_rate, reward, rewards/*, kl, entropy, clip_ratio/*,
completions/*) as one JSON line per optimizer step.

usage: trl_grpo.py MODEL_DIR PROMPTS.jsonl OUT.jsonl --rollouts ROLLOUTS.jsonl --steps N
           --micro-batch B --grad-accum A [--steps-per-generation S] [--num-iterations I]
           --num-generations G --loss-type dapo|grpo|dr_grpo|bnpo [--beta B] [--epsilon E]
           [--epsilon-high E] [--temperature T] [--scale-rewards group|batch|none]
           [--importance-sampling-level token|sequence] [--mask-truncated] [--bias-correction-kl]
           [--top-entropy-quantile Q] [--delta D] [--overlong MAX,CACHE] [--adapter PEFT_DIR]
           ... (trl_dpo.py's optimizer options)
--adapter: LoRA, TRL + PEFT training this adapter on the model (the reference, with beta > 0, the
model with adapters off: TRL's way for a PEFT model).

What is fixed to match shardtune rather than TRL's defaults, and why:
- the prompts are drawn in file order (shuffle_dataset false; shardtune's data.shuffle = false),
  and the generation's completions are not shuffled before they are cut into micro-batches
  (TRL's shuffle_sequence_dict, a torch.randperm, replaced by the identity): both then train the
  same completions in each micro-batch;
- rollout_func hands TRL each prompt's ids and its replayed completion, by the prompt's dataset
  row (the prompt text is "row <i>") and the completion's place in its group (its place among
  the process's completions, which start at process_index x len(prompts) of the generation);
- the reward is TRL's get_soft_overlong_punishment on the completion ids (--overlong; several
  give several weighted rewards, named apart).
"""
import json

import datasets
import torch
import transformers

import hf_models
import trl
import trl.trainer.grpo_trainer as grpo_module
from trl.rewards import get_soft_overlong_punishment
from trl_dpo import StepLog, id_tokenizer, shared_config, training_arguments


def replay_rollout(prompt_rows, groups, group_size, rows_by_prompt=None):
    """TRL's rollout_func serving the replay file: for each prompt ("row <i>", or one of
    `rows_by_prompt`, the dataset's own prompts by their JSON), the prompt's ids (prompt_rows[i], or
    None: tokenized as TRL's _tokenize_prompts does) and the completion its place in the generation
    picks out of row i's group."""

    def rollout(prompts, trainer):
        first = trainer.accelerator.process_index * len(prompts)
        prompt_ids, completion_ids = [], []
        for j, prompt in enumerate(prompts):
            row = rows_by_prompt[json.dumps(prompt)] if rows_by_prompt else int(prompt.split()[1])
            if prompt_rows[row] is not None:
                prompt_ids.append(prompt_rows[row])
            elif isinstance(prompt, list):
                prompt_ids.append(trainer.processing_class.apply_chat_template(
                    prompt, add_generation_prompt=True, tokenize=True, return_dict=True,
                    **trainer.chat_template_kwargs)["input_ids"])
            else:
                prompt_ids.append(trainer.processing_class(text=prompt)["input_ids"])
            completion_ids.append(groups[row][(first + j) % group_size])
        return {"prompt_ids": prompt_ids, "completion_ids": completion_ids, "logprobs": None}

    return rollout


def overlong_rewards(specs):
    """One get_soft_overlong_punishment per MAX,CACHE, each under its own name (TRL logs by name)."""
    functions = []
    for k, spec in enumerate(specs):
        limit, cache = (int(v) for v in spec.split(","))
        function = get_soft_overlong_punishment(limit, cache)
        if k > 0:
            function.__name__ = f"soft_overlong_punishment_reward_{k}"
        functions.append(function)
    return functions


def even_share(completion_ids, **kwargs):
    """The share of even ids in each completion; None (no reward) for 3-id completions: the reward
    program of grpo_test.sh's `rewards` case (even_share.py) computes the same."""
    return [None if len(ids) == 3 else sum(t % 2 == 0 for t in ids) / len(ids) for ids in completion_ids]


def main():
    parser = training_arguments("prompts")
    parser.add_argument("--rollouts", required=True)
    parser.add_argument("--num-generations", type=int, required=True)
    parser.add_argument("--steps-per-generation", type=int)
    parser.add_argument("--num-iterations", type=int, default=1)
    parser.add_argument("--loss-type", default="dapo")
    parser.add_argument("--beta", type=float, default=0.0)
    parser.add_argument("--epsilon", type=float, default=0.2)
    parser.add_argument("--epsilon-high", type=float)
    parser.add_argument("--delta", type=float)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--scale-rewards", default="group")
    parser.add_argument("--importance-sampling-level", default="token")
    parser.add_argument("--mask-truncated", action="store_true")
    parser.add_argument("--bias-correction-kl", action="store_true")
    parser.add_argument("--top-entropy-quantile", type=float, default=1.0)
    parser.add_argument("--max-completion-length", type=int, default=256)
    parser.add_argument("--overlong", action="append", required=True, help="MAX,CACHE of one overlong reward")
    parser.add_argument("--reward-weights")
    parser.add_argument("--adapter", help="a PEFT adapter directory trained on the model (LoRA)")
    parser.add_argument("--even-share", action="store_true", help="the even_share reward after the overlong ones")
    parser.add_argument("--multi-objective-aggregation", default="sum_then_normalize")
    parser.add_argument("--reward-model", help="a *ForSequenceClassification directory, the first reward (TRL's "
                        "reward_model_name_or_path), in the run's precision")
    parser.add_argument("--tokenizer", help="the policy's tokenizer directory (processing_class); PROMPTS.jsonl "
                        "then holds TRL's {\"prompt\": text or messages} records, tokenized as TRL does")
    parser.add_argument("--chat-template-kwargs", default="{}", help="GRPOConfig.chat_template_kwargs, as JSON")
    a = parser.parse_args()

    dtype = torch.float64 if a.float64 else torch.float32
    with open(a.prompts) as f:
        records = [json.loads(line) for line in f if line.strip()]
    prompt_rows = [r.get("prompt_ids") for r in records]
    with open(a.rollouts) as f:
        groups = [json.loads(line)["completion_ids"] for line in f if line.strip()]
    if a.tokenizer:
        dataset = datasets.Dataset.from_list(records)
        rows_by_prompt = {json.dumps(r["prompt"]): i for i, r in enumerate(records)}
        processing_class = transformers.AutoTokenizer.from_pretrained(a.tokenizer)
    else:
        dataset = datasets.Dataset.from_list([{"prompt": f"row {i}"} for i in range(len(prompt_rows))])
        rows_by_prompt = None
    model = hf_models.load(transformers.AutoModelForCausalLM, a.model_dir, dtype)
    if a.adapter:
        import peft
        model = peft.PeftModel.from_pretrained(model, a.adapter, is_trainable=True)
    grpo_module.shuffle_sequence_dict = lambda batch: batch  # the completions in their order
    shared = shared_config(a)
    for key in ("max_length", "dataset_num_proc"):
        shared.pop(key)
    config = trl.GRPOConfig(
        num_generations=a.num_generations, steps_per_generation=a.steps_per_generation,
        num_iterations=a.num_iterations, loss_type=a.loss_type, beta=a.beta, epsilon=a.epsilon,
        epsilon_high=a.epsilon_high, delta=a.delta, temperature=a.temperature, scale_rewards=a.scale_rewards,
        importance_sampling_level=a.importance_sampling_level, mask_truncated_completions=a.mask_truncated,
        use_bias_correction_kl=a.bias_correction_kl, top_entropy_quantile=a.top_entropy_quantile,
        multi_objective_aggregation=a.multi_objective_aggregation,
        max_completion_length=a.max_completion_length, shuffle_dataset=False,
        reward_weights=[float(w) for w in a.reward_weights.split(",")] if a.reward_weights else None,
        chat_template_kwargs=json.loads(a.chat_template_kwargs), **shared)
    rewards = overlong_rewards(a.overlong) + ([even_share] if a.even_share else [])
    if a.reward_model:  # first, as trl/scripts/grpo.py puts reward_model_name_or_path
        rewards = [hf_models.load(transformers.AutoModelForSequenceClassification, a.reward_model, dtype)] + rewards
    if not a.tokenizer:
        processing_class = id_tokenizer(model.config.vocab_size)
    trainer = trl.GRPOTrainer(model=model, reward_funcs=rewards, args=config,
                              train_dataset=dataset, processing_class=processing_class,
                              rollout_func=replay_rollout(prompt_rows, groups, a.num_generations, rows_by_prompt),
                              callbacks=[StepLog(a.out)])
    trainer.train()
    print(f"trl {trl.__version__}, transformers {transformers.__version__}, torch {torch.__version__}: "
          f"{a.steps} GRPO steps ({a.loss_type}) written to {a.out}")


if __name__ == "__main__":
    main()
