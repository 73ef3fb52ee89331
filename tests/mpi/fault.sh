#!/usr/bin/env bash
# fault.sh BIN_DIR stall|kill: two tr-train processes under mpirun; once they
# train, process 1 is stopped (SIGSTOP: a stalled rank) or killed (SIGKILL: a
# dead one). The job must end with a non-zero exit within the watchdog time
# (2 s) plus the launcher's own reaction, never hang: the limit is 30 s.
set -uo pipefail
bin=$1 fault=$2
source "$(dirname "$0")/mpi_env.sh"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"${MPIRUN[@]}" -np 2 "$bin/tr-train" --model mlp --device cpu --synthetic --train-subset 20000 --val-subset 200 \
  --batch 200 --epochs 100 --watchdog-ms 2000 >"$log" 2>&1 &
job=$!
for _ in $(seq 600); do grep -q '^epoch' "$log" && break; sleep 0.1; done
grep -q '^epoch' "$log" || { echo "fault.sh: training did not start"; cat "$log"; kill -9 $job; exit 1; }
victim=""
for p in $(pgrep -P $job); do
  if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1'; then victim=$p; fi
done
[ -n "$victim" ] || { echo "fault.sh: no process with OMPI_COMM_WORLD_RANK=1 among mpirun's children"; kill -9 $job; exit 1; }
t0=$(date +%s%N)
if [ "$fault" = stall ]; then kill -STOP "$victim"; else kill -KILL "$victim"; fi
# The limit: a hang is killed here and fails the test.
for _ in $(seq 300); do kill -0 $job 2>/dev/null || break; sleep 0.1; done
if kill -0 $job 2>/dev/null; then
  echo "fault.sh: still running 30 s after the $fault: a hang"
  kill -9 $job "$victim" 2>/dev/null
  cat "$log"
  exit 1
fi
wait $job
rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
echo "fault.sh: $fault of process 1 (pid $victim): mpirun exited $rc after $ms ms"
grep -E 'error|watchdog|exited|signal|MPI_ABORT' "$log" | head -8
[ $rc -ne 0 ] || { echo "fault.sh: exit 0 after a $fault"; exit 1; }
if [ "$fault" = stall ]; then
  grep -q "watchdog: process 0 of 2 waited 2000 ms in .*: process 1 did not answer within 1000 ms" "$log" ||
    { echo "fault.sh: process 0 did not name process 1 as the one that stalled"; cat "$log"; exit 1; }
fi
echo "fault.sh: ok"
