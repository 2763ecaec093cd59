"""TRL's own RLOOTrainer on the CPU, as the oracle of `shardtune train --train.stage rloo` with a
replay file (rloo.rollouts): trains MODEL_DIR on the prompts of PROMPTS.jsonl ({"prompt_ids"} per
line) with the completions of ROLLOUTS.jsonl (line i: {"completion_ids": [[...] x G]}, row i's
group) in place of its generation, and writes TRL's per-step log (loss, grad_norm, learning_rate,
reward, rewards/*, kl, entropy, clip_ratio/*, completions/*) as one JSON line per optimizer step.

usage: trl_rloo.py MODEL_DIR PROMPTS.jsonl OUT.jsonl --rollouts ROLLOUTS.jsonl --steps N
           --micro-batch B --grad-accum A [--steps-per-generation S] [--num-iterations I]
           --num-generations G [--beta B] [--epsilon E] [--epsilon-high E] [--temperature T]
           [--mask-truncated] [--normalize-advantages] [--reward-clip-range LOW,HIGH]
           --overlong MAX,CACHE [--reward-weights W,...] [--adapter PEFT_DIR]
           ... (trl_dpo.py's optimizer options)

What is fixed to match shardtune rather than TRL's defaults, and why (as trl_grpo.py):
- the prompts are drawn in file order (shuffle_dataset false; shardtune's data.shuffle = false),
  and the generation's completions are not shuffled before they are cut into micro-batches
  (TRL's shuffle_sequence_dict replaced by the identity);
- RLOOTrainer has no rollout_func: its prompt tokenization (_tokenize_prompts) and its generation
  (_generate_single_turn) are replaced by trl_grpo.py's replay, which picks each prompt's ids and
  its replayed completion by the prompt's dataset row (the prompt text is "row <i>") and the
  completion's place in the process's share of the generation. Everything after them (the
  completions' metrics, the old and reference log-probs, the rewards, the KL penalty, the
  leave-one-out advantages, the loss) is RLOOTrainer's own.
"""
import json

import datasets
import torch
import transformers

import hf_models
import trl
import trl.trainer.rloo_trainer as rloo_module
from trl_dpo import StepLog, id_tokenizer, shared_config, training_arguments
from trl_grpo import overlong_rewards, replay_rollout


def replay_generation(prompt_rows, groups, group_size):
    """RLOOTrainer's _tokenize_prompts and _generate_single_turn serving the replay file: the
    first returns the prompts' ids and remembers their replayed completions, which the second
    returns in place of sampling."""
    rollout = replay_rollout(prompt_rows, groups, group_size)
    replayed = {}

    def tokenize_prompts(self, prompts):
        replayed.update(rollout(prompts, self))
        return replayed["prompt_ids"], None, {}

    def generate_single_turn(self, prompt_ids, images, multimodal_fields):
        return replayed["completion_ids"]

    return tokenize_prompts, generate_single_turn


def main():
    parser = training_arguments("prompts")
    parser.add_argument("--rollouts", required=True)
    parser.add_argument("--num-generations", type=int, required=True)
    parser.add_argument("--steps-per-generation", type=int)
    parser.add_argument("--num-iterations", type=int, default=1)
    parser.add_argument("--beta", type=float, default=0.05)
    parser.add_argument("--epsilon", type=float, default=0.2)
    parser.add_argument("--epsilon-high", type=float)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--mask-truncated", action="store_true")
    parser.add_argument("--normalize-advantages", action="store_true")
    parser.add_argument("--reward-clip-range", help="LOW,HIGH")
    parser.add_argument("--max-completion-length", type=int, default=512)
    parser.add_argument("--overlong", action="append", required=True, help="MAX,CACHE of one overlong reward")
    parser.add_argument("--reward-weights")
    parser.add_argument("--adapter", help="a PEFT adapter directory trained on the model (LoRA)")
    a = parser.parse_args()

    dtype = torch.float64 if a.float64 else torch.float32
    with open(a.prompts) as f:
        prompt_rows = [json.loads(line)["prompt_ids"] for line in f if line.strip()]
    with open(a.rollouts) as f:
        groups = [json.loads(line)["completion_ids"] for line in f if line.strip()]
    dataset = datasets.Dataset.from_list([{"prompt": f"row {i}"} for i in range(len(prompt_rows))])
    model = hf_models.load(transformers.AutoModelForCausalLM, a.model_dir, dtype)
    if a.adapter:
        import peft
        model = peft.PeftModel.from_pretrained(model, a.adapter, is_trainable=True)
    rloo_module.shuffle_sequence_dict = lambda batch: batch  # the completions in their order
    tokenize_prompts, generate_single_turn = replay_generation(prompt_rows, groups, a.num_generations)
    rloo_module.RLOOTrainer._tokenize_prompts = tokenize_prompts
    rloo_module.RLOOTrainer._generate_single_turn = generate_single_turn
    shared = shared_config(a)
    for key in ("max_length", "dataset_num_proc"):
        shared.pop(key)
    config = trl.RLOOConfig(
        num_generations=a.num_generations, steps_per_generation=a.steps_per_generation,
        num_iterations=a.num_iterations, beta=a.beta, epsilon=a.epsilon, epsilon_high=a.epsilon_high,
        temperature=a.temperature, mask_truncated_completions=a.mask_truncated,
        normalize_advantages=a.normalize_advantages,
        reward_clip_range=tuple(float(v) for v in a.reward_clip_range.split(",")) if a.reward_clip_range else None,
        max_completion_length=a.max_completion_length, shuffle_dataset=False,
        reward_weights=[float(w) for w in a.reward_weights.split(",")] if a.reward_weights else None, **shared)
    trainer = trl.RLOOTrainer(model=model, reward_funcs=overlong_rewards(a.overlong), args=config,
                              train_dataset=dataset, processing_class=id_tokenizer(model.config.vocab_size),
                              callbacks=[StepLog(a.out)])
    trainer.train()
    print(f"trl {trl.__version__}, transformers {transformers.__version__}, torch {torch.__version__}: "
          f"{a.steps} RLOO steps written to {a.out}")


if __name__ == "__main__":
    main()
