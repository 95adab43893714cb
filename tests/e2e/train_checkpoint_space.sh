#!/usr/bin/env bash
# A run dir whose volume cannot hold the checkpoints the job keeps (--keep + 2 of every rank's shard) is
# refused before the first step, with the sizes: exit 2, no report. It used to be checked only with
# --state-bytes, so a plain run on a small volume failed most of its saves and still reported success.
# Needs a small volume: a 20 MiB tmpfs (root may mount one; where it cannot, the test is skipped).
. "$(dirname "$0")/../lib.sh"
cd "$T"
mkdir -p "$T/vol"
mount -t tmpfs -o size=20m tmpfs "$T/vol" 2>/dev/null || skip "cannot mount a 20 MiB tmpfs here (not root, or no mount rights)"
mkdir -p "$T/ro"
trap 'umount "$T/vol" "$T/ro" 2>/dev/null; rm -rf "$T"' EXIT  # replaces lib.sh's trap: remove $T here too
expect_error small_volume 2 "^factorybench: error: the run dir cannot hold the checkpoints: --keep 2 \+ 2 checkpoints of 1 rank\(s\), .* each need .*, but $T/vol/rd has .* free$" \
  fb --backend host -o "$T/t.json" train --model tiny-dense --steps 40 --run-dir "$T/vol/rd" --checkpoint-every 20 --keep 2
[ ! -e "$T/t.json" ] && ok "no report" || fail "a report was written"
[ -z "$(ls "$T/vol/rd/checkpoints" 2>/dev/null)" ] && ok "no checkpoint started" || fail "checkpoints: $(ls "$T/vol/rd/checkpoints")"
# One checkpoint kept fits (3 of them): the run goes on and saves.
run_capture fits fb --backend host -q -o "$T/t1.json" train --model tiny-dense --steps 4 --run-dir "$T/vol/rd1" --checkpoint-every 2 --keep 1
[ "$RC" -eq 0 ] && [ -e "$T/vol/rd1/checkpoints/step-00000004/manifest.json" ] && ok "--keep 1 fits and saves" \
  || fail "--keep 1: exit $RC $(cat "$T/fits.err")"
# A run dir on a read-only volume names why it cannot be made (it used to say the lock file was missing).
if mount -t tmpfs -o ro,size=1m tmpfs "$T/ro" 2>/dev/null; then
  expect_error read_only 2 "^factorybench: error: --run-dir $T/ro/rd: cannot create it: Read-only file system$" \
    fb --backend host train --model tiny-dense --steps 2 --run-dir "$T/ro/rd"
fi
finish
