#!/usr/bin/env bash
# `suite` on 2 ranks that work in different directories (MPMD, one -wdir each), as ranks on hosts that do not
# share files: each rank reads a step's input on its own, and one rank's missing or different file must stop
# or fail the suite as it does the command alone, on every rank and with the rank named.
. "$(dirname "$0")/../lib.sh"
cd "$T"
mkdir -p "$T/wd0" "$T/wd1"
# split NAME ARGS...: factorybench ARGS on rank 0 in wd0 and rank 1 in wd1; the timeout turns a hang into exit 124.
split() {
  local name=$1; shift
  run_capture "$name" timeout 120 mpirun --oversubscribe -np 1 -wdir "$T/wd0" "$FACTORYBENCH" --backend host "$@" : \
    -np 1 -wdir "$T/wd1" "$FACTORYBENCH" --backend host "$@"
}
# suite_file NAME STEPS: the same suite file in both directories.
suite_file() { printf '{"steps": %s}' "$2" | tee "$T/wd0/$1.json" >"$T/wd1/$1.json"; }
GEMM='{"name": "g1", "command": "gemm", "args": "--m 64 --n 64 --k 64 --iters 3 --warmup 1"}'
TRAIN="--model ./m.json --steps 4 --warmup-steps 1"
# stopped_up_front NAME PATTERN: exit 2 with the error line, before step 1 ran, no report.
stopped_up_front() {
  [ "$RC" -eq 2 ] && grep -qE "^factorybench: error: $2\$" "$T/$1.err" && ! grep -q '\[1/2\]' "$T/$1.err" \
    && [ ! -e "$T/$1.json" ] && ok "$1: exit 2 before step 1, no report" \
    || fail "$1: exit $RC (124: hung): $(head -3 "$T/$1.err")"
}

# A train step's model file that rank 1 lacks: rank 0 used to go on into the fit check's collectives while rank 1
# waited for the ranks to agree on the checks, a hang with no message.
cp "$FB_SOURCE_DIR/configs/models/tiny-dense.json" "$T/wd0/m.json"
suite_file model "[$GEMM, {\"name\": \"t\", \"command\": \"train\", \"args\": \"$TRAIN\"}]"
split model_missing suite model.json -o "$T/model_missing.json"
stopped_up_front model_missing "suite step 't': model file not found: \./m\.json \(on rank 1; each rank reads its own files\)"
# A hang watchdog's run dir that rank 1 cannot make (a file there in its path; rank 0 has none): every rank stops
# before step 1, rank 0 naming rank 1's reason (the watchdog found it only at the step's turn); the command
# alone stops both ranks the same way before it measures.
touch "$T/wd1/hd"
suite_file hang_dir "[$GEMM, {\"name\": \"c\", \"command\": \"collective\", \"args\": \"-b 1K -e 1K --hang-timeout 30s --run-dir hd/x\"}]"
split hang_dir suite hang_dir.json -o "$T/hang_dir.json"
stopped_up_front hang_dir "suite step 'c': invalid --run-dir hd/x: hd is not a directory \(the hang watchdog keeps its state files there\) \(on rank 1; each rank reads its own files\)"
split hang_dir_alone collective -b 1K -e 1K --hang-timeout 30s --run-dir hd/x -o "$T/hang_dir_alone.json"
[ "$RC" -eq 2 ] && grep -q "^factorybench: error: invalid --run-dir hd/x: hd is not a directory .* (on rank 1; each rank reads its own files)$" "$T/hang_dir_alone.err" \
  && [ ! -e "$T/hang_dir_alone.json" ] && [ ! -e "$T/wd0/hd" ] && ok "hang_dir_alone: both ranks stop, nothing made" \
  || fail "hang_dir_alone: exit $RC (124: hung): $(head -3 "$T/hang_dir_alone.err")"

# The same with a --faults plan file that rank 1 lacks.
cp "$T/wd0/m.json" "$T/wd1/m.json"
echo '{"faults": [{"kind": "crash", "step": 3, "rank": 0}]}' >"$T/wd0/f.json"
suite_file faults "[$GEMM, {\"name\": \"t\", \"command\": \"train\", \"args\": \"$TRAIN --run-dir $T/rd --faults ./f.json\"}]"
split faults_missing suite faults.json -o "$T/faults_missing.json"
stopped_up_front faults_missing "suite step 't': invalid --faults '\./f\.json': .*\(on rank 1; each rank reads its own files\)"

# Model files that differ between the ranks are refused before step 1, as train alone refuses them (the suite
# used to run step 1 and then fail the train step, exit 1).
sed 's/"layers": 2/"layers": 3/' "$FB_SOURCE_DIR/configs/models/tiny-dense.json" >"$T/wd1/m.json"
cmp -s "$T/wd0/m.json" "$T/wd1/m.json" && die "the model files should differ"
split model_differs suite model.json -o "$T/model_differs.json"
stopped_up_front model_differs "suite step 't': the ranks loaded different model files \(--model \./m\.json\); every rank must read the same files"

# A step that fails on rank 1 alone (a compare whose inputs only rank 0's directory holds) is recorded failed, with
# rank 1's reason, printed once; it used to be recorded ok while the job exited 1.
fb gemm --backend host --m 32 --n 32 --k 32 --iters 3 --warmup 1 -q -o "$T/wd0/a.json" || die "gemm for compare's input"
cp "$T/wd0/a.json" "$T/wd0/b.json"
suite_file cmp "[$GEMM, {\"name\": \"cmp\", \"command\": \"compare\", \"args\": \"a.json b.json\"}, {\"name\": \"g2\", \"command\": \"gemm\", \"args\": \"--m 32 --n 32 --k 32 --iters 3 --warmup 1\"}]"
for ff in "" --fail-fast; do
  name=cmp${ff:+_ff}
  split "$name" suite cmp.json $ff -o "$T/$name.json"
  [ "$RC" -eq 1 ] || { fail "$name: exit $RC: $(stderr_summary "$T/$name.err")"; continue; }
  validate "$T/$name.json"
  C="[r for r in d['results'] if r['benchmark'] == 'suite' and r['name'] == 'cmp'][0]"
  assert_json "$T/$name.json" "$C['status'] == 'failed' and $C['error'].startswith('on rank 1: ') and 'a.json' in $C['error']" \
    "$name: the step failed on rank 1 is recorded failed, with rank 1's reason"
  assert_json "$T/$name.json" "[s['exit_code'] for s in d['summary']['suite']['steps']][:2] == [0, 2] and d['summary']['suite']['verdict'] == 'fail'" \
    "$name: its exit code is rank 1's"
  [ "$(grep -c 'cmp: FAILED .*: on rank 1: ' "$T/$name.err")" -eq 1 ] && ok "$name: the reason printed once" \
    || fail "$name: the reason is not printed once: $(cat "$T/$name.err")"
done
assert_json "$T/cmp.json" "[s['name'] for s in d['summary']['suite']['steps'] if s['exit_code'] == 0] == ['g1', 'g2']" "cmp: the rest go on"
assert_json "$T/cmp_ff.json" "[(r['status'], r['error']) for r in d['results'] if r['benchmark'] == 'suite' and r['name'] == 'g2'] == [('skipped', \"not run: --fail-fast after step 'cmp' failed\")]" \
  "cmp --fail-fast: the next step skipped after the failed one"
finish
