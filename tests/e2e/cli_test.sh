#!/usr/bin/env bash
# cli_test.sh <shardtune binary> <case>: one end-to-end check of the binary per ctest entry.
# Each case runs the binary as a user would and asserts exit code, output and files.
# shellcheck source=harness.sh
source "$(dirname "$0")/harness.sh"

case "$case_name" in
  version)
    run --exit 0 "$bin" --version
    expect_output '^shardtune [0-9]+\.[0-9]+\.[0-9]+\+([0-9a-f]{12}(-dirty)?|unknown)$'
    for library in libtorch MPI HDF5 'CUDA runtime' NCCL; do expect_output "^  $library: "; done
    ;;
  blas_kernels_chosen)
    # OpenBLAS's own pick (SHARDTUNE_BLAS_GENERIC_CORE set empty: shardtune chooses nothing), and
    # what shardtune runs where the user has not chosen: the best core the CPU has where OpenBLAS
    # fell back to its generic Prescott kernels (util/blas_kernels.h), else OpenBLAS's.
    core_of() { sed -nE 's/.*BLAS: OpenBLAS [^ ]+ \(core ([A-Za-z0-9]+).*/\1/p' <<<"$1"; }
    own=$(core_of "$(env -u OPENBLAS_CORETYPE SHARDTUNE_BLAS_GENERIC_CORE= "$bin" --version)")
    if [ -z "$own" ]; then echo "PASS [$case_name]: not OpenBLAS, nothing to choose"; exit 0; fi
    flags=$(grep -m1 '^flags' /proc/cpuinfo)
    has() { for unit in "$@"; do grep -qw "$unit" <<<"$flags" || return 1; done; }
    want=$own
    if [ "$own" = Prescott ] && has avx2 fma avx512f avx512cd avx512bw avx512dq avx512vl; then want=SkylakeX
    elif [ "$own" = Prescott ] && has avx2 fma; then want=Haswell; fi
    run --exit 0 env -u OPENBLAS_CORETYPE -u SHARDTUNE_BLAS_GENERIC_CORE "$bin" --version
    expect_output "BLAS: OpenBLAS .*\(core $want"
    [ "$want" = "$own" ] || expect_output "\(core $want; shardtune's choice over Prescott\)"
    # The user's choice stands.
    run --exit 0 env OPENBLAS_CORETYPE=Prescott "$bin" --version
    expect_output "BLAS: OpenBLAS .*\(core Prescott\)$"
    if [ "$want" != "$own" ]; then  # train says so in one line
      synth_data --dir "$work/data" --pairs 16
      run --exit 0 env -u OPENBLAS_CORETYPE -u SHARDTUNE_BLAS_GENERIC_CORE "$bin" train --model.preset=debug \
        --data.train="$work/data/train" --train.output_dir="$work/run" --train.max_steps=1 --progress off
      expect_output "OpenBLAS does not know this CPU and picked its generic Prescott kernels; running its $want kernels instead"
    fi
    echo "OpenBLAS picks $own; shardtune runs $want"
    ;;
  usage)
    run --exit 2 "$bin"
    expect_output 'usage: shardtune <command>'
    run --exit 2 "$bin" frobnicate
    expect_output "unknown command 'frobnicate'"
    run --exit 0 "$bin" train --help
    expect_output '\[optim\] AdamW'
    expect_output '--optim.lr arg \(=1e-05\)'
    expect_output '--dry-run'
    ;;
  unknown_flags_named_everywhere)
    # Every subcommand refuses a flag it does not have, naming the nearest; none guesses a prefix.
    for command in "train --dry-rn" "estimate --wrld 2x8" "bench --step 3" "prep --out x" "synth --pair 3" \
                   "score --mode m" "eval --task x" "generate --prompt x" "export --checkpont x" "plot --outpt x" \
                   "env --bnch" "precompute-ref --dry-run"; do
      # shellcheck disable=SC2086
      run --exit 2 "$bin" $command
      expect_output "(unknown option|unrecognised option)"
      echo "$command: refused"
    done
    run --exit 2 "$bin" prep --out x
    expect_output "Did you mean --output\?"
    run --exit 2 "$bin" train --dry-rn
    expect_output "unknown option --dry-rn. Did you mean --dry-run\?"
    run --exit 2 "$bin" train --learning_rat 1e-4
    expect_output "unknown option --learning_rat. Did you mean --learning_rate\?"
    run --exit 2 "$bin" estimate --wrld 2x8
    expect_output "Did you mean --world\?"
    # The cluster in one spelling for train --dry-run and estimate; estimate's older one still read.
    run --exit 0 "$bin" estimate --model.preset llama-3.1-8b --nodes 2 --ranks-per-node 8
    expect_output 'units split over 16 ranks'
    run --exit 2 "$bin" estimate --model.preset llama-3.1-8b --nodes 2 --world 2x8
    expect_output "give the cluster once"
    ;;
  estimate)
    # Llama-3.1-8B, 2 nodes x 8 GPUs, full sharding, bf16: 18 bytes per owned parameter element
    # (fp32 master 4 + bf16 copy 2 + fp32 grad 4 + AdamW 8); 8,030,261,248 / 16 ranks ~ 5.0e8.
    run --exit 0 "$bin" estimate --model.preset llama-3.1-8b --world 2x8 --data.cutoff_len 1024
    expect_output 'units split over 16 ranks'
    expect_output '^per rank: 50189[0-9]{4} parameter elements owned'
    expect_output 'optimizer \(AdamW m, v\) +3\.7[0-9] GiB'
    expect_output '^per GPU: .* -> fits a 80 GiB GPU'
    expect_output '^micro-batch: 2 row\(s\) x 1024 tokens$'
    # Packed rows cut by a token budget: one row of that many tokens, an explicit mask only
    # under the masked oracle (varlen attention keeps O(tokens)).
    run --exit 0 "$bin" estimate --model.preset llama-3.1-8b --data.cutoff_len 2048 --train.micro_batch 4 \
      --data.packing --dpo.share_prompt --data.micro_batch_tokens 8192 --model.attention masked
    expect_output '^micro-batch: 1 row\(s\) x 8192 tokens \(packed or prompt-shared'
    run --exit 0 "$bin" estimate --model.preset llama-3.1-8b --data.cutoff_len 2048 --train.micro_batch 4 \
      --data.packing --dpo.share_prompt --data.micro_batch_tokens 8192
    expect_output '^micro-batch: 1 row\(s\) x 8192 tokens$'
    # The auto budget: the ceiling where 8 ranks leave room, the floor (one shared segment) where
    # the states alone overflow one GPU.
    run --exit 0 "$bin" estimate --model.preset llama-3.1-8b --data.cutoff_len 2048 --data.packing --dpo.share_prompt \
      --data.micro_batch_tokens=-1
    expect_output '^micro-batch tokens: auto -> 16384 '
    run --exit 0 "$bin" estimate --model.preset llama-3.1-8b --world 1x1 --data.cutoff_len 2048 --data.packing \
      --dpo.share_prompt --data.micro_batch_tokens=-1
    expect_output '^micro-batch tokens: auto -> 4096 '
    # The train keys' own checks, word for word: estimate declares none of its own.
    run --exit 2 "$bin" estimate --model.preset llama-3.1-8b --data.micro_batch_tokens=-1
    expect_output 'data.micro_batch_tokens = -1 \(command line\) -1 \(auto\) sizes packed rows: set data.packing = true'
    run --exit 2 "$bin" estimate --model.preset llama-3.1-8b --data.cutoff_len 1 --optim.lr=-1
    expect_output 'data.cutoff_len = 1 \(command line\) must be >= 2 \[tokens\]'
    expect_output 'optim.lr = -1 \(command line\) must be > 0'
    # The compute copy cast per gather: 6 bytes of params per element instead of 4 + 2.
    run --exit 0 "$bin" estimate --model.preset llama-3.2-1b --world 1x1 --train.compute_copy per_gather
    expect_output 'params \(fp32 master; cast per gather\) +4\.60 GiB'
    run --exit 0 "$bin" estimate --model.preset llama-3.1-70b --world 1x1
    expect_output 'does NOT fit a 80 GiB GPU'
    # 70B QLoRA DPO at seq 2048 fits two 80 GiB GPUs (issue 38's bar), and more so 2 nodes x 8.
    for world in "--world 1x2" "--world 2x8"; do
      # shellcheck disable=SC2086
      run --exit 0 "$bin" estimate --model.preset llama-3.1-70b --train.method=qlora --data.cutoff_len=2048 \
        --train.micro_batch=1 $world
      expect_output 'of which the frozen QLoRA base'
      expect_output '^per GPU: .* -> fits a 80 GiB GPU'
    done
    run --exit 2 "$bin" estimate --model.preset llama-3.1-8b --dist.sharding zero9
    expect_output "dist.sharding = zero9 \(command line\) is not one of full\|grad_op\|none\|hybrid"
    run --exit 2 "$bin" estimate --model.preset llama-3.1-8b --seq-len 2048
    expect_output "unknown option --seq-len"
    ;;
  env_two_ranks)
    run --exit 0 "$mpiexec" -np 2 "$bin" env
    expect_output '^shardtune env: 2 ranks on 1 node'
    expect_output '^0 +[^ ]+ +0 local 0/2'
    expect_output '^1 +[^ ]+ +0 local 1/2'
    expect_output 'identical on all 2 ranks'
    expect_output '^shardtune env: 2 ranks on 1 node \(1 host x 2 ranks\)'
    # The link bench on one host: collectives inside it, nothing across.
    run --exit 0 "$mpiexec" -np 2 "$bin" env --bench --bench-mib 1 --bench-repeats 2
    expect_output '^link bench: all-gather and reduce-scatter of 1.000 MiB, median of 2'
    expect_output '^  [^ ]+ +2 +[0-9.]+ +[0-9.]+ +0.000$'
    expect_output '^one host: nothing crosses a network link'
    run --exit 2 "$mpiexec" -np 2 "$bin" env --bench --bench-repeats 0
    expect_output 'env: --bench-repeats must be >= 1'
    ;;
  singletons_side_by_side)
    # Open MPI 4 gives every command started without a launcher the same session directory,
    # so one's MPI_Finalize could remove it under another's MPI_Init: each gets its own under
    # TMPDIR (distributed/singleton_session_dir.h). A file where the shared tree would start
    # shows which one a command used, and nothing is left behind.
    mkdir -p "$work/tmp"
    blocker="$work/tmp/ompi.$(hostname -s).$(id -u)"
    : >"$blocker"
    run --exit 0 env TMPDIR="$work/tmp" "$bin" env
    expect_output '^shardtune env: 1 rank on 1 node'
    [ "$(ls -A "$work/tmp")" = "$(basename "$blocker")" ] || fail "left in TMPDIR: $(ls -A "$work/tmp")"
    # The user's orte_tmpdir_base stands: there the blocker is in the way (and Open MPI says so).
    run --exit 1 env TMPDIR="$work/tmp" OMPI_MCA_orte_tmpdir_base="$work/tmp" "$bin" env
    expect_output 'orte_session_dir failed'
    # Side by side: 24 commands, 8 at a time, all start.
    for round in 1 2 3; do
      for k in 1 2 3 4 5 6 7 8; do "$bin" env >"$work/side.$round.$k" 2>&1 & done
      wait
    done
    for log in "$work"/side.*; do grep -q '^shardtune env: 1 rank on 1 node' "$log" || fail "$log: $(tail -5 "$log")"; done
    ;;
  bench_two_ranks)
    # The throughput harness: warm-up steps logged but not counted, medians printed, no state kept.
    run --exit 0 "$mpiexec" -np 2 "$bin" bench --preset debug --seq 64 --micro-batch 2 --steps 3 --warmup 2 \
      --work "$work/bench" --train.recompute=none
    expect_output 'step 5/5 '
    expect_output '^bench: debug dpo, seq 64, lengths uniform, rows unpacked, micro-batch 2, 2 rank\(s\), compute fp32; median of 3 steps after 2 warm-up'
    expect_output '^  tokens/s +[0-9]+\.[0-9]$'
    expect_output '^  padding +0\.0% of the row slots'
    expect_output '^  MFU +[0-9.]+% \(peak 989 TFLOP/s\)'
    [ -z "$(ls -A "$work/bench/run/checkpoints" 2>/dev/null)" ] || fail "bench left a checkpoint"
    [ "$(metric --file "$work/bench/run/metrics.jsonl" --key loss --pick count)" = 5 ] || fail "bench did not record 5 steps"
    run --exit 2 "$bin" bench --stage ppo --work "$work/bad"
    expect_output "--stage 'ppo' is not one of dpo\|sft"
    # The profile of the measured steps: the top operators table (a trace file where libtorch has Kineto).
    run --exit 0 "$bin" bench --preset debug --seq 64 --micro-batch 2 --steps 2 --warmup 1 --work "$work/profiled" \
      --profile "$work/profile" --phase-times false
    expect_output '^  top (GPU kernels|CPU operators \(inclusive, nested\)) by total time'
    expect_output '^ +[0-9.]+% +[0-9.]+ ms +[0-9]+  aten::mm'
    if grep -q 'step time breakdown' <<<"$out"; then fail "--phase-times false still printed the breakdown"; fi
    ;;
  dry_run_two_ranks)
    synth_data --dir "$work/data"
    printf '[optim]\nlr = 3e-4\n[train]\nmicro_batch = 2\ngrad_accum = 4\nglobal_batch = 16\n' \
      >"$work/run.ini"
    run --exit 0 "$mpiexec" -np 2 "$bin" train --config "$work/run.ini" --dry-run \
      --train.output_dir="$work/run" --optim.warmup_steps=5 --data.train="$work/data/train"
    expect_output 'configuration valid for 2 ranks'
    expect_output 'data: 180 training pairs, 0 validation pairs'
    expect_output 'batch: global 16 = micro 2 x accum 4 x 2 ranks; 12 steps per epoch, 12 steps in all'
    expect_output '^per host: '
    [ ! -e "$work/run/metrics.jsonl" ] || fail "a dry run trained"
    resolved="$work/run/config.resolved.ini"
    [ -f "$resolved" ] || fail "no $resolved"
    grep -q '^lr = 0.0003 ' "$resolved" || fail "file value missing from resolved config"
    grep -q '^warmup_steps = 5 ' "$resolved" || fail "override missing from resolved config"
    grep -q '^global_batch = 16 ' "$resolved" || fail "global_batch missing"
    ;;
  resolved_config_reruns)
    synth_data --dir "$work/data"
    run --exit 0 "$bin" train --dry-run --train.output_dir="$work/first" --optim.lr=2e-5 --train.seed=9 \
      --data.train="$work/data/train"
    run --exit 0 "$bin" train --dry-run --config "$work/first/config.resolved.ini" \
      --train.output_dir="$work/second"
    # The same values; each line's comment says where its value came from, which differs.
    diff <(grep -v '^output_dir' "$work/first/config.resolved.ini" | sed 's/  #.*//') \
      <(grep -v '^output_dir' "$work/second/config.resolved.ini" | sed 's/  #.*//') ||
      fail "a rerun from the resolved config resolves differently"
    grep -qx 'lr = 2e-05  # command line: peak learning rate' "$work/first/config.resolved.ini" ||
      fail "the first run's lr does not name the command line"
    grep -qE "^lr = 2e-05  # $work/first/config.resolved.ini:[0-9]+: peak learning rate$" \
      "$work/second/config.resolved.ini" || fail "the rerun's lr does not name the file and line"
    ;;
  config_error_names_line)
    printf '[optim]\nlr = 1e-4\n\n[train]\nmicro_bach = 2\n' >"$work/bad.ini"
    run --exit 2 "$bin" train --config "$work/bad.ini" --dry-run --train.output_dir="$work/run"
    expect_output "$work/bad.ini:5: unknown key 'train.micro_bach'. Did you mean train.micro_batch\?"
    [ ! -e "$work/run" ] || fail "a failed parse created the run directory"
    ;;
  startup_timeout_named)
    # The start-up deadline comes from the environment (no config is read before MPI starts):
    # a bad value names the variable and the fix; a good one lets the command run.
    run --exit 2 env SHARDTUNE_STARTUP_TIMEOUT_S=soon "$bin" train --config "$ST_SOURCE_DIR/examples/demo.ini" \
      --train.output_dir="$work/run"
    expect_output "SHARDTUNE_STARTUP_TIMEOUT_S='soon' is not a positive number of seconds. set it to e.g. 300"
    [ ! -e "$work/run" ] || fail "a rejected start-up setting created the run directory"
    run --exit 2 env SHARDTUNE_STARTUP_TIMEOUT_S=-5 "$bin" env
    expect_output "SHARDTUNE_STARTUP_TIMEOUT_S='-5' is not a positive number"
    run --exit 0 env SHARDTUNE_STARTUP_TIMEOUT_S=30 "$bin" env
    expect_output 'shardtune env: 1 rank'
    ;;
  validation_error_two_ranks)
    run --exit 2 "$mpiexec" -np 2 "$bin" train --dry-run --train.output_dir="$work/run" \
      --train.micro_batch=4 --train.grad_accum=8 --train.global_batch=256
    expect_output 'train.micro_batch\(4\) x train.grad_accum\(8\) x ranks\(2\) = 64 != train.global_batch\(256\) \(command line\)'
    [ ! -e "$work/run" ] || fail "a rejected config created the run directory"
    ;;
  bad_output_dir_keeps_nothing)
    synth_data --dir "$work/data"
    data=(--data.train="$work/data/train")
    mkdir -p "$work/ro"
    echo 'keep me' >"$work/ro/config.resolved.ini"
    chmod 500 "$work/ro"
    if [ "$(id -u)" -eq 0 ]; then
      # root ignores permissions; use a path under a regular file instead
      run --exit 1 "$bin" train --dry-run --train.output_dir="$work/ro/config.resolved.ini/sub" "${data[@]}"
    else
      run --exit 1 "$bin" train --dry-run --train.output_dir="$work/ro" "${data[@]}"
    fi
    expect_output 'train.output_dir'
    [ "$(cat "$work/ro/config.resolved.ini")" = 'keep me' ] || fail "existing output was changed"
    chmod 700 "$work/ro"
    ;;
  nccl_without_gpu_refused)
    if "$bin" --version | grep -q 'libtorch: .*(CUDA)'; then
      echo "SKIP: this libtorch has CUDA"; exit 0
    fi
    run --exit 2 "$mpiexec" -np 2 "$bin" train --dry-run --train.output_dir="$work/run" --dist.backend=nccl
    expect_output 'dist.backend = nccl cannot be used: rank 0: .*Set dist.backend = mpi'
    [ ! -e "$work/run" ] || fail "a refused backend left a run directory"
    ;;
  missing_dependency_named)
    # Configure with Boost hidden: the error must name the Debian package to install.
    run --exit 1 cmake -S "$ST_SOURCE_DIR" -B "$work/build" -DST_BUILD_TESTS=OFF \
      -DCMAKE_DISABLE_FIND_PACKAGE_Boost=ON
    out=$(tr -s ' \n' '  ' <<<"$out")  # CMake wraps long messages
    expect_output 'Boost.Program_options >= 1.71 not found.'
    expect_output 'Install libboost-program-options-dev'
    ;;
  *) fail "unknown case" ;;
esac
echo "PASS [$case_name]"
