#!/usr/bin/env python3
"""Golden-report comparison for the host backend (issue 14: reports for the same seed stay unchanged).

    golden_report.py GOLDEN REPORT [REPORT...]   compare the masked reports with GOLDEN (exit 1 on a diff)
    FB_UPDATE_GOLDEN=1 golden_report.py ...      write GOLDEN from the masked reports instead

Masking keeps what a seed and the options decide: result names, status and errors, params (FLOP and byte
counts, bus factors, dtypes, engines), metric names, units and directions, sample counts, exact counts
(wrong elements, routing checksums), check outcomes and the per-rank layout. It drops what the machine or
the clock decides: times and rates, telemetry, hosts, commit, peak figures, cache-dependent buffer counts
and which sweep shape happened to be fastest.
"""
import difflib
import json
import os
import sys

# Metrics whose value is exact (counts, shares of a seeded routing), kept as is; others become "<num>".
EXACT_METRICS = {"wrong", "busiest_share", "wrong_elements", "uncorrected"}
EXACT_PER_RANK = {"routing_checksum"}
# Params that depend on the machine (peak, last-level cache, free memory) rather than the options.
MACHINE_PARAMS = {"peak_source", "peak_tflops", "buffer_sets"}
# Params of a sweep's best shape: whichever shape was fastest this time.
BEST_PARAMS = {"best_shape", "m", "n", "k"}


def mask_floats(value):
    """Integers, strings and booleans stay; floats (measured) become "<num>"."""
    if isinstance(value, dict):
        return {k: mask_floats(v) for k, v in value.items() if k != "telemetry"}
    if isinstance(value, list):
        return [mask_floats(v) for v in value]
    if isinstance(value, float):
        return "<num>"
    return value


def mask_metric(name, m):
    out = {"unit": m["unit"], "better": m["better"]}
    out["value"] = m["value"] if name in EXACT_METRICS else "<num>"
    if "stats" in m:
        out["stats_n"] = m["stats"]["n"]
    return out


def mask_result(r):
    params = {k: v for k, v in r.get("params", {}).items() if k not in MACHINE_PARAMS}
    if r["name"].endswith("/mamf"):
        params = {k: ("<best>" if k in BEST_PARAMS else v) for k, v in params.items()}
    return {
        "benchmark": r["benchmark"],
        "name": r["name"],
        "status": r["status"],
        "error": r.get("error"),
        "params": params,
        "metrics": {k: mask_metric(k, m) for k, m in sorted(r.get("metrics", {}).items())},
        "per_rank": {k: (v if k in EXACT_PER_RANK else len(v)) for k, v in sorted(r.get("per_rank", {}).items())},
        "extra": mask_floats(r.get("extra", {})),
    }


def mask_summary(s):
    s = {k: v for k, v in s.items() if k not in ("telemetry", "peak_source", "peak_tflops")}
    if "slow_ranks" in s:  # which rank is slow depends on the machine's load
        s["slow_ranks"] = "<masked>"
    if "sweep" in s:
        s["sweep"] = {"shapes": s["sweep"]["shapes"], "best": "<best>", "mean_tflops": "<num>"}
    return mask_floats(s)


def mask_report(path):
    with open(path) as f:
        d = json.load(f)
    return {
        "file": os.path.basename(path),
        "world_size": d["run"]["world_size"],
        "backend": d["run"]["backend"],
        "results": [mask_result(r) for r in d["results"]],
        "summary": mask_summary(d.get("summary", {})),
    }


def main(argv):
    if len(argv) < 3:
        sys.stderr.write("usage: golden_report.py GOLDEN REPORT [REPORT...]\n")
        return 2
    golden, reports = argv[1], argv[2:]
    text = json.dumps([mask_report(p) for p in reports], indent=1, sort_keys=True) + "\n"
    if os.environ.get("FB_UPDATE_GOLDEN") == "1":
        with open(golden, "w") as f:
            f.write(text)
        print(f"golden written: {golden}")
        return 0
    with open(golden) as f:
        want = f.read()
    if want == text:
        print(f"golden matches: {os.path.basename(golden)} ({len(reports)} report(s))")
        return 0
    sys.stdout.writelines(
        list(difflib.unified_diff(want.splitlines(True), text.splitlines(True), "golden", "now"))[:200])
    sys.stderr.write(f"golden differs: {golden} (FB_UPDATE_GOLDEN=1 rewrites it after a deliberate change)\n")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
