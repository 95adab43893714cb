#!/usr/bin/env bash
# Step time of `factorybench train` against the sum of its parts, measured standalone (host backend).
#
#   scripts/train-vs-parts.sh [-b FACTORYBENCH] [-n RANKS] [--steps N] [--iters N] [--keep DIR] [--strict]
#                             ["MODEL TRAIN-OPTIONS" ...]
#
# For each case (default: one rank per core, "tiny-dense --tp 2 --dp 2" and "tiny-moe --dp 4 --ep 2" on 4 ranks,
# or "tiny-dense --tp 2", "tiny-dense --dp 2" and "tiny-moe --dp 2 --ep 2" on 2 ranks with fewer than 4 cores) it
#   1. runs `mpirun -np RANKS factorybench train --backend host MODEL OPTIONS -o train.json`;
#   2. times the same GEMMs with `factorybench gemm` on the same number of ranks at once (as in the step):
#      the layer projections through `gemm --model MODEL --tp T --seq S --micro-batch B` where their
#      m·n·k matches the step's, everything else the step runs (attention score/context strips of every size,
#      router, experts with the step's routed rows, output layer) through `gemm --m --n --k --batch --ta --tb`
#      with the shapes of the train report's plan (extra.gemms);
#   3. times the same collectives with `factorybench collective --split GROUP` (every group at once): the
#      bytes the step moved per step (extra.collective_bytes_per_step, rank 0) divided into the calls it made
#      (extra.collective_calls_per_step): DP/expert-DP gradients as that many all-reduces of the mean bucket,
#      EP all-to-all-v as a balanced all-to-all;
#   4. sums parts x calls per step (layers x micro-batches for per-layer work) and adds the non-GEMM compute the
#      step itself measured (elementwise, optimizer, MoE routing kernels: extra.breakdown), which has no
#      standalone tool. The attention softmax (inside the step's "attention" category) is not in the parts.
# and prints step time, sum of parts and their ratio against the target "step time within 15% of the sum of
# its parts". The host backend on a shared CI machine is noisy (ranks oversubscribe the cores): rerun before
# reading much into one figure. --strict exits 1 when a case misses the target. Pipeline layouts (--pp > 1)
# are not decomposed (their bubble is not a part): use pp 1. Needs mpirun and python3 (standard library).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
FB=${FACTORYBENCH:-}
RANKS=""
STEPS=12
ITERS=20
KEEP=""
STRICT=0
CASES=()
while [ $# -gt 0 ]; do
  case $1 in
    -b | --binary) FB=$2; shift 2 ;;
    -n | --ranks) RANKS=$2; shift 2 ;;
    --steps) STEPS=$2; shift 2 ;;
    --iters) ITERS=$2; shift 2 ;;
    --keep) KEEP=$2; shift 2 ;;
    --strict) STRICT=1; shift ;;
    -h | --help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "train-vs-parts: unknown option $1" >&2; exit 2 ;;
    *) CASES+=("$1"); shift ;;
  esac
done
if [ -z "$FB" ]; then
  for c in "$ROOT/build/release/tools/factorybench" "$ROOT/build/host/tools/factorybench" \
           "$ROOT/build/train/tools/factorybench"; do
    if [ -x "$c" ]; then FB=$c; break; fi
  done
fi
[ -n "$FB" ] && [ -x "$FB" ] || { echo "train-vs-parts: no factorybench binary (build it, or pass -b PATH)" >&2; exit 2; }
# One rank per core by default: with more ranks than cores a rank waits in every collective for peers the OS
# has descheduled, and that wait lands in the step's exposed communication but not in the standalone parts.
CORES=$(nproc)
[ -n "$RANKS" ] || RANKS=$((CORES >= 4 ? 4 : 2))
if [ ${#CASES[@]} -eq 0 ]; then
  if [ "$RANKS" -ge 4 ]; then
    CASES=("tiny-dense --tp 2 --dp 2" "tiny-moe --dp 4 --ep 2")
  else
    CASES=("tiny-dense --tp 2" "tiny-dense --dp 2" "tiny-moe --dp 2 --ep 2")
  fi
fi
[ "$RANKS" -le "$CORES" ] || echo "train-vs-parts: note: $RANKS ranks on $CORES cores: ranks wait for descheduled peers inside the step, which the standalone parts do not see; expect the step to miss the target" >&2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
WORK=${KEEP:-$(mktemp -d /tmp/train-vs-parts.XXXXXX)}
mkdir -p "$WORK"
[ -n "$KEEP" ] || trap 'rm -rf "$WORK"' EXIT

exec python3 - "$FB" "$RANKS" "$STEPS" "$ITERS" "$WORK" "$STRICT" "${CASES[@]}" <<'PY'
import json, os, shlex, statistics, subprocess, sys

fb, ranks, steps, iters, work, strict = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6] == "1"
cases = sys.argv[7:]
TARGET = 0.15


def run(args, out):
    cmd = ["mpirun", "--oversubscribe", "-np", str(ranks), fb] + args + ["--backend", "host", "--quiet", "-o", out]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit(f"train-vs-parts: {' '.join(shlex.quote(c) for c in cmd)} failed ({p.returncode}):\n{p.stderr.strip()}")
    return json.load(open(out))


def gemm_time(results, name=None):
    for r in results:
        if r["status"] == "ok" and (name is None or r["name"] == name):
            return r["metrics"]["time_us"]["value"] * 1e-6
    return None


def flops(g):
    return g["m"] * g["n"] * g["k"] * g.get("batch", 1)


verdicts = []
for index, case in enumerate(cases):
    words = shlex.split(case)
    model, options = words[0], words[1:]
    tag = f"case{index}"
    train = run(["train", "--model", model, *options, "--steps", str(steps), "--warmup-steps", "2"],
                f"{work}/{tag}-train.json")["results"][0]
    p, extra = train["params"], train["extra"]
    if p["pp"] > 1:
        sys.exit(f"train-vs-parts: {case}: pipeline layouts are not decomposed (the bubble is not a part); use --pp 1")
    step = train["metrics"]["step_time_s"]["value"]
    micro = p["grad_accum"]
    dtype = p["dtype"]
    seq = p["seq"]

    # --- GEMMs ----------------------------------------------------------------------------------------------
    by_model = run(["gemm", "--model", model, "--tp", str(p["tp"]), "--seq", str(seq), "--micro-batch",
                    str(p["micro_batch"]), "--dtype", dtype, "--iters", str(iters), "--warmup", "5", "--no-check"],
                   f"{work}/{tag}-gemm-model.json")["results"]
    model_shapes = {}
    for r in by_model:
        role, pss = r["name"].split("/")[-2:]
        model_shapes[(role, pss)] = r
    gemm_s, rows, cache = 0.0, [], {}
    for g in extra["gemms"]:
        per_step = g["calls_per_layer"] * g["layers"] * micro
        role, pss = g["name"].split("/")[-2:]
        shapes = [(g["m"], g["n"], g["k"], per_step)]
        if role.startswith("attn_scores") or role.startswith("attn_context"):
            # Listed at the largest strip (keys = seq); strip i of nb uses keys = (i+1)·B: time each size.
            block = int(g["note"].split("block ")[1].split(":")[0])
            nb = seq // block
            shapes = []
            for i in range(nb):
                dims = [d if d != seq or block == seq else (i + 1) * block for d in (g["m"], g["n"], g["k"])]
                shapes.append((*dims, per_step // nb))
        for m, n, k, calls in shapes:
            via = "plan"
            t = None
            ref = model_shapes.get((role, pss))
            if ref is not None and len(shapes) == 1 and ref["params"]["m"] * ref["params"]["n"] * ref["params"]["k"] * ref["params"].get("batch", 1) == m * n * k * g["batch"]:
                t, via = gemm_time([ref]), "gemm --model"
            if t is None:
                key = (m, n, k, g["batch"], g["transa"], g["transb"])
                if key not in cache:
                    res = run(["gemm", "--m", str(m), "--n", str(n), "--k", str(k), "--batch", str(g["batch"]),
                               "--ta", "T" if g["transa"] else "N", "--tb", "T" if g["transb"] else "N",
                               "--dtype", dtype, "--iters", str(iters), "--warmup", "5", "--no-check"],
                              f"{work}/{tag}-gemm-{len(cache)}.json")["results"]
                    cache[key] = gemm_time(res)
                t = cache[key]
            gemm_s += t * calls
            rows.append((f"{role}/{pss}", f"{m}x{n}x{k}" + (f" b{g['batch']}" if g["batch"] > 1 else ""), calls, t, via))

    # --- collectives ----------------------------------------------------------------------------------------
    plan = {c["name"]: c for c in extra["collectives_plan"]}
    done = extra["collective_bytes_per_step"]
    done_calls = extra.get("collective_calls_per_step", {})  # reports since 2026-12-03 count calls
    elem = 2 if dtype == "bf16" else 4
    tp, dp, ep = p["tp"], p["dp"], p["ep"]
    layers = p["layers"]
    moe_layers = next((g["layers"] for g in extra["gemms"] if g["name"].endswith("expert_up/fwd")), 0)
    act = (plan.get("tp_allreduce/layer_out") or plan.get("tp_reduce_scatter/layer_out") or {"bytes_per_call": 0})["bytes_per_call"]
    coll_s, crow = 0.0, []
    for name, nbytes in sorted(done.items()):
        kind = name.split("/")[0]
        if kind == "tp_allreduce":
            op, group = "allreduce", plan[name]["group_size"] if name in plan else tp  # kv_head_grads: kv copies
            size = plan[name]["bytes_per_call"] if name in plan else act
        elif kind == "tp_reduce_scatter":
            op, group, size = "reducescatter", tp, act
        elif kind == "tp_allgather":
            op, group, size = "allgather", tp, act  # nccl-tests S: the gathered output
            nbytes = nbytes * tp                    # the step counts the input (1/tp of it)
        elif kind == "dp_allreduce":  # one call per gradient bucket: their mean size
            op, group = "allreduce", dp
            size = nbytes / done_calls.get(name, layers + 2)
        elif kind == "edp_allreduce":
            op, group = "allreduce", dp * tp // ep
            size = nbytes / done_calls.get(name, max(moe_layers, 1))
        elif kind == "ep_alltoall":  # the row counts before each dispatch
            op, group = "alltoall", ep
            size = nbytes / done_calls.get(name, max(moe_layers * micro, 1))
        elif kind == "ep_alltoallv":
            op, group = "alltoall", ep
            size = nbytes / done_calls.get(name, max(moe_layers * micro, 1))
        else:
            sys.exit(f"train-vs-parts: no standalone part for collective {name}")
        if group <= 1 or nbytes <= 0:
            continue
        quantum = group * elem
        size = max(quantum, int(round(size / quantum)) * quantum)
        calls = nbytes / size
        args = ["collective", "--op", op, "-b", str(size), "-e", str(size), "-d", dtype, "-n", str(iters * 2), "-w", "5"]
        if group < ranks:
            args += ["--split", str(group)]
        res = run(args, f"{work}/{tag}-coll-{len(crow)}.json")["results"]
        times = [r["metrics"]["time_us"]["value"] * 1e-6 for r in res if "time_us" in r.get("metrics", {})]
        t = statistics.median(times)
        coll_s += t * calls
        crow.append((name, op, size, group, calls, t))

    other = sum(extra["breakdown"].get(c, 0.0) for c in ("elementwise", "optimizer", "moe_dispatch_combine"))
    parts = gemm_s + coll_s + other
    ratio = step / parts
    ok = abs(ratio - 1) <= TARGET
    verdicts.append(ok)

    print(f"\n== {model} {' '.join(options)}  ({ranks} ranks, host backend, {dtype}, seq {seq} x micro-batch "
          f"{p['micro_batch']} x grad-accum {micro})")
    print(f"  {'GEMM (role/pass)':<30} {'m x n x k':>18} {'calls/step':>10} {'time (us)':>10}  source")
    for r in rows:
        print(f"  {r[0]:<30} {r[1]:>18} {r[2]:>10} {r[3] * 1e6:>10.1f}  {r[4]}")
    print(f"  {'collective':<30} {'op':>14} {'S (B)':>9} {'group':>5} {'calls':>6} {'time (us)':>10}")
    for c in crow:
        print(f"  {c[0]:<30} {c[1]:>14} {c[2]:>9} {c[3]:>5} {c[4]:>6.1f} {c[5] * 1e6:>10.1f}")
    print(f"  step time (median of {steps - 2} measured steps)   {step:.6f} s")
    print(f"  GEMMs (factorybench gemm)                     {gemm_s:.6f} s")
    print(f"  collectives (factorybench collective)         {coll_s:.6f} s")
    print(f"  other compute measured in the step            {other:.6f} s  (elementwise, optimizer, MoE routing)")
    print(f"  sum of parts                                  {parts:.6f} s")
    print(f"  ratio step / parts                            {ratio:.3f}  target within 15%: {'MET' if ok else 'MISSED'}")
    b = extra["breakdown"]
    comm = sum(b.get(c, 0.0) for c in ("exposed_tp_comm", "exposed_ep_comm", "exposed_dp_comm"))
    print(f"  where the step spent it (rank 0 breakdown): GEMM + attention {b.get('gemm', 0) + b.get('attention', 0):.6f} s "
          f"(standalone GEMMs {gemm_s:.6f} s), exposed communication {comm:.6f} s (standalone {coll_s:.6f} s)")

print(f"\ntrain-vs-parts: {sum(verdicts)} of {len(verdicts)} case(s) within 15%; host timings on a shared machine are noisy")
sys.exit(1 if strict and not all(verdicts) else 0)
PY
