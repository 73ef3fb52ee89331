# ci/gpu_check.sh's `mpi` part (sourced by it, with its helpers and variables).
# NCCL bootstrapped over MPI (Note [processes and ranks]): tr-train under
# mpirun with the collectives forced must hold the plain binary's bits
# (--state-hash), in every mode; with several GPUs, N processes must hold N
# rank threads' bits. ci/pack_mpi.sh packs Open MPI where the machine has none.
find_mpirun
if [ -z "$MPIRUN" ]; then
  note "mpi part skipped: no mpirun (ci/pack_mpi.sh packs one)"
else
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  note "mpi: $("$MPIRUN" --version 2>&1 | head -1), $gpus GPU(s)"
  hashes=()
  for m in cnn resnet18; do
    args=(--device cuda --model $m --synthetic --train-subset 2048 --val-subset 512 --batch 256 --epochs 2 --amp
          --force-collectives --state-hash --watchdog-ms 60000)
    [ $m = resnet18 ] && args+=(--width 0.5)
    for mode in eager partial-capture full-capture; do
      timeout ${TR_T_MPI:-200} "$BIN/tr-train" "${args[@]}" --mode $mode > "$OUT/mpi_plain_${m}_$mode.log" 2>&1 || status=1
      timeout ${TR_T_MPI:-200} "$MPIRUN" --bind-to none -np 1 "$BIN/tr-train" "${args[@]}" --mode $mode \
        > "$OUT/mpi_np1_${m}_$mode.log" 2>&1 || status=1
      a=$(grep -o 'state hash 0x[0-9a-f]*' "$OUT/mpi_plain_${m}_$mode.log")
      b=$(grep -o 'state hash 0x[0-9a-f]*' "$OUT/mpi_np1_${m}_$mode.log")
      note "mpi: $m $mode: plain $a, mpirun -np 1 $b"
      grep -m1 'rank(s)' "$OUT/mpi_np1_${m}_$mode.log" | tee -a "$OUT/summary.txt"
      { [ -n "$a" ] && [ "$a" = "$b" ]; } || { status=1; note "mpi: $m $mode: the state differs (or a run failed)"; }
      hashes+=("$m $b")
    done
    if [ "$gpus" -ge 2 ]; then
      timeout ${TR_T_MPI:-200} "$BIN/tr-train" "${args[@]}" --gpus $gpus > "$OUT/mpi_threads_${m}_x$gpus.log" 2>&1 || status=1
      timeout ${TR_T_MPI:-200} "$MPIRUN" --bind-to none -np $gpus "$BIN/tr-train" "${args[@]}" \
        > "$OUT/mpi_procs_${m}_x$gpus.log" 2>&1 || status=1
      a=$(grep -o 'state hash 0x[0-9a-f]*' "$OUT/mpi_threads_${m}_x$gpus.log")
      b=$(grep -o 'state hash 0x[0-9a-f]*' "$OUT/mpi_procs_${m}_x$gpus.log")
      note "mpi: $m on $gpus GPUs: $gpus rank threads $a, $gpus processes $b"
      { [ -n "$a" ] && [ "$a" = "$b" ]; } || { status=1; note "mpi: $m: processes and threads differ"; }
    fi
  done
  # The modes among themselves, per model.
  for m in cnn resnet18; do
    n=$(printf '%s\n' "${hashes[@]}" | grep "^$m " | sort -u | wc -l)
    note "mpi: $m: $n distinct state hash(es) over eager, partial and full capture (1 expected)"
    [ "$n" -eq 1 ] || status=1
  done
  # The GPU equivalence tests as processes (tests/mpi/gpu_training_mpi_test.cpp):
  # one process per GPU, and two GPUs per process where there are four or more.
  if [ -x "$BIN/tr_mpi_tests" ]; then
    layouts="$gpus:1"
    [ "$gpus" -ge 4 ] && layouts+=" $((gpus / 2)):2"
    for l in $layouts; do
      np=${l%%:*} per=${l##*:}
      probe ${TR_T_MPI:-200} "$OUT/mpi_gpu_tests_np${np}x$per.log" "$MPIRUN" --bind-to none -np $np \
        -x TR_MPI_LOCAL_RANKS=$per -x TR_REQUIRE_GPU "$BIN/tr_mpi_tests" --gtest_filter='GpuProcesses*'
      rc=$?
      [ $rc -ne 0 ] && status=1
      note "mpi: GPU equivalence tests as $np process(es) x $per GPU(s) (exit $rc)"
      grep -E '^\[ gpu mpi|PASSED|FAILED|SKIPPED|Failure' "$OUT/mpi_gpu_tests_np${np}x$per.log" | sort -u \
        | tee -a "$OUT/summary.txt"
    done
  else
    note "mpi: no tr_mpi_tests in $BIN (packed with TR_PACK_SKIP leaving it out?)"
  fi
  timeout ${TR_T_MPI:-200} "$MPIRUN" --bind-to none -np 1 "$BIN/tr-bench" --device cuda --mode all --model cnn \
    --batch 256 --warmup 10 --iters 30 --repetitions 3 --json "$OUT/mpi_bench_np1.json" > "$OUT/mpi_bench_np1.log" 2>&1 || status=1
  note "mpi: tr-bench under mpirun -np 1:"
  grep -E '^tr-bench: |^cnn ' "$OUT/mpi_bench_np1.log" | tee -a "$OUT/summary.txt"
fi
