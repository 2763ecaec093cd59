// The [model] .. [ckpt] keys of a TrainConfig, each declared here once: its help, unit and range
// (--help, docs/configuration.md and validation read them); defaults come from the member
// initializers of the section structs, allowed words of enum keys from their name tables. The
// objectives' sections declare their keys in their own headers (objective_list.h).
#include "train/train_config_schema.h"

#include "hf/presets.h"

namespace st {

void bind_train_config(ConfigSchema& schema, TrainConfig& c) {
  schema.section("model", "model to fine-tune");
  schema.add(&c.model.path, "path", "HF model directory (config.json + *.safetensors); empty = preset");
  schema.add(&c.model.preset, "preset", "built-in shape with seeded random init, when model.path is empty",
      any_value().choices(preset_names()));
  schema.add(&c.model.logp_chunk_tokens, "logp_chunk_tokens",
      "tokens per lm_head log-prob chunk; bounds the [tokens, vocab] fp32 logits held at once",
      above(0).unit("tokens"));
  schema.add(&c.model.attention, "attention",
      "packed, prompt-shared and windowed rows: varlen = each sequence attends alone through cumulative "
      "offsets (flash varlen on a GPU, per sequence on the CPU); masked = a [T, T] mask per row (slower)");

  schema.section("data", "tokenized training data");
  schema.add(&c.data.train, "train",
             "directory of HDF5 shards with manifest.json, or a weighted mixture: dir_a:0.7, dir_b:0.3",
             any_value().lists("datasets", "dir_a:0.7, dir_b:0.3"));
  schema.add(&c.data.val, "val",
             "validation shards (several: comma-separated, each also evaluated alone); empty = hold out "
             "data.val_size of train",
             any_value().lists("datasets", "dir_a, dir_b"));
  schema.add(&c.data.val_size, "val_size", "fraction of train pairs (of each mixture dataset) held out for evaluation",
      within(0, 1, true));
  schema.add(&c.data.cutoff_len, "cutoff_len", "max tokens per sequence, prompt + completion", at_least(2).unit("tokens"));
  schema.add(&c.data.shuffle, "shuffle",
      "draw each epoch's pairs in a seeded permutation (train.seed); false = in manifest and file order");
  schema.add(&c.data.group_by_length, "group_by_length",
      "sort each rank's share of a step by length before cutting micro-batches (less padding)");
  schema.add(&c.data.micro_batch_tokens, "micro_batch_tokens",
      "> 0: micro-batches hold as many pairs as fit in this many padded tokens; 0 = by pair count "
      "(train.micro_batch); -1 = auto (with data.packing): the largest budget up to 16384 that fits the device "
      "with room for kept activations", at_least(-1).unit("tokens").meaning("0 = by pair count, or -1 (auto)"));
  schema.add(&c.data.packing, "packing",
      "several whole sequences per row up to data.cutoff_len (or data.micro_batch_tokens), attention kept "
      "inside each; the same losses as unpacked, without the padding");
  schema.add(&c.data.prefetch_steps, "prefetch_steps", "steps loaded ahead on a background thread", at_least(1));
  schema.add(&c.data.verify_checksums, "verify_checksums", "check every shard's CRC-32 at start (reads all data)");

  schema.section("prep", "data train preps itself (LlamaFactory's dataset_info.json, TRL's files), instead of data.train");
  schema.add(&c.prep.dataset_dir, "dataset_dir",
             "directory of a LlamaFactory dataset_info.json; empty: prep.dataset names JSON / JSONL files");
  schema.add(&c.prep.dataset, "dataset",
             "its entries (or files) to train on, comma-separated; each is prepped into <train.output_dir>/data (reused while "
             "its content and these keys are unchanged), then drawn in proportion to its size, as LlamaFactory "
             "concatenates them",
             any_value().lists("entries", "identity, alpaca_en_demo"));
  schema.add(&c.prep.chat_template, "template",
             "chat template: auto = the model's own (a built-in one where it renders alike, else jinja)");
  schema.add(&c.prep.template_kwargs, "template_kwargs", "jinja: extra template variables, a JSON object");
  schema.add(&c.prep.tokenizer, "tokenizer", "directory of tokenizer.json; empty = model.path");
  schema.add(&c.prep.max_samples, "max_samples", "the first records of each entry; 0 = all",
             at_least(0).meaning("0 = all"));
  schema.add(&c.prep.train_on, "train_on", "sft conversations: all (every assistant turn carries loss) | last");

  schema.section("train", "the run: stage, batch, length, precision, output");
  schema.add(&c.train.stage, "stage", "training objective");
  schema.add(&c.train.method, "method",
      "full = train every weight; lora = LoRA adapters ([lora]) on a frozen base held in the compute dtype only; "
      "qlora = the same on a base held in 4 bits (lora.quant_type)");
  schema.add(&c.train.output_dir, "output_dir", "run directory on shared storage");
  schema.add(&c.train.seed, "seed", "seed for data order and random init");
  schema.add(&c.train.micro_batch, "micro_batch", "pairs (dpo) or sequences (sft) per rank per micro-step", above(0));
  schema.add(&c.train.grad_accum, "grad_accum",
      "micro-steps per optimizer step of a fresh run; 0 = auto: global_batch / (micro_batch x ranks), else 1. "
      "A resumed run keeps its checkpoint's global batch on any rank count and derives this from it",
      at_least(0).meaning("0 = auto"));
  schema.add(&c.train.global_batch, "global_batch",
      "pairs per optimizer step; 0 = micro_batch x grad_accum x ranks",
      at_least(0).meaning("0 = micro_batch x grad_accum x ranks"));
  schema.add(&c.train.max_steps, "max_steps", "optimizer steps; 0 = run train.epochs", at_least(0));
  schema.add(&c.train.epochs, "epochs", "passes over the training data when max_steps is 0");
  schema.add(&c.train.dtype, "dtype", "compute dtype; auto = bf16 on GPU, fp32 on CPU");
  schema.add(&c.train.reduce_dtype, "reduce_dtype",
      "gradients reduce-scattered and accumulated across ranks in (FSDP's reduce_dtype): bf16 halves the "
      "gradient shards (2 bytes per parameter less) and the reduce-scatter bytes, the sum over ranks rounded "
      "to bf16; one rank without replicas reduces nothing and keeps fp32");
  schema.add(&c.train.recompute, "recompute",
      "activation recomputation per decoder layer: full = keep inputs only; selective = also the matmul "
      "outputs; none = keep everything; auto = the most that fits train.memory_budget_gib");
  schema.add(&c.train.compute_copy, "compute_copy",
      "the compute-dtype copy of the parameter shards: kept = made once per step (fastest); per_gather = "
      "cast from the fp32 masters at each unit's gather (2 bytes per shard parameter less memory)");
  schema.add(&c.train.memory_budget_gib, "memory_budget_gib",
      "device memory recompute=auto may fill; 0 = the GPU's free memory less a margin (CPU: unlimited)",
      at_least(0).unit("GiB"));
  schema.add(&c.train.log_every, "log_every", "optimizer steps between metric lines", above(0));
  schema.add(&c.train.tensorboard, "tensorboard",
      "also write every metrics.jsonl record and the resolved config as TensorBoard event files under "
      "<output_dir>/tensorboard (rank 0)");
  schema.add(&c.train.eval_every, "eval_every", "optimizer steps between evaluations; 0 = at the end only", at_least(0));
  schema.add(&c.train.overwrite, "overwrite", "replace the outputs of an earlier run in train.output_dir");
  schema.add(&c.train.resume, "resume",
      "continue from a checkpoint: auto = the newest complete one in ckpt.dir (else start fresh), "
      "or a step_* directory or a checkpoint directory; empty = start fresh");
  schema.add(&c.train.peak_tflops, "peak_tflops",
      "one device's peak in the compute dtype, for MFU; 0 = known GPUs, else no MFU", at_least(0).unit("TFLOP/s").meaning("0 = auto"));

  c.bind_objective_sections(schema);  // [dpo], [kto]: each objective declares its own
  c.moe.bind(schema);

  schema.section("lora", "LoRA adapters (train.method = lora or qlora; docs/lora.md)");
  schema.add(&c.lora.r, "r", "adapter rank", at_least(1));
  schema.add(&c.lora.alpha, "alpha", "scaling numerator: the update is alpha / r x B A x (alpha / sqrt(r) with rslora)",
      above(0));
  schema.add(&c.lora.dropout, "dropout", "dropout on the adapters' input in training forwards", within(0, 1, true));
  schema.add(&c.lora.target_modules, "target_modules",
      "projections that get adapters, comma-separated from q,k,v,o,gate,up,down (a mixture-of-experts model's "
      "gate,up,down: every expert's, together, as PEFT adapts them)");
  schema.add(&c.lora.rslora, "rslora", "rank-stabilised scaling alpha / sqrt(r) (PEFT use_rslora)");
  schema.add(&c.lora.seed, "seed", "seed of the A matrices' init (B starts at zero)");
  schema.add(&c.lora.quant_type, "quant_type",
      "qlora: the base's 4-bit format; nf4 = bitsandbytes' NormalFloat, blocks of 64 weights");
  schema.add(&c.lora.double_quant, "double_quant",
      "qlora: the blocks' absmax values in 8 bits (blocks of 256, bitsandbytes' compress_statistics)");
  schema.add(&c.lora.host_embedding, "host_embedding",
      "on a GPU, keep the frozen embedding table in host memory when no other rank shares it (a shard "
      "group of one, a head of its own): each forward copies only its batch's rows to the GPU");

  schema.section("optim", "AdamW, gradient clipping, learning-rate schedule");
  schema.add(&c.optim.name, "name",
      "AdamW's moments: adamw = fp32 (8 bytes per trained parameter), adamw8bit = bitsandbytes' blockwise "
      "8-bit codes (2 bytes + 8 per 256)");
  schema.add(&c.optim.lr, "lr", "peak learning rate", above(0));
  schema.add(&c.optim.beta1, "beta1", "AdamW first-moment decay", within(0, 1, true));
  schema.add(&c.optim.beta2, "beta2", "AdamW second-moment decay", within(0, 1, true));
  schema.add(&c.optim.eps, "eps", "AdamW denominator epsilon", above(0));
  schema.add(&c.optim.weight_decay, "weight_decay", "decoupled weight decay (norms and biases excluded)", at_least(0));
  schema.add(&c.optim.grad_clip, "grad_clip", "max global gradient L2 norm; 0 = no clipping", at_least(0).meaning("0 = off"));
  schema.add(&c.optim.schedule, "schedule", "learning-rate schedule after warmup");
  schema.add(&c.optim.warmup_steps, "warmup_steps", "linear warmup; excludes optim.warmup_ratio",
      at_least(0).unit("optimizer steps"));
  schema.add(&c.optim.warmup_ratio, "warmup_ratio", "warmup as a fraction of all steps", within(0, 1, true));
  schema.add(&c.optim.min_lr_ratio, "min_lr_ratio", "cosine_with_min_lr floor as a fraction of lr", within(0, 1, false));
  schema.add(&c.optim.offload, "offload", "where the AdamW state (fp32 masters, moments) lives");
  schema.add(&c.optim.step_in_backward, "step_in_backward",
      "update each unit as soon as backward has reduced its gradient and free that gradient shard: no full "
      "set of gradient shards lives (4 bytes per parameter less); needs optim.grad_clip = 0, one micro-batch "
      "per step (train.grad_accum = 1, data.micro_batch_tokens = 0) and no fp16");

  schema.section("dist", "communication, sharding, topology, watchdog");
  schema.add(&c.dist.backend, "backend", "collectives backend; auto = nccl with GPUs, else mpi");
  schema.add(&c.dist.sharding, "sharding", "full = ZeRO-3, grad_op = ZeRO-2, none = replicate");
  schema.add(&c.dist.ranks_per_node, "ranks_per_node",
      "0 = detect from MPI shared memory; > 0 declares nodes of this many ranks",
      at_least(0).meaning("0 = detect"));
  schema.add(&c.dist.context_parallel, "context_parallel",
      "ranks that split each sequence (context parallelism: consecutive ranks, 2C chunks per row, keys and values "
      "gathered per layer); divides the world; full or grad_op sharding",
      at_least(1).unit("ranks"));
  schema.add(&c.dist.expert_parallel, "expert_parallel",
      "ranks that split each mixture-of-experts layer's experts (expert parallelism: each holds experts / P of "
      "them, tokens travel by all-to-all); divides the experts and the world; full or grad_op sharding",
      at_least(1).unit("ranks"));
  schema.add(&c.dist.timeout_s, "timeout_s", "deadline of each collective before all ranks abort", above(0).unit("s"));

  schema.section("eval", "benchmark tasks at every evaluation (docs/evaluation.md)");
  schema.add(&c.eval.tasks, "tasks",
             "task files (JSONL: a {\"task\": ...} header, then documents) scored at every evaluation "
             "(train.eval_every and the end) with the current weights; metrics eval/<task>/<metric>",
             any_value().lists("task files", "arc.jsonl, gsm8k.jsonl"));
  schema.add(&c.eval.limit, "limit", "the first documents of each task; 0 = all", at_least(0).meaning("0 = all"));
  schema.add(&c.eval.tokenizer, "tokenizer", "directory of tokenizer.json for the tasks; empty = model.path's");
  schema.add(&c.eval.max_length, "max_length", "tokens the model sees at once; 0 = config.json's max_position_embeddings",
      at_least(0).unit("tokens").meaning("0 = the model's"));
  schema.add(&c.eval.add_bos, "add_bos", "begin contexts with the BOS token (the harness's add_bos_token)");

  schema.section("ckpt", "sharded checkpoints and the consolidated HF export");
  schema.add(&c.ckpt.dir, "dir", "checkpoint directory; empty = <train.output_dir>/checkpoints");
  schema.add(&c.ckpt.every, "every", "optimizer steps between checkpoints; 0 = at the end only",
      at_least(0).meaning("0 = at the end only"));
  schema.add(&c.ckpt.keep_last, "keep_last", "complete checkpoints kept; 0 = all (the newest always stays)",
      at_least(0).meaning("0 = keep all"));
  schema.add(&c.ckpt.async, "async", "snapshot to host memory and write on a background thread");
  schema.add(&c.ckpt.export_hf, "export", "write a consolidated HF model to <train.output_dir>/export at the end");
  schema.add(&c.ckpt.export_dtype, "export_dtype", "dtype of the exported weights");
  schema.add(&c.ckpt.export_shard_gb, "export_shard_gb", "size limit of one exported safetensors file",
      above(0).unit("GB"));
}

}  // namespace st
