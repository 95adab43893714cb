#!/usr/bin/env bash
# Golden reports for `simulate` (issue 14): seeded Monte Carlo runs are deterministic, so every figure of the
# report must stay as checked in under tests/data/golden/ (run metadata masked by tests/tools/mask_report.py,
# floats to 12 significant digits). A change of any figure is a change of behaviour: if it is intended,
# regenerate with FB_UPDATE_GOLDEN=1 and say why in the commit.
. "$(dirname "$0")/../lib.sh"
set -e
GOLDEN="$FB_SOURCE_DIR/tests/data/golden"

golden() {  # NAME ARGS...: simulate ARGS with a fixed seed, compared with tests/data/golden/simulate_NAME.json
  local name=$1; shift
  run_capture "$name" fb simulate --seed 3 "$@" --output "$T/$name.json"
  [ "$RC" -eq 0 ] || { fail "$name: exit $RC: $(cat "$T/$name.err")"; return; }
  if "$PY" "$FB_SOURCE_DIR/tests/tools/mask_report.py" "$T/$name.json" --replace "$FB_SOURCE_DIR=<src>" \
    --golden "$GOLDEN/simulate_$name.json"; then
    ok "$name: report equals the golden"
  else
    fail "$name: report differs from $GOLDEN/simulate_$name.json (diff above)"
  fi
}

# The Llama 3 failure table at 1,024 GPUs, Daly's interval.
golden llama --gpus 1024 --days 7 --trials 5
# Draining with few spares, flaky nodes and stragglers.
golden drain --gpus 512 --days 10 --trials 4 --policy drain --spares 2 --drain-after 1 --flaky-share 0.1 \
  --flaky-factor 8 --straggler-share 0.05 --straggler-factor 1.5
# A single-rate model over fixed intervals, and a fixed amount of work (time to train).
golden intervals --job-mtbf 12h --gpus 256 --days 5 --trials 4 --sweep-interval 30m,2h
golden work --failure-model meta-rsc1-a100 --gpus 2048 --work-days 3 --trials 4 --checkpoint-interval auto
finish
