#!/usr/bin/env bash
# --keep's prune that cannot remove an old checkpoint says so: a warning naming the checkpoint and the reason,
# and `prune_failed` in the ckpt_commit event; the directory is not reported as pruned, and the run goes on
# (the new checkpoint is committed). It used to be dropped silently, and the volume filled until a save failed.
# The old checkpoint is made unremovable with an immutable file (chattr +i, as root) or a read-only directory
# (as another user); where neither holds here, the test is skipped.
. "$(dirname "$0")/../lib.sh"
cd "$T"
RUN=$T/run
TRAIN=(train --backend host --model tiny-dense --layers 1 --warmup-steps 0 --checkpoint-every 2 --keep 1 --run-dir "$RUN")
run_capture first fb "${TRAIN[@]}" --steps 4
[ "$RC" -eq 0 ] || die "first run: exit $RC: $(stderr_summary "$T/first.err")"
OLD=$RUN/checkpoints/step-00000002
[ -e "$OLD/manifest.json" ] || die "no checkpoint at step 2: $(ls "$RUN/checkpoints")"
shard=$(ls "$OLD"/*.shard | head -1)
if [ "$(id -u)" = 0 ]; then
  chattr +i "$shard" 2>/dev/null || skip "chattr +i is not supported on this file system"
  trap 'chattr -i "$shard" 2>/dev/null; rm -rf "$T"' EXIT  # replaces lib.sh's trap: remove $T here too
  rm -f "$shard" 2>/dev/null && skip "an immutable file could be removed here"
else
  chmod a-w "$OLD"
  trap 'chmod u+w "$OLD" 2>/dev/null; rm -rf "$T"' EXIT
fi
run_capture second fb "${TRAIN[@]}" --steps 8 --resume
[ "$RC" -eq 0 ] && ok "the run goes on (exit 0)" || fail "second: exit $RC: $(stderr_summary "$T/second.err")"
# Each later commit tries again (and records it); the warning is said once.
[ "$(grep -c "warning: --keep 1: an older checkpoint could not be removed, and its space stays in use: step-00000002: \(Operation not permitted\|Permission denied\)$" "$T/second.err")" -eq 1 ] \
  && ok "one warning names the checkpoint and the reason" || fail "warnings: $(grep -i warn "$T/second.err" | head -3)"
"$PY" - "$RUN/events.jsonl" <<'PY' && ok "ckpt_commit of step 6 lists step 2 under prune_failed, not under pruned" \
  || fail "ckpt_commit of step 6: $(grep '"ckpt_commit"' "$RUN/events.jsonl" | tail -2)"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
sys.exit(0 if any(e.get('type') == 'ckpt_commit' and e.get('step') == 6
                  and any(f.startswith('step-00000002: ') for f in e.get('prune_failed', []))
                  and 'step-00000002' not in e.get('pruned', []) for e in ev) else 1)
PY
[ -e "$RUN/checkpoints/step-00000008/manifest.json" ] && ok "the newest checkpoint is committed" \
  || fail "no checkpoint at step 8: $(ls "$RUN/checkpoints")"
finish
