#!/usr/bin/env bash
# kill -9 loop (issue 16): 2 ranks under mpirun train with checkpoints every 2 steps, alternately sync and
# async, and are killed at seeded random points: inside a named save phase (the test hook
# FACTORYBENCH_TEST_CKPT_PAUSE holds the save there; FACTORYBENCH_TEST_CKPT_MARK says when it got there) or
# after a random delay. Before every resume an independent judge (tests/tools/checkpoint_oracle.py) names
# the newest whole checkpoint; the resume must restore exactly that one, never step 0 while one existed,
# and once `--keep 2` checkpoints existed, 2 must exist after every kill.
# FB_KILL_SEED=N reruns one sequence; FB_KILL_POINTS=N sets the number of kills (default 52).
. "$(dirname "$0")/../lib.sh"
set -e

SEED=${FB_KILL_SEED:-$(( $(date +%s) % 100000 ))}
POINTS=${FB_KILL_POINTS:-52}
echo "kill loop seed $SEED ($POINTS kill points; rerun with FB_KILL_SEED=$SEED)"
RANDOM=$SEED
RUN=$T/run
ORACLE=$FB_SOURCE_DIR/tests/tools/checkpoint_oracle.py
export FACTORYBENCH_TEST_CKPT_PAUSE="snapshot=0.03,shard=0.12,manifest=0.12,prune=0.12"
export FACTORYBENCH_TEST_CKPT_MARK=$T/marks
PHASES=(snapshot shard manifest prune time shard)
declare -A KILLS=()
max_whole=0
restored_list=()

rank_pid() {  # MPIRUN_PID RANK: the pid of that rank (a child of mpirun), from its environment
  local p
  for p in $(pgrep -P "$1" || true); do
    if tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$2"; then echo "$p"; return; fi
  done
}

for i in $(seq 1 "$POINTS"); do
  read -r expect whole < <("$PY" "$ORACLE" "$RUN/checkpoints" 2)
  [ "$whole" -lt "$max_whole" ] && fail "kill $((i - 1)): $whole whole checkpoint(s) left, $max_whole before (--keep 2)"
  [ "$whole" -gt "$max_whole" ] && max_whole=$(( whole > 2 ? 2 : whole ))
  mode=sync; args=()
  if (( i % 2 == 0 )); then mode=async; args=(--async-checkpoint); fi
  : > "$T/marks"
  FB_ATTEMPT=$i mpirun --oversubscribe -np 2 "$FACTORYBENCH" train --backend host --model tiny-dense --layers 1 \
    --steps 100000 --warmup-steps 0 --checkpoint-every 2 --keep 2 --hang-timeout 120s --run-dir "$RUN" --resume \
    "${args[@]}" > "$T/attempt-$i.log" 2>&1 &
  mpi=$!
  # The resume decision first (the restore event of this attempt), then the kill point.
  restored=""
  for _ in $(seq 1 1200); do
    restored=$("$PY" - "$RUN/events.jsonl" "$i" <<'PYEOF' 2>/dev/null || true
import json, sys
for line in open(sys.argv[1]):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if e.get("type") == "ckpt_restore_end" and e.get("attempt") == int(sys.argv[2]):
        print(e["step"])
PYEOF
)
    [ -n "$restored" ] && break
    kill -0 "$mpi" 2>/dev/null || break
    sleep 0.05
  done
  if [ -z "$restored" ]; then
    cat "$T/attempt-$i.log" >&2
    kill -9 "$mpi" $(pgrep -P "$mpi" || true) 2>/dev/null || true
    die "attempt $i ($mode): no restore event"
  fi
  restored_list+=("$restored")
  if [ "$restored" != "$expect" ]; then
    fail "attempt $i ($mode): resumed from step $restored, the newest whole checkpoint is step $expect"
  elif [ "$expect" -eq 0 ] && [ "$whole" -gt 0 ]; then
    fail "attempt $i ($mode): started from zero with $whole whole checkpoint(s) present"
  fi
  phase=${PHASES[((i - 1) / 2) % ${#PHASES[@]}]}  # each mode meets every phase in turn; the rest is random
  victim=$(( RANDOM % 2 ))
  if [ "$phase" = time ]; then
    delay_ms=$(( 50 + RANDOM % 1500 ))
    sleep "$(printf '%d.%03d' $((delay_ms / 1000)) $((delay_ms % 1000)))"
    point="after ${delay_ms} ms"
  else
    nth=$(( 1 + RANDOM % 3 ))
    # prune and manifest run on rank 0 only: the paused rank is the one killed.
    for _ in $(seq 1 750); do  # 15 s: a resume reaches its saves in about 1 s alone, far later on a loaded host
      line=$(grep "^$phase " "$T/marks" | sed -n "${nth}p" || true)
      [ -n "$line" ] && break
      sleep 0.02
    done
    if [ -n "$line" ]; then
      victim=${line##* }
      point="in $phase (${line% *}, occurrence $nth)"
    else
      point="no $phase within 15 s, killed then"
      phase=time
    fi
  fi
  pid=$(rank_pid "$mpi" "$victim")
  [ -n "$pid" ] || { cat "$T/attempt-$i.log" >&2; die "attempt $i: rank $victim not found"; }
  kill -9 "$pid"
  KILLS[$mode-$phase]=$(( ${KILLS[$mode-$phase]:-0} + 1 ))
  echo "attempt $i ($mode) resumed from $restored (expected $expect, $whole whole); kill -9 rank $victim $point"
  for _ in $(seq 1 300); do kill -0 "$mpi" 2>/dev/null || break; sleep 0.05; done
  left=$(pgrep -P "$mpi" || true)
  kill -9 "$mpi" $left 2>/dev/null || true
  wait "$mpi" 2>/dev/null || true
done
read -r expect whole < <("$PY" "$ORACLE" "$RUN/checkpoints" 2)
[ "$whole" -lt "$max_whole" ] && fail "after the last kill: $whole whole checkpoint(s), $max_whole before"
echo "kill points by mode-phase: $(for k in "${!KILLS[@]}"; do printf '%s=%s ' "$k" "${KILLS[$k]}"; done)"
[ "${#restored_list[@]}" -eq "$POINTS" ] && ok "$POINTS resumes checked against the judge" || fail "only ${#restored_list[@]} resumes"
for m in sync async; do
  for p in snapshot shard manifest prune; do
    [ "${KILLS[$m-$p]:-0}" -gt 0 ] && ok "$m saves: ${KILLS[$m-$p]} kill(s) inside $p" || fail "$m saves: no kill landed inside $p"
  done
done
"$PY" -c "import sys; s=[int(x) for x in sys.argv[1:]]; sys.exit(0 if max(s) > 0 else 1)" "${restored_list[@]}" \
  && ok "resumes made progress (newest restored step $(printf '%s\n' "${restored_list[@]}" | sort -n | tail -1))" \
  || fail "no resume ever found a checkpoint"
finish
