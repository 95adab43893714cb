#!/usr/bin/env bash
# The drain target of issue 6: with flaky ranks and --policy drain, MTTF >= 3x that of --policy none on the
# same fault seed. Runs `factorybench resilience --policy compare` (none, then drain, same random plan) for a
# few seeds, each policy for the same wall-clock budget, and prints per seed and pooled over the seeds
# (total uptime / total failures per policy) the MTTF of each policy and their ratio. Exit 0 when the pooled
# ratio meets the target, 1 when it does not.
#
#   bench/drain_mttf.sh                      # defaults below; FACTORYBENCH=path/to/factorybench to pick a build
#   SEEDS="1 2 3 4 5" BUDGET=60s bench/drain_mttf.sh
#
# The plan: random faults at a job MTBF of $MTBF (crash, hang, sdc, nan: all fatal), $SHARE of them on $FLAKY
# flaky rank(s); $SPARES spare slot(s) with the ordinary per-node fault rate. A fault fires at the first step
# after its time, on whichever rank holds its slot; a drained rank's spare does not inherit them.
# --straggler-threshold is low because an oversubscribed host (4 ranks on 2 cores) makes healthy ranks look
# slow, and a straggler report counts towards draining like a failure.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
FB=${FACTORYBENCH:-}
if [ -z "$FB" ]; then
  for c in "$ROOT"/build/release/tools/factorybench "$ROOT"/build/*/tools/factorybench; do
    [ -x "$c" ] && { FB=$c; break; }
  done
fi
[ -x "${FB:-}" ] || { echo "drain_mttf: no factorybench binary (build first or set FACTORYBENCH)" >&2; exit 2; }
RANKS=${RANKS:-4} SPARES=${SPARES:-2} FLAKY=${FLAKY:-1} SHARE=${SHARE:-0.9} MTBF=${MTBF:-4s}
MIX=${MIX:-crash:0.6/hang:0.2/sdc:0.1/nan:0.1} SEEDS=${SEEDS:-1 2 3} BUDGET=${BUDGET:-45s} TARGET=${TARGET:-3}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OPENBLAS_NUM_THREADS=1
OUT=${OUT:-$(mktemp -d /tmp/drain_mttf.XXXXXX)}
mkdir -p "$OUT"
echo "drain_mttf: $RANKS ranks + $SPARES spare(s), random:mtbf=$MTBF,mix=$MIX,flaky-ranks=$FLAKY,flaky-share=$SHARE;" \
     "$BUDGET per policy per seed; reports in $OUT"
for seed in $SEEDS; do
  faults="random:mtbf=$MTBF,mix=$MIX,flaky-ranks=$FLAKY,flaky-share=$SHARE,seed=$seed"
  "$FB" resilience --ranks "$RANKS" --launcher mpirun --launcher-args "--oversubscribe" --backend host \
    --model tiny-dense --time-budget "$BUDGET" --checkpoint-every 20 --hang-timeout 3s --straggler-threshold 0.3 \
    --max-restarts 1000 --policy compare --spares "$SPARES" --drain-after 1 --faults "$faults" \
    --run-dir "$OUT/run-$seed" -o "$OUT/seed-$seed.json" >"$OUT/seed-$seed.log" 2>&1 ||
    { echo "seed $seed: resilience exited $? (see $OUT/seed-$seed.log)" >&2; exit 2; }
done
python3 - "$OUT" "$TARGET" $SEEDS <<'EOF'
import json, sys
out, target, seeds = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
pool = {"none": [0.0, 0], "drain": [0.0, 0]}
print(f"{'seed':>4} {'policy':>6} {'failures':>8} {'uptime_s':>9} {'mttf_s':>8} {'goodput%':>8}  drains")
for seed in seeds:
    d = json.load(open(f"{out}/seed-{seed}.json"))
    by = {r["params"]["policy"]: r for r in d["results"]}
    for policy in ("none", "drain"):
        L = by[policy]["extra"]["ledger"]
        pool[policy][0] += L["uptime_s"]
        pool[policy][1] += L["failures"]
        drains = len(by[policy]["extra"].get("drains", []))
        print(f"{seed:>4} {policy:>6} {L['failures']:>8} {L['uptime_s']:>9.1f} {L['mttf_s']:>8.2f} "
              f"{100 * L['goodput']:>8.1f}  {drains}")
    print(f"{seed:>4}  ratio x{d['summary']['compare']['mttf_ratio']:.2f}, goodput "
          f"{d['summary']['compare']['goodput_pct_difference']:+.1f} points")
mttf = {p: (u / f if f else float("inf")) for p, (u, f) in pool.items()}
ratio = mttf["drain"] / mttf["none"] if mttf["none"] > 0 else float("inf")
print(f"pooled: MTTF none {mttf['none']:.2f} s ({pool['none'][1]} failures), drain {mttf['drain']:.2f} s "
      f"({pool['drain'][1]} failures)")
print(f"MTTF ratio drain/none = {ratio:.2f} (target >= {target:g}): {'PASS' if ratio >= target else 'FAIL'}")
sys.exit(0 if ratio >= target else 1)
EOF
