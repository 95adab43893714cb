#!/usr/bin/env bash
# Enum options parsed once from one name table each (issue 14): a bad value is one line naming the option and
# every accepted name, exit 2, before anything is launched; every accepted name is accepted by every command
# that takes the option (--policy compare included: the supervisor takes none or drain, compare runs both).
. "$(dirname "$0")/../lib.sh"
set -e

F=(--backend host --faults "crash@step=99" --run-dir "$T/never")
expect_error launcher 2 "^factorybench: error: invalid --launcher 'ssh': expected mpirun, srun or none$" \
  fb resilience --launcher ssh "${F[@]}"
expect_error policy 2 "^factorybench: error: invalid --policy 'both': expected none, drain or compare$" \
  fb resilience --policy both "${F[@]}"
expect_error recompute 2 "^factorybench: error: invalid --recompute 'all': expected none, selective or full$" \
  fb resilience --recompute all "${F[@]}"
expect_error attention 2 "^factorybench: error: invalid --attention-flops 'half': expected causal or full$" \
  fb train --backend host --attention-flops half
expect_error none_ranks 2 "--launcher none runs one rank; --ranks 2 needs mpirun or srun" \
  fb resilience --launcher none --ranks 2 "${F[@]}"
# Training options are checked before the first launch (the model loaded, the layout validated).
expect_error layout 2 "--pp 2 does not divide tiny-moe's layers \(3\)" \
  fb resilience --ranks 2 --model tiny-moe --pp 2 "${F[@]}"
expect_error seq 2 "^factorybench: error: invalid --seq -1: must be at least 1 \(leave the option out for the default\)$" fb resilience --seq -1 "${F[@]}"
[ ! -e "$T/never" ] && ok "nothing launched for bad options" || fail "a run directory was created: $(ls "$T/never")"

# Each accepted name parses (help shows the default by name).
fb resilience --help | grep -qE -- "--policy NAME=none .*\(none, drain or compare\)" && ok "help lists the policies" \
  || fail "resilience --help: $(fb resilience --help | grep -- --policy)"
run_capture dry fb train --backend host --dry-run --recompute full --attention-flops full --output "$T/dry.json"
[ "$RC" -eq 0 ] || die "train --dry-run with enum options: exit $RC: $(cat "$T/dry.err")"
assert_json "$T/dry.json" "d['results'][0]['params']['recompute'] == 'full' and d['results'][0]['params']['attention_flops'] == 'full'" "enum values reach the plan"

# --fault-plan is --faults by the name the shared CLI contract (DESIGN.md) gives it: the plan runs and is reported.
run_capture plan fb resilience --backend host --launcher none --steps 6 --fault-plan "crash@step=3" \
  --checkpoint-every 2 --run-dir "$T/plan" --output "$T/plan.json"
[ "$RC" -eq 0 ] || die "resilience --fault-plan: exit $RC: $(cat "$T/plan.err")"
assert_json "$T/plan.json" "d['results'][0]['params']['faults'] == 'crash@step=3' and d['results'][0]['metrics']['failures']['value'] == 1" "--fault-plan is --faults: its crash fired once"
expect_error plan_twice 2 "^factorybench: error: --faults given 2 times: give it once$" \
  fb train --backend host --faults none --fault-plan "crash@step=2"
finish
