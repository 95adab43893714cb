#!/usr/bin/env python3
"""Prints a factorybench report with its volatile fields masked, for golden-report tests.

Usage: mask_report.py REPORT [--mask REGEX]... [--drop REGEX]... [--replace OLD=NEW]... [--digits N]
                        [--golden FILE]

Always removed: run.id, run.started_at, run.finished_at, run.hosts, run.command, system and tool (when and
where the report was made, and by which commit). Then, anywhere in the document:
  --drop REGEX      removes every object member whose key matches REGEX (fully);
  --mask REGEX      keeps the member but replaces every number below it by "<num>" (times, rates, timings:
                    the structure and the units stay, the figures go);
  --replace OLD=NEW replaces OLD by NEW inside every string (temporary directories, the binary's path);
  --digits N        rounds the remaining floats to N significant digits (default 12), so that a golden does not
                    depend on the last bits of a libm.
The output is JSON with sorted keys, one member per line, so `diff -u golden masked` names what changed.
  --step-order-events  puts each event that a rank other than 0 wrote about step S after rank 0's events of
                    the same attempt about earlier steps. Both are written after step S-1's all-reduce (rank 0
                    records step S-1, rank 1 injects its fault at the start of step S), so their order in the
                    log is a race between processes, not part of what the golden checks.
  --golden FILE     compares the masked report with FILE instead of printing it: exit 0 when equal, else a
                    unified diff and exit 1. With FB_UPDATE_GOLDEN=1 in the environment, (re)writes FILE.
Shared by the golden tests (tests/e2e/golden_*.sh).
"""
import argparse
import difflib
import os
import json
import re
import sys

VOLATILE_RUN = ("id", "started_at", "finished_at", "hosts", "command")


def mask_numbers(v):
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, (int, float)):
        return "<num>"
    if isinstance(v, list):
        return [mask_numbers(x) for x in v]
    return {k: mask_numbers(x) for k, x in v.items()}


def walk(v, args):
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            if any(r.fullmatch(k) for r in args.drop):
                continue
            out[k] = mask_numbers(x) if any(r.fullmatch(k) for r in args.mask) else walk(x, args)
        return out
    if isinstance(v, list):
        return [walk(x, args) for x in v]
    if isinstance(v, str):
        for old, new in args.replace:
            v = v.replace(old, new)
        return v
    if isinstance(v, float) and not isinstance(v, bool):
        return float(f"{v:.{args.digits}g}")
    return v


def is_later_rank_event(e, other):
    """True when e, written by a rank other than 0 about its step, may follow `other` (rank 0's record of an
    earlier step of the same attempt) without changing what happened."""
    return (isinstance(e, dict) and isinstance(other, dict) and "attempt" in e and e.get("rank", 0) != 0
            and "by_rank" not in e and isinstance(e.get("step"), int) and other.get("by_rank") == 0
            and other.get("attempt") == e["attempt"] and isinstance(other.get("step"), int)
            and other["step"] < e["step"])


def step_order(events):
    """Moves each such event past the rank-0 events that follow it (a stable bubble: nothing else moves)."""
    out = list(events)
    i = 0
    while i < len(out) - 1:
        if is_later_rank_event(out[i], out[i + 1]):
            out[i], out[i + 1] = out[i + 1], out[i]
            i = max(i - 1, 0)
        else:
            i += 1
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("report")
    p.add_argument("--mask", action="append", default=[])
    p.add_argument("--drop", action="append", default=[])
    p.add_argument("--replace", action="append", default=[])
    p.add_argument("--digits", type=int, default=12)
    p.add_argument("--step-order-events", action="store_true")
    p.add_argument("--golden")
    args = p.parse_args()
    args.mask = [re.compile(r) for r in args.mask]
    args.drop = [re.compile(r) for r in args.drop]
    pairs = []
    for r in args.replace:
        if "=" not in r:
            sys.exit(f"mask_report.py: --replace '{r}' is not OLD=NEW")
        old, new = r.split("=", 1)
        if old:
            pairs.append((old, new))
    args.replace = sorted(pairs, key=lambda p: -len(p[0]))  # longest first: a path before its prefix
    with open(args.report) as f:
        doc = json.load(f)
    for key in VOLATILE_RUN:
        doc.get("run", {}).pop(key, None)
    doc.pop("system", None)
    doc.pop("tool", None)
    if args.step_order_events and isinstance(doc.get("events"), list):
        doc["events"] = step_order(doc["events"])
    text = json.dumps(walk(doc, args), indent=1, sort_keys=True) + "\n"
    if not args.golden:
        sys.stdout.write(text)
        return
    if os.environ.get("FB_UPDATE_GOLDEN") == "1":
        with open(args.golden, "w") as f:
            f.write(text)
        print(f"mask_report.py: wrote {args.golden}")
        return
    try:
        with open(args.golden) as f:
            want = f.read()
    except OSError as e:
        sys.exit(f"mask_report.py: cannot read golden {args.golden}: {e.strerror} (FB_UPDATE_GOLDEN=1 writes it)")
    if want != text:
        sys.stdout.writelines(difflib.unified_diff(want.splitlines(True), text.splitlines(True),
                                                   args.golden, args.report))
        sys.exit(1)


if __name__ == "__main__":
    main()
