#!/usr/bin/env bash
# Ctrl-C or a scheduler's SIGTERM in the middle of a benchmark keeps what was measured (tools/interrupt_report.hpp):
# rank 0 prints the rows so far, writes -o with them plus a failed "interrupted" result, and the signal still ends
# the process (exit 128 + 15). Each run is stopped at a known point: the debug line that starts a later case,
# which comes after the earlier cases' results are kept. Under mpirun the signal goes to the ranks alone, as
# srun passes scancel's or a time limit's SIGTERM to every task.
. "$(dirname "$0")/../lib.sh"
cd "$T"

# wait_for FILE PATTERN: until a line of FILE matches PATTERN (300 s at most: 4 loaded ranks took 83 s to
# reach a size they reach in 4 s alone, and the run goes on meanwhile, so a long wait costs nothing).
wait_for() {
  local until=$((SECONDS + 300))
  while [ "$SECONDS" -lt "$until" ]; do
    grep -qE -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.05
  done
  return 1
}

# stop_at NAME PATTERN PID...: once NAME's stderr shows PATTERN, SIGTERM to the PIDs (the binary itself: `fb &`
# would be a subshell's PID).
stop_at() {
  local name=$1 pattern=$2; shift 2
  wait_for "$T/$name.err" "$pattern" || { cat "$T/$name.err" >&2; die "$name: never reached /$pattern/"; }
  kill -TERM "$@"
}

# --- collective alone: the sizes before 4 MiB are kept, the table of them printed ---
"$FACTORYBENCH" --log-level debug collective --backend host -b 1K -e 256M -n 200 -o "$T/coll.json" >"$T/coll.out" 2>"$T/coll.err" &
pid=$!
stop_at coll "^debug: allreduce 4194304 bytes" "$pid"
set +e; wait "$pid"; rc=$?; set -e
[ "$rc" -eq 143 ] && ok "collective: exit 143 (SIGTERM)" || fail "collective: exit $rc, expected 143"
grep -q "^error: collective: INTERRUPTED by SIGTERM$" "$T/coll.err" && grep -q "^report written to $T/coll.json$" "$T/coll.err" \
  && ok "collective: says it was interrupted and where the report is" || fail "collective: $(cat "$T/coll.err")"
rows=$(grep -cE "^ +[0-9]+ +[0-9]+ +fp32" "$T/coll.out" || true)
[ "$rows" -ge 12 ] && ok "collective: the $rows rows measured are printed" || fail "collective: $rows rows: $(cat "$T/coll.out")"
# Printed as measured, then finished by the signal: each size once, the footer and the line that says why.
[ "$(grep -cE "^ +1024 +256 +fp32" "$T/coll.out")" -eq 1 ] && grep -q "^# Wrong elements : 0 OK$" "$T/coll.out" \
  && grep -q "^# factorybench collective: stopped by a signal after the sizes above$" "$T/coll.out" \
  && ok "collective: each size printed once, then the footer and the signal's line" || fail "collective: $(cat "$T/coll.out")"
validate "$T/coll.json"
assert_json "$T/coll.json" "[r['name'] for r in d['results'] if r['status'] == 'ok'][:12] == ['allreduce/fp32/%d' % (1024 << i) for i in range(12)]" \
  "collective: the report keeps 1 KiB .. 2 MiB"
assert_json "$T/coll.json" "d['results'][-1]['name'] == 'interrupted' and d['results'][-1]['status'] == 'failed' and d['results'][-1]['params']['signal'] == 'SIGTERM' and 'finished_at' in d['run']" \
  "collective: ends with a failed 'interrupted' result"

# --- collective alone, SIGKILL (what a second Ctrl-C to mpirun amounts to, a scheduler after its grace time, the
# OOM killer): -o keeps the report so far, rewritten as sizes are measured (at most a twentieth of the time spent
# writing), with a failed "unfinished" result; each size was also printed as it was measured ---
"$FACTORYBENCH" --log-level debug collective --backend host -b 1K -e 256M -n 200 -o "$T/kill.json" >"$T/kill.out" 2>"$T/kill.err" &
pid=$!
wait_for "$T/kill.err" "^debug: allreduce 4194304 bytes" || { cat "$T/kill.err" >&2; die "kill: never reached 4 MiB"; }
kill -KILL "$pid"
set +e; wait "$pid"; rc=$?; set -e
[ "$rc" -eq 137 ] && ok "SIGKILL: exit 137" || fail "SIGKILL: exit $rc"
validate "$T/kill.json"
assert_json "$T/kill.json" "(n := len(d['results']) - 1) >= 1 and [(r['name'], r['status']) for r in d['results'][:n]] == [('allreduce/fp32/%d' % (1024 << i), 'ok') for i in range(n)] and (d['results'][n]['name'], d['results'][n]['status'], d['results'][n]['params']['test']) == ('unfinished', 'failed', 'unfinished') and d['results'][n]['error'] == 'did not finish: the job ended before the run did (killed or crashed): the results before it are kept'" \
  "SIGKILL: the report keeps the sizes saved before it, then a failed 'unfinished' result"
[ -z "$(ls "$T" | grep '\.tmp')" ] || fail "SIGKILL: a temporary file beside the report: $(ls "$T")"
sizes=$(grep -E "^ +[0-9]+ +[0-9]+ +fp32" "$T/kill.out" | awk '{print $1}' | head -12 | tr '\n' ' ')
[ "$sizes" = "1024 2048 4096 8192 16384 32768 65536 131072 262144 524288 1048576 2097152 " ] \
  && ok "SIGKILL: the log keeps the sizes measured before it" || fail "SIGKILL: printed '$sizes': $(cat "$T/kill.out")"

# --- collective on 2 ranks, SIGTERM to both (srun's way): rank 0 writes, the state files go ---
mkdir -p "$T/rd"
fb_mpirun 2 --log-level debug collective --backend host -b 1K -e 256M -n 200 --run-dir "$T/rd" -o "$T/coll2.json" \
  >"$T/coll2.out" 2>"$T/coll2.err" &
launcher=$!
wait_for "$T/coll2.err" "^\[rank 0\] debug: allreduce 4194304 bytes" || { cat "$T/coll2.err" >&2; die "coll2: never reached 4 MiB"; }
ranks=$(pgrep -f "^$FACTORYBENCH --log-level debug collective .*--run-dir $T/rd" | tr '\n' ' ')
[ "$(echo $ranks | wc -w)" -eq 2 ] || die "coll2: expected 2 ranks, found '$ranks'"
kill -TERM $ranks
set +e; wait "$launcher"; rc=$?; set -e
[ "$rc" -ne 0 ] && ok "2 ranks: the job failed ($rc)" || fail "2 ranks: exit 0"
validate "$T/coll2.json"
assert_json "$T/coll2.json" "[r['name'] for r in d['results'] if r['status'] == 'ok'][:12] == ['allreduce/fp32/%d' % (1024 << i) for i in range(12)] and d['results'][-1]['name'] == 'interrupted'" \
  "2 ranks: rank 0 kept 1 KiB .. 2 MiB and the interruption"
[ -z "$(ls -A "$T/rd")" ] && ok "2 ranks: no watchdog state left in --run-dir" || fail "2 ranks: left $(ls -R "$T/rd")"

# --- collective on 2 ranks, SIGTERM to rank 1 alone (a signal that misses rank 0): mpirun sees the rank end and
# tears the job down with SIGTERM to rank 0, which then writes what it measured ---
mkdir -p "$T/rd1"
fb_mpirun 2 --log-level debug collective --backend host -b 1K -e 256M -n 200 --run-dir "$T/rd1" -o "$T/coll1.json" \
  >"$T/coll1.out" 2>"$T/coll1.err" &
launcher=$!
wait_for "$T/coll1.err" "^\[rank 0\] debug: allreduce 4194304 bytes" || { cat "$T/coll1.err" >&2; die "coll1: never reached 4 MiB"; }
rank1=
for p in $(pgrep -f "^$FACTORYBENCH --log-level debug collective .*--run-dir $T/rd1"); do
  tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=1" && rank1=$p
done
[ -n "$rank1" ] || die "coll1: rank 1 not found"
kill -TERM "$rank1"
set +e; wait "$launcher"; rc=$?; set -e
[ "$rc" -ne 0 ] && ok "rank 1 signalled: the job failed ($rc)" || fail "rank 1 signalled: exit 0"
validate "$T/coll1.json"
assert_json "$T/coll1.json" "[r['name'] for r in d['results'] if r['status'] == 'ok'][:12] == ['allreduce/fp32/%d' % (1024 << i) for i in range(12)] and d['results'][-1]['name'] == 'interrupted' and d['results'][-1]['params']['signal'] == 'SIGTERM'" \
  "rank 1 signalled: rank 0 kept 1 KiB .. 2 MiB and the interruption"

# --- --split 2 on 4 ranks (tables printed whole, at the end or at the signal), one SIGTERM to mpirun ---
fb_mpirun 4 --log-level debug collective --backend host --split 2 -b 1K -e 256M -n 200 --hang-timeout 0 \
  -o "$T/split.json" >"$T/split.out" 2>"$T/split.err" &
launcher=$!
wait_for "$T/split.err" "^\[rank 0\] debug: allreduce 4194304 bytes" || { cat "$T/split.err" >&2; die "split: never reached 4 MiB"; }
kill -TERM $(pgrep -P "$launcher")
set +e; wait "$launcher"; set -e
head -1 "$T/split.out" | grep -q "^# factorybench collective: 4 rank(s), mpi engine, 200 iters after 5 warm-up, time = mean" \
  && [ "$(grep -cE "^# allreduce: 2 rank\(s\), fp32 \(group [01]: ranks" "$T/split.out")" -eq 2 ] \
  && [ "$(tail -1 "$T/split.out")" = "# factorybench collective: stopped by a signal after the sizes above" ] \
  && ok "--split: both groups' tables under the run's first line, then the signal's line" || fail "--split: $(cat "$T/split.out")"

# --- locate on 2 ranks (a p2p floor, so that their one link is judged), SIGTERM to mpirun in the bisection (the background fb_mpirun is a subshell: its child is
# mpirun), which passes it on to the ranks as it does Ctrl-C: the p2p matrix is kept and printed, no verdict ---
fb_mpirun 2 --log-level debug locate --backend host --scope rank --tests p2p,bisection --min-p2p-bw 0.001 --allreduce-size 64M \
  --iters 200 -o "$T/locate.json" >"$T/locate.out" 2>"$T/locate.err" &
launcher=$!
wait_for "$T/locate.err" "^\[rank 0\] debug: locate: bisection" || { cat "$T/locate.err" >&2; die "locate: never reached the bisection"; }
kill -TERM $(pgrep -P "$launcher")
set +e; wait "$launcher"; set -e
grep -q "^p2p bandwidth GB/s" "$T/locate.out" && ! grep -q "^locate: PASS" "$T/locate.out" \
  && ok "locate: the p2p matrix printed, no PASS" || fail "locate: $(cat "$T/locate.out")"
validate "$T/locate.json"
assert_json "$T/locate.json" "[(r['name'], r['status']) for r in d['results']] == [('p2p/rank/1048576', 'ok'), ('interrupted', 'failed')]" \
  "locate: the report keeps the p2p matrix and the interruption"

# --- gemm alone: the shapes before the fourth ---
"$FACTORYBENCH" --log-level debug gemm --backend host --m 64,96,128,1536 --n 1536 --k 1536 -n 200 -o "$T/gemm.json" \
  >"$T/gemm.out" 2>"$T/gemm.err" &
pid=$!
stop_at gemm "^debug: gemm fp32/1536x1536x1536" "$pid"
set +e; wait "$pid"; rc=$?; set -e
[ "$rc" -eq 143 ] && ok "gemm: exit 143" || fail "gemm: exit $rc"
grep -q "3 of 4 shape(s) measured before the signal" "$T/gemm.out" && [ "$(grep -cE "^fp32/(64|96|128)x1536x1536 .* ok$" "$T/gemm.out")" -eq 3 ] \
  && ok "gemm: the three shapes measured are printed" || fail "gemm: $(cat "$T/gemm.out")"
validate "$T/gemm.json"
assert_json "$T/gemm.json" "[(r['name'], r['status']) for r in d['results']] == [('fp32/64x1536x1536', 'ok'), ('fp32/96x1536x1536', 'ok'), ('fp32/128x1536x1536', 'ok'), ('interrupted', 'failed')]" \
  "gemm: the report keeps the three shapes and the interruption"
# SIGKILL at the same point: the report keeps the shapes saved (each usually took far longer than its save), and
# each shape was printed as it was measured.
"$FACTORYBENCH" --log-level debug gemm --backend host --m 64,96,128,1536 --n 1536 --k 1536 -n 200 -o "$T/gkill.json" \
  >"$T/gkill.out" 2>"$T/gkill.err" &
pid=$!
wait_for "$T/gkill.err" "^debug: gemm fp32/1536x1536x1536" || { cat "$T/gkill.err" >&2; die "gkill: never reached the fourth shape"; }
kill -KILL "$pid"
set +e; wait "$pid"; rc=$?; set -e
[ "$rc" -eq 137 ] && [ "$(grep -cE "^fp32/(64|96|128)x1536x1536 .* ok$" "$T/gkill.out")" -eq 3 ] \
  && ok "gemm, SIGKILL: the log keeps the three shapes" || fail "gemm, SIGKILL: exit $rc: $(cat "$T/gkill.out")"
assert_json "$T/gkill.json" "1 <= (n := len(d['results']) - 1) <= 3 and [(r['name'], r['status']) for r in d['results']] == [('fp32/64x1536x1536', 'ok'), ('fp32/96x1536x1536', 'ok'), ('fp32/128x1536x1536', 'ok')][:n] + [('unfinished', 'failed')]" \
  "gemm, SIGKILL: the report keeps the shapes saved before it (a pending save may miss the last), then 'unfinished'"
# SIGKILL inside the first shape: no figure yet, but the report says so, with the run's facts (written as the
# run began, once the backend and the peak were up).
"$FACTORYBENCH" --log-level debug gemm --backend host --m 1536 --n 1536 --k 1536 -n 200 -o "$T/gfirst.json" \
  >"$T/gfirst.out" 2>"$T/gfirst.err" &
pid=$!
wait_for "$T/gfirst.err" "^debug: gemm fp32/1536x1536x1536" || { cat "$T/gfirst.err" >&2; die "gfirst: never began"; }
kill -KILL "$pid"
set +e; wait "$pid"; rc=$?; set -e
[ "$rc" -eq 137 ] && ok "gemm, SIGKILL in the first shape: exit 137" || fail "gemm, SIGKILL in the first shape: exit $rc"
validate "$T/gfirst.json"
assert_json "$T/gfirst.json" "[(r['name'], r['status']) for r in d['results']] == [('unfinished', 'failed')] and d['run']['world_size'] == 1 and d['run']['hosts'] and d['system']['peak_tflops']" \
  "gemm, SIGKILL in the first shape: 'unfinished' and the run's facts"

# --- health alone: the verdict CI reads says why ---
"$FACTORYBENCH" --log-level debug health --backend host --gemm-size 2048 -o "$T/health.json" >"$T/health.out" 2>"$T/health.err" &
pid=$!
stop_at health "^debug: health: gemm$" "$pid"
set +e; wait "$pid"; rc=$?; set -e
[ "$rc" -eq 143 ] && ok "health: exit 143" || fail "health: exit $rc"
validate "$T/health.json"
assert_json "$T/health.json" "d['summary']['health']['verdict'] == 'fail' and d['summary']['health']['reason'].startswith('interrupted by SIGTERM')" \
  "health: verdict fail, the signal the reason"
# The checks before the GEMM are kept (the GEMM too if it ended before the signal landed), then the interruption.
assert_json "$T/health.json" "[r['name'] for r in d['results']][:4] == ['device/rank0', 'memory/rank0', 'ecc/rank0', 'row_remap/rank0'] and len(d['results']) in (5, 6) and d['results'][-1]['name'] == 'interrupted' and d['results'][-1]['error'].endswith('the checks before it are kept') and d['summary']['health']['checks_done'] in (4, 5)" \
  "health: the checks before the signal kept"
grep -qE "^rank 0 \(.*\): NOT FINISHED \([45] of 9 checks, none failed" "$T/health.out" \
  && grep -qE "^health: 1 rank\(s\): 0 pass, 0 warn, 0 fail, 1 not finished \([45] of 9 checks done\)$" "$T/health.out" \
  && ok "health: the console says the rank did not finish" || fail "health console: $(cat "$T/health.out")"

# --- attention alone: the shapes before the third ---
"$FACTORYBENCH" --log-level debug attention --backend host --seq 64,96,512 -n 100 -o "$T/attn.json" \
  >"$T/attn.out" 2>"$T/attn.err" &
pid=$!
stop_at attn "^debug: attention .*512" "$pid"
set +e; wait "$pid"; rc=$?; set -e
[ "$rc" -eq 143 ] && ok "attention: exit 143" || fail "attention: exit $rc"
grep -q "^# factorybench attention: 2 of 3 shape(s) measured before the signal$" "$T/attn.out" \
  && [ "$(grep -cE "^fp32/b1/s(64|96)/h4-kv2/d32 .* ok$" "$T/attn.out")" -eq 2 ] \
  && ok "attention: the two shapes measured are printed, once each" || fail "attention: $(cat "$T/attn.out")"
validate "$T/attn.json"
assert_json "$T/attn.json" "[r['status'] for r in d['results']] == ['ok', 'ok', 'failed'] and d['results'][-1]['name'] == 'interrupted'" \
  "attention: the report keeps the two shapes and the interruption"
# SIGKILL at the same point: the report keeps the two shapes, and each shape was printed as it was measured.
"$FACTORYBENCH" --log-level debug attention --backend host --seq 64,96,512 -n 100 -o "$T/akill.json" \
  >"$T/akill.out" 2>"$T/akill.err" &
pid=$!
wait_for "$T/akill.err" "^debug: attention .*512" || { cat "$T/akill.err" >&2; die "akill: never reached the third shape"; }
kill -KILL "$pid"
set +e; wait "$pid"; rc=$?; set -e
[ "$rc" -eq 137 ] && [ "$(grep -cE "^fp32/b1/s(64|96)/h4-kv2/d32 .* ok$" "$T/akill.out")" -eq 2 ] \
  && grep -q "^# engine: reference; FLOPs counted as Megatron counts them (causal halved)$" "$T/akill.out" \
  && ok "attention, SIGKILL: the log keeps the engine line and the two shapes" \
  || fail "attention, SIGKILL: exit $rc: $(cat "$T/akill.out")"
# The report so far is rewritten at most a twentieth of the time its writes take: on a loaded disk the second
# shape's may still be pending at the kill, so the report holds the shapes saved, in order, then 'unfinished'.
assert_json "$T/akill.json" "1 <= (n := len(d['results']) - 1) <= 2 and [(r['name'][:11], r['status']) for r in d['results'][:n]] == [('fp32/b1/s64', 'ok'), ('fp32/b1/s96', 'ok')][:n] and d['results'][-1]['name'] == 'unfinished'" \
  "attention, SIGKILL: the report keeps the shapes saved before it, then 'unfinished'"

# --- burnin alone: the verdict says why; SIGHUP this time (a closed terminal; a script's background job ignores
# SIGINT, and so does factorybench then) ---
"$FACTORYBENCH" --log-level debug burnin --backend host --duration 60s --check-interval 1s -o "$T/burnin.json" \
  >"$T/burnin.out" 2>"$T/burnin.err" &
pid=$!
wait_for "$T/burnin.err" "^debug: burnin: check 1/" || die "burnin: never reached check 1"
kill -HUP "$pid"
set +e; wait "$pid"; rc=$?; set -e
[ "$rc" -eq 129 ] && ok "burnin: exit 129 (SIGHUP)" || fail "burnin: exit $rc: $(cat "$T/burnin.err")"
validate "$T/burnin.json"
assert_json "$T/burnin.json" "d['summary']['burnin']['verdict'] == 'fail' and d['summary']['burnin']['reason'] == 'interrupted by SIGHUP before the run ended: the checks before it are kept' and d['results'][-1]['params']['signal'] == 'SIGHUP'" \
  "burnin: verdict fail, interrupted by SIGHUP"
# What it checked is kept: its node's result over the checks gathered (the reference and check 1 at least),
# the checks done and planned (60 at 1 s), and the console says the node is not finished, not that it passed.
assert_json "$T/burnin.json" "[(r['name'][:12], r['status']) for r in d['results']] == [('burnin/node/', 'ok'), ('interrupted', 'failed')] and len(d['results'][0]['extra']['ranks'][0]['checksums']) == d['summary']['burnin']['checks'] + 1 and 1 <= d['summary']['burnin']['checks'] < 60 and d['summary']['burnin']['checks_planned'] == 60" \
  "burnin: the node's checks so far are kept"
grep -qE "^node .*: NOT FINISHED \(no mismatch in [0-9]+ of 60 checks after the reference, 1 rank\(s\), .* TFLOP/s\)$" "$T/burnin.out" \
  && grep -qE "^burnin: FAIL \(stopped after [0-9]+ of 60 checks\)$" "$T/burnin.out" \
  && ok "burnin: the console says not finished" || fail "burnin console: $(cat "$T/burnin.out")"

# --- train alone: the result over the steps measured before the signal (MFU, step time), then "interrupted";
# SIGKILL: the same from the report so far, then "unfinished". Stopped once progress shows a step past warm-up ---
for sig in TERM KILL; do
  "$FACTORYBENCH" train --backend host --model tiny-dense --steps 100000 -o "$T/train$sig.json" >"$T/train$sig.out" 2>"$T/train$sig.err" &
  pid=$!
  wait_for "$T/train$sig.err" "^train: [0-9]+% \(step [0-9]*[3-9][0-9]*/" || { cat "$T/train$sig.err" >&2; die "train: no progress"; }
  sleep 0.5  # past the first write of the report so far
  kill "-$sig" "$pid"
  set +e; wait "$pid"; rc=$?; set -e
  want=$([ "$sig" = TERM ] && echo 143 || echo 137)
  [ "$rc" -eq "$want" ] && ok "train SIG$sig: exit $rc" || fail "train SIG$sig: exit $rc"
  validate "$T/train$sig.json"
  ending=$([ "$sig" = TERM ] && echo interrupted || echo unfinished)
  assert_json "$T/train$sig.json" "[(r['benchmark'], r['status']) for r in d['results']] == [('train', 'ok'), ('train', 'failed')] and d['results'][1]['name'] == '$ending'" \
    "train SIG$sig: the train result, then '$ending'"
  assert_json "$T/train$sig.json" "(m := d['results'][0]['metrics'])['steps_completed']['value'] >= 3 and m['step_time_s']['stats']['n'] == m['steps_completed']['value'] - 2 and 0 < m['mfu']['value'] < 1 and 'memory_allocated_bytes_per_rank' not in m and d['results'][0]['per_rank'] == {}" \
    "train SIG$sig: steps and MFU over the measured steps, nothing the ranks agree only at the end"
done
grep -q "^train: stopped by a signal; the steps measured before it:$" "$T/trainTERM.out" && grep -q "^MFU " "$T/trainTERM.out" \
  && grep -qE "^loss .*; memory estimate .* per rank$" "$T/trainTERM.out" \
  && ok "train SIGTERM: the result so far printed" || fail "train SIGTERM console: $(tail -12 "$T/trainTERM.out")"

# --- a suite: the steps before as they ran, this one interrupted, the rest not run ---
cat >"$T/suite.json" <<'JSON'
{"steps": [{"name": "quick", "command": "info"},
           {"name": "long", "command": "collective", "args": "-b 1K -e 256M -n 200"},
           {"name": "after", "command": "info"}]}
JSON
"$FACTORYBENCH" --log-level debug suite "$T/suite.json" --backend host -o "$T/suite-report.json" >"$T/suite.out" 2>"$T/suite.err" &
pid=$!
stop_at suite "^debug: allreduce 4194304 bytes" "$pid"
set +e; wait "$pid"; rc=$?; set -e
[ "$rc" -eq 143 ] && ok "suite: exit 143" || fail "suite: exit $rc"
grep -q "^error: suite step 'long' (collective): INTERRUPTED by SIGTERM$" "$T/suite.err" \
  && ok "suite: names the step it stopped" || fail "suite: $(grep -v debug "$T/suite.err")"
validate "$T/suite-report.json"
assert_json "$T/suite-report.json" "[(r['name'], r['status']) for r in d['results'] if r['name'] != 'quick/peak'][-2:] == [('interrupted', 'failed'), ('after', 'skipped')] and d['summary']['suite']['verdict'] == 'fail' and 'long' in [s['name'] for s in d['summary']['suite']['steps']]" \
  "suite: the step interrupted, the rest not run"
finish
