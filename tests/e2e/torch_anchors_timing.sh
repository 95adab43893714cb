#!/usr/bin/env bash
# scripts/torch_anchors.py times PyTorch the way our figures are timed: warm-up calls, one CUDA event pair per
# call, the median call (a mean of back-to-back calls let one slow call move the anchor every ratio is read
# against). Checked here with a stand-in for torch.cuda.Event on the host clock: one call in five is 150x
# slower, and the median must not see it; the warm-up calls are not timed.
. "$(dirname "$0")/../lib.sh"

cat >"$T/check.py" <<'PY'
import sys, time, types
sys.path.insert(0, sys.argv[1])
import torch_anchors

class Event:
    def __init__(self, enable_timing=False):
        self.t = None
    def record(self):
        self.t = time.perf_counter()
    def synchronize(self):
        pass
    def elapsed_time(self, end):
        return (end.t - self.t) * 1e3  # milliseconds, as CUDA's

torch = types.SimpleNamespace(cuda=types.SimpleNamespace(Event=Event))
calls = []
def fn():
    calls.append(1)
    n = len(calls)
    time.sleep(0.5 if n <= 2 else (0.3 if n % 5 == 0 else 0.002))  # 2 slow warm-up calls, then 1 in 5 slow
s = torch_anchors.timed(torch, fn, 2, 10)
assert len(calls) == 12, len(calls)
# The median of 2 ms calls; a mean would be about 62 ms, with warm-up far more. 30 ms: room for a loaded CI
# machine to wake a sleeper late.
assert 0.0015 < s < 0.03, s
# --cpu (a check of the script where torch has no GPU): the wall clock around each call, the same median.
torch_anchors.DEV = "cpu"
calls.clear()
c = torch_anchors.timed(None, fn, 2, 10)
assert len(calls) == 12 and 0.0015 < c < 0.03, (len(calls), c)
print("median call %.4f s (events), %.4f s (--cpu)" % (s, c))
PY
run_capture timing "$PY" "$T/check.py" "$FB_SOURCE_DIR/scripts"
[ "$RC" -eq 0 ] && ok "torch anchors: median of per-call event pairs, warm-up untimed ($(cat "$T/timing.out"))" \
  || fail "torch anchors timing: $(cat "$T/timing.err")"
finish
