#!/usr/bin/env bash
# run_slurm.sh BIN_DIR: the tools under a real Slurm. Starts munge, slurmctld
# and slurmd on this machine with a throwaway configuration (one node, no
# systemd, no cgroups, ports of its own, everything under one temporary
# folder), then checks:
#   1. `srun --mpi=pmix -n 2 tr-train --state-hash` gives the bits of
#      `mpirun -np 2` and of two rank threads;
#   2. `srun` runs tr-bench, whose report names the launcher (`srun`);
#   3. an sbatch script whose srun is given --cpus-per-task explicitly, as
#      ci/sbatch_2x8.sh does (Slurm 22.05 to 23.02 do not pass it on), gives
#      the same bits;
#   4. a task killed with SIGKILL ends the step within 30 s, non-zero;
#   5. the lines of a running step reach srun's output while it runs (stdout
#      is line-buffered), and stay there after the step is cancelled.
# Exits 77 (ctest: skipped) where Slurm or munge is not installed or this is
# not root (slurmd must be); ci/setup.sh installs them.
set -uo pipefail
bin=$(cd "$1" && pwd)
for t in munged slurmctld slurmd srun sbatch scancel sinfo mpirun; do
  command -v "$t" >/dev/null || { echo "run_slurm.sh: skipped: $t is not installed"; exit 77; }
done
[ "$(id -u)" -eq 0 ] || { echo "run_slurm.sh: skipped: slurmd must run as root"; exit 77; }

dir=$(mktemp -d /tmp/tr_slurm.XXXXXX)  # short: a socket path has at most 107 bytes
node=$(hostname -s)
port=$((20000 + $$ % 20000))
cleanup() {
  for p in "$dir"/slurmctld.pid "$dir"/slurmd.pid "$dir"/munged.pid; do
    [ -f "$p" ] && kill "$(cat "$p")" 2>/dev/null
  done
  sleep 1
  for p in "$dir"/slurmctld.pid "$dir"/slurmd.pid "$dir"/munged.pid; do
    [ -f "$p" ] && kill -9 "$(cat "$p")" 2>/dev/null
  done
  rm -rf "$dir"
}
trap cleanup EXIT
fail() {
  echo "run_slurm.sh: FAILED: $*"
  for f in "$dir"/*.log; do echo "--- $f"; tail -20 "$f"; done
  exit 1
}

# munge: a fresh key, its own socket.
mkdir -p "$dir/munge" "$dir/state" "$dir/spool"
chmod 711 "$dir" "$dir/munge"
head -c 1024 /dev/urandom >"$dir/munge/munge.key"
chmod 400 "$dir/munge/munge.key"
munged -f --key-file="$dir/munge/munge.key" --socket="$dir/munge/sock" --log-file="$dir/munged.log" \
  --pid-file="$dir/munged.pid" --seed-file="$dir/munge/seed" || fail "munged did not start"

cat >"$dir/slurm.conf" <<EOF
ClusterName=trci
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/sock
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
KillWait=5
NodeName=$node NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=ci Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
EOF
export SLURM_CONF=$dir/slurm.conf
slurmctld -f "$SLURM_CONF" -c || fail "slurmctld did not start"
slurmd -f "$SLURM_CONF" -N "$node" || fail "slurmd did not start"
for _ in $(seq 300); do sinfo -h -o %t 2>/dev/null | grep -q idle && break; sleep 0.1; done
sinfo -h -o %t | grep -q idle || fail "the node did not come up"
echo "run_slurm.sh: Slurm $(sinfo -V | cut -d' ' -f2) up on $node (ports $port, $((port + 1)))"

# As tests/mpi/mpi_env.sh: one OpenBLAS thread (the same GEMM paths in
# processes and threads), no single-copy shared memory in a container.
export OPENBLAS_NUM_THREADS=1 OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1
mpirun=(mpirun --bind-to none)
[ "$(id -u)" -eq 0 ] && mpirun+=(--allow-run-as-root)
train=(--device cpu --model mlp --width 0.25 --synthetic --train-subset 2000 --val-subset 200 --batch 200
       --epochs 2 --state-hash)
hash_of() { grep -o 'state hash 0x[0-9a-f]*' <<<"$1"; }

# 1. The same bits under srun, mpirun and rank threads.
out=$(timeout 120 srun --mpi=pmix -n 2 "$bin/tr-train" "${train[@]}" 2>&1) || fail "srun tr-train: $out"
grep -q "2 rank(s) in 2 processes" <<<"$out" || fail "srun did not start 2 processes: $out"
h_srun=$(hash_of "$out")
h_mpirun=$(hash_of "$(timeout 120 "${mpirun[@]}" -np 2 "$bin/tr-train" "${train[@]}" 2>&1)")
h_threads=$(hash_of "$("$bin/tr-train" "${train[@]}" --ranks 2 2>&1)")
echo "run_slurm.sh: srun: $h_srun; mpirun: $h_mpirun; threads: $h_threads"
[ -n "$h_srun" ] && [ "$h_srun" = "$h_mpirun" ] && [ "$h_srun" = "$h_threads" ] || fail "the state hashes differ"

# 2. tr-bench under srun: one report, naming the launcher.
timeout 120 srun --mpi=pmix -n 2 "$bin/tr-bench" --device cpu --model mlp --width 0.25 --batch 32 --mode eager \
  --variants train_base --warmup 0 --iters 2 --repetitions 1 --json "$dir/bench.json" >"$dir/bench.log" 2>&1 ||
  fail "srun tr-bench: $(cat "$dir/bench.log")"
python3 - "$dir/bench.json" <<'PY' || fail "the report's context"
import json, sys
c = json.load(open(sys.argv[1]))["context"]
assert (c["launcher"], c["launch"], c["processes"]) == ("srun", "processes", 2), (c["launcher"], c["launch"], c["processes"])
print(f"run_slurm.sh: tr-bench report: launcher {c['launcher']}, launch {c['launch']}, {c['processes']} processes")
PY

# 3. sbatch, its srun given --cpus-per-task as ci/sbatch_2x8.sh gives it.
cat >"$dir/job.sh" <<EOF
#!/bin/bash
#SBATCH --ntasks=2
#SBATCH --cpus-per-task=1
#SBATCH --output=$dir/job.out
srun --mpi=pmix --cpus-per-task="\$SLURM_CPUS_PER_TASK" "$bin/tr-train" ${train[*]}
EOF
job=$(sbatch --parsable "$dir/job.sh") || fail "sbatch"
for _ in $(seq 1200); do squeue -h -j "$job" 2>/dev/null | grep -q . || break; sleep 0.1; done
h_batch=$(hash_of "$(cat "$dir/job.out" 2>/dev/null)")
echo "run_slurm.sh: sbatch job $job: $h_batch"
[ "$h_batch" = "$h_srun" ] || fail "the batch job's hash differs: $(cat "$dir/job.out")"

# 4 and 5: long runs; their lines must show while they run.
long=(--device cpu --model mlp --width 0.25 --synthetic --train-subset 20000 --val-subset 200 --batch 200
      --epochs 1000 --watchdog-ms 3000)
wait_for_epoch() {  # LOG PID: until the log shows a finished epoch (line-buffered output)
  for _ in $(seq 600); do
    grep -qE '^ +1 ' "$1" && return 0
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

# 4. A task killed with SIGKILL.
timeout 120 srun --mpi=pmix -n 2 "$bin/tr-train" "${long[@]}" >"$dir/kill.log" 2>&1 &
step=$!
wait_for_epoch "$dir/kill.log" $step || fail "no epoch line while the step runs: $(cat "$dir/kill.log")"
victim=""
for p in $(pgrep -f "$bin/tr-train"); do
  tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx 'SLURM_PROCID=1' && victim=$p
done
[ -n "$victim" ] || fail "no task with SLURM_PROCID=1"
t0=$(date +%s%N)
kill -9 "$victim"
for _ in $(seq 300); do kill -0 $step 2>/dev/null || break; sleep 0.1; done
kill -0 $step 2>/dev/null && fail "the step still runs 30 s after a task was killed"
wait $step
rc=$?
echo "run_slurm.sh: a killed task ended the step in $(( ($(date +%s%N) - t0) / 1000000 )) ms, srun exit $rc"
[ $rc -ne 0 ] || fail "srun exited 0 after a task was killed"

# 5. A cancelled step keeps what it printed. The cnn's first epoch takes
# about 20 s here (several seconds on any CPU), so the step is cancelled in
# it: the header lines before it reach the log only if stdout is
# line-buffered (the epoch lines flush, the header does not).
slow=(--device cpu --model cnn --synthetic --train-subset 6000 --val-subset 200 --batch 200 --epochs 10)
timeout 120 srun --mpi=pmix -n 2 -J tr-cancel "$bin/tr-train" "${slow[@]}" >"$dir/cancel.log" 2>&1 &
step=$!
for _ in $(seq 600); do grep -q '^tr-train: model cnn' "$dir/cancel.log" && break; sleep 0.1; done
grep -q '^tr-train: model cnn' "$dir/cancel.log" || fail "the header did not show while the step ran (block-buffered?)"
scancel -n tr-cancel
for _ in $(seq 300); do kill -0 $step 2>/dev/null || break; sleep 0.1; done
kill -0 $step 2>/dev/null && fail "the step still runs 30 s after scancel"
wait $step
grep -qE '^ +1 ' "$dir/cancel.log" && fail "the first epoch ended before the cancel: nothing was shown"
grep -q '^tr-train: model cnn' "$dir/cancel.log" || fail "the cancelled step lost its lines: $(cat "$dir/cancel.log")"
echo "run_slurm.sh: a step cancelled in its first epoch kept its $(grep -c '^tr-train:' "$dir/cancel.log") header lines"
echo "run_slurm.sh: ok"
