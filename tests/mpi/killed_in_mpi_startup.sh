#!/usr/bin/env bash
# A job killed while MPI starts leaves rank 0's -o saying so, not an earlier run's report to be read as this
# one's. MPI_Init waits for every rank, and one that never comes (a node that did not start it) holds rank 0
# there until the scheduler's limit; so rank 0, knowing its rank from the launcher, writes its start-up
# report before MPI's start (tools/session.cpp). Here the second rank of an MPMD launch is a sleep, which never
# calls MPI_Init, and the scheduler's limit is a SIGTERM after 6 s. What rank 0 cannot yet judge (that -o is
# not an input) keeps the file as it was. Rank 0 says, while it waits, that a rank has not joined
# (FACTORYBENCH_START_NOTICE seconds, default 60, then at each doubling).
. "$(dirname "$0")/../lib.sh"
cd "$T"
MARK=$((RANDOM % 5000 + 7000))  # the stand-in rank's sleep, named so that only it is stopped
stuck() {  # stuck NAME OUTPUT COMMAND ARGS...: rank 0 runs the command, the other rank never joins
  local name=$1 out=$2
  shift 2
  run_capture "$name" timeout -s TERM 6 mpirun --oversubscribe -x FACTORYBENCH_START_NOTICE=1 -np 1 \
    "$FACTORYBENCH" "$@" -o "$out" : -np 1 sleep "$MARK"
  pkill -f "^sleep $MARK\$" || true
}

cat >"$T/suite_file.json" <<'JSON'
{"steps": [{"name": "g", "command": "gemm", "args": ["--m", "64", "--n", "64", "--k", "64"]}]}
JSON
for cmd in gemm train suite; do
  echo '{"an earlier run": true}' >"$T/$cmd.json"
  case $cmd in
    gemm) stuck $cmd "$T/$cmd.json" gemm --backend host --m 64 --n 64 --k 64 ;;
    train) stuck $cmd "$T/$cmd.json" train --backend host --model tiny-dense --steps 2 ;;
    suite) stuck $cmd "$T/$cmd.json" suite "$T/suite_file.json" --backend host ;;
  esac
  [ "$RC" -eq 124 ] || fail "$cmd: the job was not held in MPI's start-up (exit $RC): $(stderr_summary "$T/$cmd.err")"
  assert_json "$T/$cmd.json" "len(d['results']) == 1 and d['results'][0]['name'] == 'unfinished' \
and d['results'][0]['benchmark'] == '$cmd' and d['results'][0]['status'] == 'failed' \
and \"it ended in MPI's start-up, which waits for every rank to join\" in d['results'][0]['error'] \
and d['run']['world_size'] == 2 and d['run']['command'].startswith('factorybench $cmd ')" \
    "$cmd: killed in MPI's start-up, -o holds the start-up report (2 ranks), not the earlier one"
  validate "$T/$cmd.json"
done
# Said while it waited: after 1 s, 2 s (and 4 s, where the launcher started it within 2 s of the 6).
notices=$(grep -E "warning: MPI's start-up has waited [0-9] s for all 2 ranks to join: one has not \(.*\); -o holds a start-up report that says so until the run writes its own$" "$T/gemm.err" | grep -oE "waited [0-9] s" | tr '\n' ' ')
[[ "$notices" == "waited 1 s waited 2 s "* ]] \
  && ok "rank 0 says that a rank has not joined, at each doubling of the wait" \
  || fail "no notice while MPI's start-up waited: $(cat "$T/gemm.err")"

# -o naming the model file the run reads: rank 0 alone sees that before MPI is up, so it writes nothing there;
# the refusal comes once every rank has joined. Likewise a file a suite's step reads.
cp "$FB_SOURCE_DIR/configs/models/tiny-dense.json" "$T/model.json"
stuck model_out "$T/model.json" train --backend host --model "$T/model.json" --steps 2
cmp -s "$T/model.json" "$FB_SOURCE_DIR/configs/models/tiny-dense.json" \
  && ok "-o naming an input: the input is left as it was" || fail "-o naming an input: it was written: $(head -c 300 "$T/model.json")"
cat >"$T/suite_model.json" <<JSON
{"steps": [{"name": "t", "command": "train", "args": ["--model", "$T/model.json", "--steps", "2"]}]}
JSON
stuck suite_model_out "$T/model.json" suite "$T/suite_model.json" --backend host
cmp -s "$T/model.json" "$FB_SOURCE_DIR/configs/models/tiny-dense.json" \
  && ok "-o naming a file a suite's step reads: left as it was" || fail "suite step input written: $(head -c 300 "$T/model.json")"

# The placeholder goes again when the command then fails (an impossible layout, found with MPI up): no
# report, and not the earlier one.
echo '{"an earlier run": true}' >"$T/layout.json"
run_capture layout fb_mpirun 2 train --backend host --model tiny-dense --tp 3 --steps 2 -o "$T/layout.json"
[ "$RC" -eq 2 ] && [ ! -e "$T/layout.json" ] && ok "an error found with MPI up: no report, not the earlier one" \
  || fail "layout: exit $RC, $(ls "$T" | grep layout), $(head -3 "$T/layout.err")"
# A run that ends well: its own report, and no notice (MPI started well within 10 s, even on a loaded CI
# machine, where a 1 s notice fired 1 run in 3).
run_capture whole env FACTORYBENCH_START_NOTICE=10 mpirun --oversubscribe -np 2 "$FACTORYBENCH" gemm --backend host \
  --m 64 --n 64 --k 64 -o "$T/gemm.json"
[ "$RC" -eq 0 ] && assert_json "$T/gemm.json" "d['results'][0]['status'] == 'ok' and d['results'][0]['name'] != 'unfinished'" \
  "a whole run replaces the start-up report with its own" || fail "whole: exit $RC: $(stderr_summary "$T/whole.err")"
grep -q "start-up has waited" "$T/whole.err" && fail "a notice in a run whose MPI started: $(cat "$T/whole.err")" \
  || ok "no notice where MPI started at once"
expect_error bad_notice 2 "^factorybench: error: invalid FACTORYBENCH_START_NOTICE 'soon': expected seconds before the first warning that the start-up \\(MPI's, NCCL's\\) still waits for a rank, 0 \(none\) to 86400$" \
  env FACTORYBENCH_START_NOTICE=soon "$FACTORYBENCH" gemm --backend host --m 64
pgrep -f "^sleep $MARK\$" >/dev/null && fail "the stand-in rank is still running" || ok "nothing left running"
finish
