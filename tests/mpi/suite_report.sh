#!/usr/bin/env bash
# `suite`: several steps in one MPI job, one combined report; failing steps are recorded, not fatal.
. "$(dirname "$0")/../lib.sh"
cd "$T"

cat >"$T/ok.json" <<'JSON'
{"name": "two-infos", "steps": [
  {"name": "first", "command": "info"},
  {"name": "second", "command": "info", "args": "--json"}]}
JSON
run_capture ok fb_mpirun 2 suite "$T/ok.json" --backend host -o "$T/ok-report.json"
[ "$RC" -eq 0 ] || fail "suite exited $RC: $(cat "$T/ok.err")"
validate "$T/ok-report.json"
assert_json "$T/ok-report.json" "len(d['results']) == 2 and d['results'][1]['name'] == 'second/peak'" "one report, unique result names"
# -o /dev/stdout: the report once, at the end (the report so far is kept in regular files alone), so that stdout
# under -q is one JSON document. It was one more per step, each written before the step ran.
cat >"$T/two_gemms.json" <<'JSON'
{"steps": [{"name": "g1", "command": "gemm", "args": "--m 64 --n 64 --k 64 --iters 3 --warmup 1"},
           {"name": "g2", "command": "gemm", "args": "--m 32 --n 32 --k 32 --iters 3 --warmup 1"}]}
JSON
run_capture stdout fb_mpirun 2 suite "$T/two_gemms.json" --backend host -q -o /dev/stdout
[ "$RC" -eq 0 ] && "$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if [r['name'] for r in d['results']] == ['fp32/64x64x64', 'fp32/32x32x32'] else 1)" "$T/stdout.out" \
  && ok "-o /dev/stdout: one report on stdout, with both steps" || fail "-o /dev/stdout: exit $RC: $(head -c 600 "$T/stdout.out")"
# An injected rank outside the job is the suite's error, not its first step's (a gemm, which takes none).
cat >"$T/gemm_only.json" <<'JSON'
{"steps": [{"name": "g1", "command": "gemm", "args": "--m 64 --n 64 --k 64 --iters 3 --warmup 1"}]}
JSON
expect_error suite_inject_rank 2 "^factorybench: error: FACTORYBENCH_INJECT 'hang@rank=7,call=1': hang names rank 7, but the job has ranks 0..0$" \
  env FACTORYBENCH_INJECT=hang@rank=7,call=1 "$FACTORYBENCH" suite "$T/gemm_only.json" --backend host -o "$T/bad.json"
# A suite's preflight with --backend auto does not know the device: a shape valid with the GPU's default heads
# (32) but not the host's (4) is not refused up front; on this host the step then fails alone, at its turn.
# With --backend host named, the preflight refuses it before any step runs.
cat >"$T/gqa.json" <<'JSON'
{"steps": [{"name": "first", "command": "gemm", "args": "--m 64 --n 64 --k 64 --iters 3 --warmup 1"},
           {"name": "gqa", "command": "attention", "args": "--kv-heads 8 -n 3"}]}
JSON
run_capture gqa_auto fb suite "$T/gqa.json" -o "$T/gqa-report.json"
[ "$RC" -eq 1 ] && assert_json "$T/gqa-report.json" "[(r['name'], r['status']) for r in d['results']][0] == ('fp32/64x64x64', 'ok') and d['results'][-1]['status'] == 'failed' and 'heads (4) must be a multiple of kv_heads (8)' in d['results'][-1]['error']" \
  "--backend auto: the step valid on a GPU passes the preflight and fails at its turn on the host" || fail "gqa_auto: exit $RC: $(stderr_summary "$T/gqa_auto.err")"
expect_error gqa_host 2 "^factorybench: error: suite step 'gqa': attention: heads \(4\) must be a multiple of kv_heads \(8\)$" \
  fb --backend host suite "$T/gqa.json" -o "$T/gqa-host.json"
# A job killed inside its first step (SIGKILL: nothing runs after it): the report written before the step says
# so, and names the --backend given (it said "none": no step had finished to name it).
cat >"$T/killed.json" <<'JSON'
{"steps": [{"name": "long", "command": "burnin", "args": "--duration 120s"}, {"name": "after", "command": "info"}]}
JSON
# Signalled once step 1 runs: its first progress line (after 3 s) is printed, and the report written before it
# is there (a fixed 10 s from the start was not always enough for the launch on a loaded CI machine).
# With a third argument, also once the report so far holds a burn-in result (its reference check, saved as the
# step measured it; on a loaded machine it can come after the first progress line).
signal_when_running() {  # NAME SIGNAL [saved]: runs the suite, and signals mpirun (alone, once) inside step 1
  mpirun --oversubscribe -np 2 "$FACTORYBENCH" suite "$T/killed.json" --backend host -o "$T/$1-report.json" \
    >"$T/$1.out" 2>"$T/$1.err" &
  local launcher=$!
  for _ in $(seq 1200); do
    grep -q "^burnin: " "$T/$1.err" && [ -e "$T/$1-report.json" ] \
      && { [ -z "${3:-}" ] || grep -q '"benchmark": "burnin"' "$T/$1-report.json"; } && break
    sleep 0.05
  done
  kill "-$2" "$launcher"
  wait "$launcher" || true
}
signal_when_running killed KILL saved
assert_json "$T/killed-report.json" "d['run']['backend'] == 'host' and [(r['name'], r['status']) for r in d['results'] if r['benchmark'] == 'suite'] == [('long', 'failed'), ('after', 'skipped')] and 'did not finish' in d['results'][-2]['error'] and d['summary']['suite']['verdict'] == 'fail'" "killed in step 1: the report names the backend, the step unfinished, the rest not run"
# The burn-in's reference check was saved as the step measured it: SIGKILL leaves it in the report, before the
# step's "did not finish" (tools/interrupt_report.hpp).
assert_json "$T/killed-report.json" "len(d['results']) >= 3 and {r['benchmark'] for r in d['results'][:-2]} == {'burnin'} and d['results'][-2]['name'] == 'long'" "killed in step 1: the burn-in's checks so far are kept"
# Stopped there by SIGTERM, as a time limit stops it: mpirun passes one SIGTERM on to the ranks (after a
# SIGCONT and a second), and the step says it was interrupted, and by what (tools/interrupt_report.hpp).
# (mpirun signalled alone, once: under GNU timeout without --foreground a second SIGTERM, sent to timeout's
# process group, reaches mpirun too, which then aborts the job at once, before the ranks are signalled;
# docs/reports.md.)
signal_when_running stopped TERM
# The burn-in keeps its node's verdict over the checks gathered so far (the reference check at least: it is
# taken before the first progress line), marked with the step.
assert_json "$T/stopped-report.json" "[(r['benchmark'], r['name'][:12], r['status']) for r in d['results']] == [('burnin', 'burnin/node/', 'ok'), ('burnin', 'interrupted', 'failed'), ('suite', 'after', 'skipped')] and d['results'][1]['error'].startswith('interrupted by SIGTERM') and d['results'][1]['extra']['suite_step'] == 'long' and d['summary']['suite']['verdict'] == 'fail'" "SIGTERM in step 1: the step interrupted by SIGTERM, the rest not run"
assert_json "$T/stopped-report.json" "d['results'][0]['extra']['suite_step'] == 'long' and [len(x['checksums']) >= 1 for x in d['results'][0]['extra']['ranks']] == [True, True]" "SIGTERM in step 1: the burn-in's checks so far are kept"
grep -qE "^node .*: NOT FINISHED \(no mismatch in [0-9]+ of 10 checks after the reference, 2 rank\(s\)" "$T/stopped.out" \
  && ok "SIGTERM in step 1: the console says the node is not finished" || fail "console: $(cat "$T/stopped.out")"
# A collective step stopped the same way keeps what it measured: the suite's report holds its sizes so far
# (marked with the step) before the interruption, and the console's table is closed (its footer, then the
# signal's line). Stopped at a known point: once rank 0 starts the 4 MiB size.
cat >"$T/sweep_stop.json" <<'JSON'
{"steps": [{"name": "first", "command": "gemm", "args": "--m 64 --n 64 --k 64 --iters 2 --warmup 1"},
           {"name": "long", "command": "collective", "args": "-b 1K -e 256M -n 200"},
           {"name": "after", "command": "info"}]}
JSON
mpirun --oversubscribe -np 2 "$FACTORYBENCH" --log-level debug suite "$T/sweep_stop.json" --backend host \
  -o "$T/sweep_stop-report.json" >"$T/sweep_stop.out" 2>"$T/sweep_stop.err" &
launcher=$!
for _ in $(seq 1200); do grep -q "^\[rank 0\] debug: allreduce 4194304 bytes" "$T/sweep_stop.err" && break; sleep 0.05; done
kill -TERM "$launcher"
wait "$launcher" || true
# (mpirun passes the SIGTERM on a second later: a size or two more may be measured by then.)
assert_json "$T/sweep_stop-report.json" "[(r['name'], r['extra']['suite_step']) for r in d['results']][0] == ('fp32/64x64x64', 'first') and [r['name'] for r in d['results'] if r['extra']['suite_step'] == 'long'][:12] == ['allreduce/fp32/%d' % (1024 << i) for i in range(12)] and [(r['name'], r['status'], r['extra']['suite_step']) for r in d['results']][-2:] == [('interrupted', 'failed', 'long'), ('after', 'skipped', 'after')] and 'what this one measured, are kept' in d['results'][-2]['error']" \
  "SIGTERM in a collective step: its sizes so far kept, marked with the step, before the interruption"
[ "$(tail -1 "$T/sweep_stop.out")" = "# factorybench collective: stopped by a signal after the sizes above" ] \
  && grep -q "^# Wrong elements : 0 OK$" "$T/sweep_stop.out" \
  && ok "SIGTERM in a collective step: its table closed on the console" || fail "sweep_stop console: $(tail -5 "$T/sweep_stop.out")"
# A hang in such a step (the watchdog's report): the sizes before the hung call are kept there too.
cat >"$T/sweep_hang.json" <<'JSON'
{"steps": [{"name": "long", "command": "collective", "args": "-b 1K -e 64K -n 3 -w 1 --hang-timeout 2s"}]}
JSON
run_capture sweep_hang timeout 120 mpirun --oversubscribe -np 2 -x FACTORYBENCH_INJECT=hang@rank=1,call=12 \
  "$FACTORYBENCH" suite "$T/sweep_hang.json" --backend host -o "$T/sweep_hang-report.json"
assert_json "$T/sweep_hang-report.json" "[(r['name'], r['status'], r['extra']['suite_step']) for r in d['results']] == [('allreduce/fp32/1024', 'ok', 'long'), ('hang', 'failed', 'long')]" \
  "a hang in a collective step: the size before it kept in the suite's report"
# Two sweeps that overlap in two of their sizes: the second step's results are all named for it (only the
# clashing sizes were, splitting its sweep across two names).
cat >"$T/overlap.json" <<'JSON'
{"steps": [
  {"name": "wide", "command": "collective", "args": "--op allreduce -b 1K -e 4K -f 2 -n 3 -w 1"},
  {"name": "narrow", "command": "collective", "args": "--op allreduce -b 2K -e 8K -f 2 -n 3 -w 1"}]}
JSON
run_capture overlap fb_mpirun 2 suite "$T/overlap.json" --backend host -o "$T/overlap-report.json"
[ "$RC" -eq 0 ] || fail "overlap: exit $RC: $(cat "$T/overlap.err")"
assert_json "$T/overlap-report.json" "[r['name'] for r in d['results'] if r['extra'].get('suite_step') == 'narrow'] == ['narrow/allreduce/fp32/2048', 'narrow/allreduce/fp32/4096', 'narrow/allreduce/fp32/8192', 'narrow/avg_busbw'] and [r['name'] for r in d['results'] if r['extra'].get('suite_step') == 'wide'] == ['allreduce/fp32/1024', 'allreduce/fp32/2048', 'allreduce/fp32/4096', 'avg_busbw']" "overlapping sweeps: the second step's results all named for it"
assert_json "$T/ok-report.json" "[s['name'] for s in d['summary']['suite']['steps']] == ['first', 'second']" "steps logged"
assert_json "$T/ok-report.json" "d['run']['world_size'] == 2" "world size"
# Each step's time in a unit that shows it (a 25 ms step read "0.0 s", as if it had not run).
grep -qE "^\[2/2\] second: ok \([1-9][0-9.]* (us|ms|s)\)$" "$T/ok.err" && ! grep -q "(0.0 s)" "$T/ok.err" \
  && ok "progress lines, each step's time in its unit" || fail "progress lines: $(cat "$T/ok.err")"

# The quickstart preset: every step's results in one report under 4 ranks.
run_capture quick fb_mpirun 4 suite quickstart --backend host -o "$T/quick.json"
[ "$RC" -eq 0 ] || fail "suite quickstart exited $RC: $(stderr_summary "$T/quick.err")"
validate "$T/quick.json"
assert_json "$T/quick.json" "{r['benchmark'] for r in d['results']} == {'gemm', 'collective', 'train', 'resilience'}" "gemm, collective, train and resilience results"
# The resilience step: rank 0 supervised its own mpirun job (launched from inside this one) through a crash and a
# hang, in a run directory of its own.
R="[r for r in d['results'] if r['benchmark'] == 'resilience'][0]"
assert_json "$T/quick.json" "$R['metrics']['steps_completed']['value'] == 30 and $R['metrics']['failures']['value'] == 2" "resilience step: 30 steps through 2 failures"
assert_json "$T/quick.json" "sorted(f['kind'] for f in $R['extra']['ledger']['failure_list']) == ['crash', 'hang']" "resilience step: a crash and a hang"
assert_json "$T/quick.json" "abs(sum($R['extra']['ledger']['split_s'].values()) - $R['metrics']['wall_s']['value']) < 0.01 * $R['metrics']['wall_s']['value']" "resilience step: the parts sum to the wall time"
RUN_DIR=$(json "$T/quick.json" "$R['params']['run_dir']")
[ -f "$RUN_DIR/events.jsonl" ] && ok "resilience step: its run directory holds the event log" || fail "no event log in '$RUN_DIR'"
pgrep -f "$RUN_DIR" >/dev/null && fail "training ranks left running" || ok "no training ranks left running"
rm -rf "$RUN_DIR"
assert_json "$T/quick.json" "all(r['status'] == 'ok' for r in d['results']) and d['run']['world_size'] == 4" "all ok on 4 ranks"
assert_json "$T/quick.json" "len(set((r['benchmark'], r['name']) for r in d['results'])) == len(d['results'])" "result identities unique"
# It ends with one line per step: its headline figure and verdict, the same lines `report --format summary` prints.
tail -n 6 "$T/quick.out" >"$T/quick.tail"
for step in gemm collectives moe-dispatch train-dense train-moe resilience; do
  grep -Eq "^  $step +ok +" "$T/quick.tail" || fail "no summary line for step $step: $(cat "$T/quick.tail")"
done
grep -Eq "^  gemm +ok +peak [0-9.e+-]+ TFLOP/s \(fp32/" "$T/quick.tail" && grep -Eq "^  resilience +ok +goodput [0-9.]+% .*failures 2" "$T/quick.tail" \
  && ok "suite ends with one headline line per step" || fail "headline lines: $(cat "$T/quick.tail")"
fb report "$T/quick.json" --format summary >"$T/summary.txt" || fail "report --format summary exited $?"
diff <(tail -n 6 "$T/summary.txt") "$T/quick.tail" >/dev/null && ok "report --format summary prints the same lines" \
  || fail "summary differs: $(diff <(tail -n 6 "$T/summary.txt") "$T/quick.tail")"

# A step whose input is bad fails, is recorded with its reason, and the next step still runs.
cat >"$T/bad.json" <<'JSON'
{"name": "one-bad", "steps": [
  {"name": "bad-suite-file", "command": "suite", "args": ["/nonexistent.json"]},
  {"name": "after", "command": "info"}]}
JSON
run_capture nested fb suite "$T/bad.json" --backend host -o "$T/x.json"
[ "$RC" -eq 2 ] && grep -q "cannot run another suite" "$T/nested.err" && ok "nested suite rejected" || fail "nested suite: $RC $(cat "$T/nested.err")"

cat >"$T/fail.json" <<'JSON'
{"name": "one-failing", "steps": [
  {"name": "broken", "command": "info", "args": "--backend cuda"},
  {"name": "after", "command": "info"}]}
JSON
run_capture global fb suite "$T/fail.json" --backend host -o "$T/y.json"
[ "$RC" -eq 2 ] && grep -q "suite step 'broken': --backend belongs on the suite command line" "$T/global.err" && ok "global options rejected in steps" || fail "global option in step: $RC $(cat "$T/global.err")"
# Every global option, not only --backend/--output/--seed: a step's --telemetry or -q was silently ignored.
for opt in "--telemetry full" "--telemetry-interval banana" "-q" "--log-level debug"; do
  printf '{"steps": [{"name": "g", "command": "info", "args": "%s"}]}\n' "$opt" >"$T/global_opt.json"
  run_capture global_opt fb suite "$T/global_opt.json" --backend host -o "$T/y.json"
  [ "$RC" -eq 2 ] && grep -qE "suite step 'g': (--telemetry|--telemetry-interval|--quiet|--log-level) belongs on the suite command line" "$T/global_opt.err" \
    && ok "step option '$opt' refused" || fail "step option '$opt': $RC $(cat "$T/global_opt.err")"
done
[ ! -e "$T/y.json" ] || fail "report written for an invalid suite"

expect_error missing_suite 2 "unknown suite 'nosuch'" fb suite nosuch
printf '{"steps": [{"command": 5}]}' >"$T/typed.json"
expect_error typed_suite 2 'typed.json: \$.steps\[0\].command: expected a string' fb suite "$T/typed.json"
printf '{"steps": [{"command": "health --expect-gpu H100"}]}' >"$T/cmdline.json"
expect_error command_line_suite 2 'cmdline.json: \$.steps\[0\].command: "health --expect-gpu H100" must be one command name; its options go in "args"$' fb suite "$T/cmdline.json"
printf '{"steps": [{"command": "info", "args": "--frobnicate"}]}' >"$T/unknown.json"
expect_error unknown_opt 2 "suite step '1-info'" fb suite "$T/unknown.json"
printf '{"steps": [{"name": "a", "command": "frob"}]}' >"$T/frob.json"
expect_error unknown_cmd 2 "suite step 'a': unknown command 'frob' \\(expected one of info, .*, burnin\\)$" fb suite "$T/frob.json"
grep -q "suite," "$T/unknown_cmd.err" && fail "the commands a step may run list suite" || ok "suite is not offered to a step"
printf '{"steps": [{"name": "a", "command": "info"}, {"name": "a", "command": "info"}]}' >"$T/dup.json"
expect_error dup_name 2 "dup.json: \\$.steps\\[1\\].name: 'a' names an earlier step too" fb suite "$T/dup.json"

printf '{"descripton": "x", "steps": [{"command": "info"}]}' >"$T/topfield.json"
expect_error top_field 2 "topfield.json: \\$.descripton: unknown field \\(known: name, description, steps\\)" fb suite "$T/topfield.json"
printf '{"name": "two\\nlines", "steps": [{"command": "info"}]}' >"$T/topname.json"
expect_error top_name 2 'topname.json: \$.name: "two\\nlines" must be a non-empty line' fb suite "$T/topname.json"
# Refused before step 1 measures: a later step reading the suite's -o (not written yet), a format not in the list.
printf '{"steps": [{"name": "g", "command": "gemm", "args": "--m 64 --n 64 --k 64"}, {"name": "r", "command": "report", "args": "%s"}]}' \
  "$T/suite_out.json" >"$T/reads_out.json"
expect_error reads_out 2 "^factorybench: error: invalid -o/--output $T/suite_out.json: it is the input $T/suite_out.json, which writing would destroy$" \
  fb --backend host suite "$T/reads_out.json" -o "$T/suite_out.json"
[ ! -e "$T/suite_out.json" ] && ok "reads_out: no report" || fail "reads_out: a report was written"
printf '{"steps": [{"name": "g", "command": "gemm", "args": "--m 64 --n 64 --k 64"}, {"name": "r", "command": "report", "args": "x.json --format pdf"}]}' >"$T/pdf.json"
expect_error step_format 2 "^factorybench: error: suite step 'r': --format: pdf not in" fb --backend host suite "$T/pdf.json"

# --list prints each step as a command line and runs nothing; with -o it would write no report: refused.
run_capture list fb suite quickstart --list
[ "$RC" -eq 0 ] && grep -q "^gemm: factorybench gemm --m 256,512" "$T/list.out" && [ "$(wc -l <"$T/list.out")" -eq 6 ] \
  && ok "--list: one line per step" || fail "--list: exit $RC: $(cat "$T/list.out" "$T/list.err")"
expect_error list_output 2 "^factorybench: error: --list prints the steps and writes no report: leave out -o/--output$" \
  fb -o "$T/list.json" suite quickstart --list
expect_error list_fail_fast 2 "^factorybench: error: --list prints the steps and runs none: --fail-fast does nothing with it$" \
  fb suite quickstart --list --fail-fast

# Every step's input is validated before the first step runs (the models, layouts and files its options
# name): a typo in a later step stops the suite with that step's reason and exit 2, before step 1 has
# measured anything, and writes no report.
late_step() {  # NAME PATTERN COMMAND ARGS: a gemm step, then the bad one
  printf '{"steps": [{"name": "first", "command": "gemm", "args": "--m 64 --n 64 --k 64 --iters 2 --warmup 1"}, {"name": "late", "command": "%s", "args": "%s"}]}' "$3" "$4" >"$T/$1.json"
  expect_error "$1" 2 "$2" fb suite "$T/$1.json" --backend host -o "$T/$1_out.json"
  [ ! -e "$T/$1_out.json" ] && ! grep -q "factorybench gemm" "$T/$1.out" && ok "$1: nothing run, no report" \
    || fail "$1: the first step ran or a report was written: $(cat "$T/$1.out")"
}
late_step late_model "^factorybench: error: suite step 'late': unknown model 'llama3-8x'" train "--model llama3-8x --steps 2"
late_step late_layout "suite step 'late': world size 1 is not divisible by --tp 2" train "--model tiny-dense --tp 2 --steps 2"
late_step late_floors "suite step 'late': unknown floors 'nope'" locate "--floors nope"
late_step late_failure_model "suite step 'late': unknown failure model 'nope'" simulate "--gpus 1024 --failure-model nope"
late_step late_resilience "suite step 'late': invalid --faults 'crash@step=99,rank=7': rank=7 is not below the 2 ranks" resilience "--ranks 2 --model tiny-dense --steps 4 --faults crash@step=99,rank=7"
late_step late_train_faults "suite step 'late': invalid --faults 'crash@step=3,rank=5': rank=5 is not below the 1 ranks" train "--model tiny-dense --steps 4 --run-dir $T/late_rd --faults crash@step=3,rank=5"
[ ! -e "$T/late_rd" ] && ok "late_train_faults: no run directory left behind" || fail "late_train_faults: $T/late_rd created"
late_step late_checkpoint "suite step 'late': --checkpoint-every needs --run-dir DIR" train "--model tiny-dense --steps 4 --checkpoint-every 1"
late_step late_gemm_ta "suite step 'late': invalid --ta 'X': expected N or T" gemm "--m 64 --n 64 --k 64 --ta X"
late_step late_gemm_model "suite step 'late': tiny-dense: heads 4 is not divisible by --tp 3" gemm "--model tiny-dense --tp 3"
late_step late_collective "suite step 'late': invalid size range: -b/--minbytes 65536 is larger than -e/--maxbytes 8" collective "--op allreduce -b 64K -e 8"
# A model that cannot fit in the rank's free memory even on its most favourable path: named before step 1 runs
# (it used to fail in its turn, after the steps before it). llama3-8b with 8 layers needs about 120 GiB in fp32.
late_step late_fit "suite step 'late': llama3-8b does not fit: each rank needs about .* but has .*; try --layers N" train "--model llama3-8b --layers 8 --steps 2"
# Found only at the step's turn before, now before step 1: an attention engine the backend named cannot run.
late_step late_train_engine "^factorybench: error: suite step 'late': --attention-engine cudnn: cuDNN attention needs the cuda backend$" \
  train "--model tiny-dense --steps 2 --attention-engine cudnn"
late_step late_attention_engine "^factorybench: error: suite step 'late': --engine cudnn: cuDNN attention needs the cuda backend$" \
  attention "--engine cudnn --seq 64"
# A hang watchdog's run dir under a file (as root, a read-only directory is still writable).
touch "$T/plain_file"
late_step late_hang_run_dir "^factorybench: error: suite step 'late': invalid --run-dir $T/plain_file/hang: $T/plain_file is not a directory \(the hang watchdog keeps its state files there\)$" \
  health "--hang-timeout 30s --run-dir $T/plain_file/hang"
# A run dir lock wait that is not seconds, for a later step's run dir: nothing made.
FACTORYBENCH_RUN_DIR_LOCK_WAIT=10s late_step late_lock_wait "^factorybench: error: suite step 'late': invalid FACTORYBENCH_RUN_DIR_LOCK_WAIT '10s': expected seconds" \
  train "--model tiny-dense --steps 2 --run-dir $T/late_lock_rd"
[ ! -e "$T/late_lock_rd" ] && ok "late_lock_wait: no run directory made" || fail "late_lock_wait: $T/late_lock_rd created"
# Two steps sharing a --run-dir: the first saves checkpoints there, and the second, a fresh start (train without
# --resume; resilience always), would refuse them at its turn, after the first had trained. Named before step 1
# runs, with both steps; with --resume, or when the first saves none (--checkpoint-every beyond its steps), it runs.
shared() {  # NAME SECOND_COMMAND SECOND_ARGS
  printf '{"steps": [{"name": "saves", "command": "train", "args": "--model tiny-dense --steps 2 --run-dir %s --checkpoint-every %s"}, {"name": "again", "command": "%s", "args": "--model tiny-dense --steps 2 --run-dir %s/ %s"}]}' \
    "$T/$1_rd" "${4:-1}" "$2" "$T/$1_rd" "$3" >"$T/$1.json"
}
shared shared_train train ""
expect_error shared_train 2 "^factorybench: error: suite step 'again': --run-dir $T/shared_train_rd/ will hold checkpoints when it runs: step 'saves' saves them in $T/shared_train_rd/checkpoints \(--checkpoint-every 1\), and a run without --resume refuses a run dir with checkpoints: add --resume to continue from them, or give it another --run-dir$" \
  fb suite "$T/shared_train.json" --backend host -o "$T/shared_train_out.json"
[ ! -e "$T/shared_train_rd" ] && [ ! -e "$T/shared_train_out.json" ] && ok "shared_train: nothing run, no report" \
  || fail "shared_train: a run dir or a report was made"
shared shared_resilience resilience "--launcher none --faults none"
expect_error shared_resilience 2 "^factorybench: error: suite step 'again': --run-dir $T/shared_resilience_rd/ will hold checkpoints when it runs: step 'saves' saves them in .*, and resilience starts a fresh job there: give it another --run-dir$" \
  fb suite "$T/shared_resilience.json" --backend host -o "$T/shared_resilience_out.json"
shared shared_resume train "--resume"
run_capture shared_resume fb suite "$T/shared_resume.json" --backend host -o "$T/shared_resume_out.json"
[ "$RC" -eq 0 ] && ok "shared run dir, the second step resumes: the suite runs" || fail "shared_resume: exit $RC: $(stderr_summary "$T/shared_resume.err")"
shared shared_none train "" 5
run_capture shared_none fb suite "$T/shared_none.json" --backend host -o "$T/shared_none_out.json"
[ "$RC" -eq 0 ] && ok "shared run dir, the first step saves none: the suite runs" || fail "shared_none: exit $RC: $(stderr_summary "$T/shared_none.err")"

# The ranks agree on the checks before anything runs: a file that only rank 0's working directory holds
# stops both ranks (rank 0 names rank 1's error) instead of leaving rank 0 in step 1's collectives.
mkdir -p "$T/wd0" "$T/wd1"
printf '{"steps": [{"name": "t", "command": "train", "args": "--model tiny-dense --steps 2 --warmup-steps 1"}, {"name": "loc", "command": "locate", "args": "--floors ./floors.json"}]}' >"$T/split.json"
cp "$FB_SOURCE_DIR/configs/floors/h100-8gpu.json" "$T/wd0/floors.json"
run_capture split timeout 120 mpirun --oversubscribe -np 1 -wdir "$T/wd0" "$FACTORYBENCH" suite "$T/split.json" --backend host : \
  -np 1 -wdir "$T/wd1" "$FACTORYBENCH" suite "$T/split.json" --backend host
[ "$RC" -eq 2 ] && grep -q "suite step 'loc': floors file not found: ./floors.json (on rank 1; each rank reads its own files)" "$T/split.err" \
  && ok "a check failing on rank 1 only stops both ranks, rank 0 names it" || fail "split: exit $RC: $(head -3 "$T/split.err")"

# A bad -o is the suite's error, not a step's, and stops every rank (it used to hang the others).
run_capture bad_out timeout 60 mpirun --oversubscribe -np 2 "$FACTORYBENCH" --backend host -o "$T/no/such/dir/x.json" suite "$T/ok.json"
[ "$RC" -eq 2 ] && grep -q "^factorybench: error: invalid -o/--output $T/no/such/dir/x.json: $T/no/such/dir does not exist" "$T/bad_out.err" \
  && ! grep -q "suite step" "$T/bad_out.err" && ok "bad -o: exit 2 on 2 ranks, named as the suite's" || fail "bad_out: exit $RC: $(head -3 "$T/bad_out.err")"

# --fail-fast: the steps it did not run are in the report as skipped, with the reason.
printf '{"steps": [{"name": "bad", "command": "health", "args": "--expect-gpu H200"}, {"name": "later", "command": "info"}]}' >"$T/ff.json"
run_capture ff fb suite "$T/ff.json" --fail-fast -o "$T/ff_out.json"
[ "$RC" -eq 1 ] && ok "fail-fast: exit 1" || fail "fail-fast: exit $RC"
validate "$T/ff_out.json"
assert_json "$T/ff_out.json" "[(r['status'], r['error']) for r in d['results'] if r['benchmark'] == 'suite' and r['name'] == 'later'] == [('skipped', \"not run: --fail-fast after step 'bad' failed\")]" "fail-fast: the step not run is skipped, with the reason"
assert_json "$T/ff_out.json" "[s['name'] for s in d['summary']['suite']['steps']] == ['bad', 'later'] and d['summary']['suite']['steps'][1]['skipped'] is True" "fail-fast: summary lists both steps"
assert_json "$T/ff_out.json" "d['summary']['suite']['verdict'] == 'fail'" "fail-fast: the suite's verdict is fail"
# On 2 ranks, with a gate judged on rank 0 alone (--min-busbw): every rank stops (rank 0 used to stop while
# rank 1 went on into the next step and waited there forever).
printf '{"steps": [{"name": "gate", "command": "collective", "args": "-b 1K -e 1K --iters 2 --warmup 1 --min-busbw 100000"}, {"name": "after", "command": "gemm", "args": "--m 64 --n 64 --k 64 --iters 2 --warmup 1"}]}' >"$T/ff2.json"
run_capture ff2 timeout 120 mpirun --oversubscribe -np 2 "$FACTORYBENCH" --backend host suite "$T/ff2.json" --fail-fast -o "$T/ff2_out.json"
[ "$RC" -eq 1 ] && assert_json "$T/ff2_out.json" "[(r['name'], r['status']) for r in d['results'] if r['benchmark'] == 'suite'] == [('after', 'skipped')]" \
  "fail-fast on 2 ranks: exit 1, the next step skipped" || fail "fail-fast on 2 ranks: exit $RC (124: hung): $(stderr_summary "$T/ff2.err")"
assert_json "$T/ok-report.json" "d['summary']['suite']['verdict'] == 'pass'" "the passing suite's verdict is pass"
# A suite file named without a path or .json, present here, is that file (it used to be "unknown suite").
cp "$T/ok.json" "$T/mysuite.txt"
run_capture bare fb suite mysuite.txt --backend host -q
[ "$RC" -eq 0 ] && ok "a bare file name that is no preset: the file" || fail "bare: exit $RC: $(head -2 "$T/bare.err")"

# A report (or compare) step renders to stdout: the suite's -o is the suite's JSON report, and the step's
# Markdown used to be written there (and replaced by the JSON only at the end).
printf '{"steps": [{"name": "md", "command": "report", "args": ["%s"]}, {"name": "later", "command": "info"}]}' \
  "$FB_SOURCE_DIR/tests/data/report_sample.json" >"$T/render.json"
run_capture render fb suite "$T/render.json" -o "$T/render_out.json"
[ "$RC" -eq 0 ] && grep -q "^# factorybench report" "$T/render.out" && ok "report step: its Markdown on stdout" \
  || fail "render: exit $RC: $(head -3 "$T/render.err")"
validate "$T/render_out.json"
assert_json "$T/render_out.json" "[(r['benchmark'], r['status']) for r in d['results'] if r['name'] == 'md'] == [('suite', 'ok')]" "report step: its verdict is a result of its own"

# A compare step that fails its gate adds no result of its own: its verdict is recorded, so the report, the
# summary line and JUnit show the failure (it used to vanish, "1 step, all ok").
"$PY" - "$FB_SOURCE_DIR/tests/data/report_sample.json" "$T" <<'EOF2'
import json, sys
d = json.load(open(sys.argv[1]))
d["results"] = [r for r in d["results"] if r["status"] == "ok"]
json.dump(d, open(sys.argv[2] + "/cbase.json", "w"))
r = next(r for r in d["results"] if "busbw_gbps" in r["metrics"])
r["metrics"]["busbw_gbps"]["value"] *= 0.5
r["metrics"]["busbw_gbps"].pop("stats", None)
json.dump(d, open(sys.argv[2] + "/ccand.json", "w"))
EOF2
# The args string is split as a shell splits it: quotes group and are removed.
printf '{"steps": [{"name": "gate", "command": "compare", "args": "%s %s"}, {"name": "g", "command": "gemm", "args": "--m \\"64\\" --n 64 --k 64 --iters 2 --warmup 1"}]}' \
  "$T/cbase.json" "$T/ccand.json" >"$T/gate.json"
run_capture gate fb suite "$T/gate.json" --backend host -o "$T/gate_out.json"
[ "$RC" -eq 1 ] && ok "failed gate step: suite exits 1" || fail "gate: exit $RC: $(head -3 "$T/gate.err")"
validate "$T/gate_out.json"
assert_json "$T/gate_out.json" "[(r['status'], r['error']) for r in d['results'] if r['name'] == 'gate'] == [('failed', \"'compare' exited 1: a check or gate failed\")]" "failed gate step: recorded with its exit status"
assert_json "$T/gate_out.json" "any(r['benchmark'] == 'gemm' and r['status'] == 'ok' for r in d['results'])" "quoted args: --m \"64\" read as 64"
fb report "$T/gate_out.json" --format summary >"$T/gate_summary.txt"
grep -Eq "^  gate +FAILED" "$T/gate_summary.txt" && ok "summary lists the failed gate" || fail "summary: $(cat "$T/gate_summary.txt")"
printf '{"steps": [{"name": "q", "command": "info", "args": "--json \\"unterminated"}]}' >"$T/quote.json"
expect_error unterminated_quote 2 "quote.json: \\$.steps\\[0\\].args: invalid args '--json \"unterminated': unterminated double quote" fb suite "$T/quote.json"

# --backend cuda without a usable GPU stops before the first step, as a single command does: exit 2, no report
# (every step used to fail on its own and a report of failures was written). The node-validation presets get
# this far: their attention step is not held to the host's cost limit on cuda.
if ! command -v nvidia-smi >/dev/null 2>&1; then
  run_capture nocuda fb suite node-validation-hopper --backend cuda -o "$T/nocuda.json"
  [ "$RC" -eq 2 ] && grep -q "^factorybench: error: --backend cuda: " "$T/nocuda.err" && [ ! -e "$T/nocuda.json" ] \
    && ok "suite --backend cuda without a GPU: exit 2, no report" || fail "nocuda: exit $RC: $(head -3 "$T/nocuda.err")"
fi

# -o naming a step's input: the report is written before each step, so the input would be gone before the step
# read it. Refused up front, the file untouched.
cp "$FB_SOURCE_DIR/configs/models/tiny-dense.json" "$T/step_model.json"
before=$(md5sum <"$T/step_model.json")
cat >"$T/step_input.json" <<EOF
{"name": "step-input", "steps": [{"name": "t", "command": "train", "args": ["--model=$T/step_model.json", "--steps", "2", "--dry-run"]}]}
EOF
expect_error step_input 2 "^factorybench: error: invalid -o/--output $T/step_model.json: it is the input $T/step_model.json, which writing would destroy$" \
  fb suite "$T/step_input.json" --backend host -o "$T/step_model.json"
[ "$(md5sum <"$T/step_model.json")" = "$before" ] && ok "step input named by -o: untouched" || fail "step input named by -o was overwritten"

# Ranks whose config directories hold different suites of one name stop at once with the reason, instead of
# each running its own steps and waiting in the other's collectives.
for side in a b; do cp -r "$FB_SOURCE_DIR/configs" "$T/cfg_$side"; done
echo '{"name": "quickstart", "steps": [{"name": "g", "command": "gemm", "args": ["--m", "64", "--n", "64", "--k", "64", "-n", "3", "-w", "1"]}]}' >"$T/cfg_a/suites/quickstart.json"
echo '{"name": "quickstart", "steps": [{"name": "c", "command": "collective", "args": ["-b", "8", "-e", "8", "-n", "3", "-w", "1"]}]}' >"$T/cfg_b/suites/quickstart.json"
run_capture mixed_suites timeout 120 mpirun --oversubscribe -np 1 -x FACTORYBENCH_CONFIG_DIR="$T/cfg_a" \
  "$FACTORYBENCH" --backend host suite quickstart -o "$T/mixed_suites.json" : \
  -np 1 -x FACTORYBENCH_CONFIG_DIR="$T/cfg_b" "$FACTORYBENCH" --backend host suite quickstart -o "$T/mixed_suites.json"
[ "$RC" -eq 2 ] && grep -q "the ranks loaded different suite files (quickstart)" "$T/mixed_suites.err" && [ ! -e "$T/mixed_suites.json" ] \
  && ok "different suite files: exit 2 with the reason, no report" || fail "mixed_suites: exit $RC: $(stderr_summary "$T/mixed_suites.err")"

# FACTORYBENCH_INJECT is the whole job's inside a suite: a train step runs beside the collective drill (run
# alone, train refuses the variable: its faults are --faults).
cat >"$T/drill.json" <<'JSON'
{"name": "drill", "steps": [
  {"name": "ar", "command": "collective", "args": ["--op", "allreduce", "-b", "1K", "-e", "1K", "-n", "3", "-w", "1"]},
  {"name": "tr", "command": "train", "args": ["--model", "tiny-dense", "--steps", "2", "--dp", "2"]}]}
JSON
run_capture drill timeout 300 mpirun --oversubscribe -np 2 -x FACTORYBENCH_INJECT=slow-rank@rank=1,delay=1ms \
  "$FACTORYBENCH" suite "$T/drill.json" --backend host -o "$T/drill-report.json"
[ "$RC" -eq 0 ] || fail "drill suite: exit $RC: $(stderr_summary "$T/drill.err")"
assert_json "$T/drill-report.json" "[r['status'] for r in d['results'] if r['extra'].get('suite_step') == 'tr'] == ['ok']" "a train step runs in a suite with an injected slow rank"
finish
