# ci/gpu_check.sh's `sanitize` part (sourced by it, with its helpers and variables).
# compute-sanitizer over the shipped code paths: every tool on every model in
# fp32, fp16 AMP and bf16, one epoch of synthetic data, run in parallel (the
# tools are CPU-bound). Per tool and model
# (ci/gpu_check/sanitize_jobs.sh lists them):
#   full capture in fp32, amp and bf16, with programmatic dependent launch (the
#   default) and weight gradients on a side stream (--side-streams);
#   eager and partial capture in amp; full capture in amp with --no-pdl;
#   full capture in amp with --grid-sync (the BatchNorm models);
# and every case of the op table in every dtype it has (each op's kernels,
# tr's own and the library calls, at the shapes of its cases). Sizes: two training steps of 32
# images (zoo models at 1/8 width, 32x32; the cnn at 1/4 width) or, for
# gpt2-d6 at full width, of 16 windows of 128 tokens, and half as many to
# validate; racecheck and synccheck one step and a quarter, and in the model
# runs only tr's own kernels (sanitize_one.sh says why; TR_SAN_ALL_KERNELS=1:
# every kernel). memcheck checks leaks too (--leak-check full).
# TR_SAN_TOOLS picks tools, TR_SAN_MODELS models, TR_SAN_ONLY runs by name; TR_T_SAN bounds each run
# (default 300 s). memcheck and initcheck run TR_SAN_JOBS at a time (default
# 12); racecheck and synccheck, which hold far more memory a process,
# TR_SAN_RACE_JOBS (default 4), and gpt2-d6's alone (below). Every run's summary line goes
# to the summary; any error, leak or timeout fails the check.
CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)
if [ -z "$CS" ]; then
  note "compute-sanitizer not found: sanitize part skipped"
else
  SAN_DIR=$OUT/sanitize
  mkdir -p "$SAN_DIR"
  TR_SAN_TOOLS=${TR_SAN_TOOLS:-memcheck initcheck synccheck racecheck} \
    TR_SAN_MODELS=${TR_SAN_MODELS:-mlp cnn resnet18 resnet50 vgg16bn gpt2-d6} \
    bash ci/gpu_check/sanitize_jobs.sh > "$SAN_DIR/jobs.txt"
  # TR_SAN_ONLY: an extended regular expression; only the runs whose names it matches (the rest of a matrix that
  # one call did not finish, e.g. 'racecheck_(resnet18|gpt2-d6)_|racecheck_resnet50_.*_(amp|bf16)').
  if [ -n "${TR_SAN_ONLY:-}" ]; then
    awk -v re="$TR_SAN_ONLY" '$1 ~ re' "$SAN_DIR/jobs.txt" > "$SAN_DIR/jobs.only"
    mv "$SAN_DIR/jobs.only" "$SAN_DIR/jobs.txt"
    [ -s "$SAN_DIR/jobs.txt" ] || { note "compute-sanitizer: TR_SAN_ONLY='$TR_SAN_ONLY' matches no run"; status=1; }
  fi
  note "compute-sanitizer: $(wc -l < "$SAN_DIR/jobs.txt") runs: memcheck and initcheck ${TR_SAN_JOBS:-12} at a time, racecheck and synccheck ${TR_SAN_RACE_JOBS:-4}"
  # One job per line: NAME TOOL PROGRAM ARGS... (sanitize_one.sh runs it).
  grep -E '^[^ ]+ (memcheck|initcheck) ' "$SAN_DIR/jobs.txt" |
    CS=$CS BIN=$BIN SAN_DIR=$SAN_DIR xargs -r -P "${TR_SAN_JOBS:-12}" -L 1 bash ci/gpu_check/sanitize_one.sh
  grep -E '^[^ ]+ (racecheck|synccheck) ' "$SAN_DIR/jobs.txt" | grep -v '_gpt2-d6_' |
    CS=$CS BIN=$BIN SAN_DIR=$SAN_DIR xargs -r -P "${TR_SAN_RACE_JOBS:-4}" -L 1 bash ci/gpu_check/sanitize_one.sh
  # gpt2-d6 under racecheck: six at once on a 128 GiB machine were killed one after another (status 137, most
  # likely for host memory) before training began, and one alone ran past 200 s. So
  # they run TR_SAN_GPT_RACE_JOBS at a time (default 1), each up to TR_T_SAN_GPT seconds (default 900).
  grep -E '^[^ ]+ (racecheck|synccheck) ' "$SAN_DIR/jobs.txt" | grep '_gpt2-d6_' |
    CS=$CS BIN=$BIN SAN_DIR=$SAN_DIR TR_T_SAN=${TR_T_SAN_GPT:-900} xargs -r -P "${TR_SAN_GPT_RACE_JOBS:-1}" -L 1 \
      bash ci/gpu_check/sanitize_one.sh
  # Each run left NAME.result: "NAME (exit RC): summary lines"; a run that
  # failed or left none fails the check.
  while read -r name _; do
    if [ -f "$SAN_DIR/$name.result" ]; then
      line=$(cat "$SAN_DIR/$name.result")
    else
      line="$name: no result"
    fi
    echo "$line" >> "$SAN_DIR/summary.txt"
    [[ $line == *"(exit 0):"* ]] || status=1
  done < "$SAN_DIR/jobs.txt"
  note "compute-sanitizer: $(grep -c '(exit 0):' "$SAN_DIR/summary.txt") of $(wc -l < "$SAN_DIR/jobs.txt") runs clean"
  tee -a "$OUT/summary.txt" < "$SAN_DIR/summary.txt"
fi
