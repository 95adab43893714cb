#!/usr/bin/env bash
# attention under mpirun -np 2: every rank runs and checks the shape; rank 0 reports both ranks' figures
# and prints one table.
. "$(dirname "$0")/../lib.sh"
cd "$T"
run_capture two fb_mpirun 2 attention --backend host --seq 64 --heads 4 --kv-heads 1 --head-dim 16 -n 3 -w 1 -o "$T/two.json"
[ "$RC" -eq 0 ] && ok "np 2 exit 0" || fail "np 2 exit $RC: $(cat "$T/two.err")"
validate "$T/two.json"
assert_json "$T/two.json" "d['run']['world_size'] == 2 and len(d['results']) == 1 and d['summary']['ranks'] == 2" "one result for two ranks"
assert_json "$T/two.json" "len(d['results'][0]['per_rank']['tflops']) == 2 and all(v > 0 for v in d['results'][0]['per_rank']['tflops'])" "two per-rank figures"
assert_json "$T/two.json" "d['results'][0]['metrics']['tflops']['stats']['n'] == 6" "samples pooled over 2 ranks x 3 iterations"
[ "$(grep -c '^# factorybench attention' "$T/two.out")" -eq 1 ] && ok "one table (rank 0 prints)" || fail "table count: $(cat "$T/two.out")"
finish
