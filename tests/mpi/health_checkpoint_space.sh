#!/usr/bin/env bash
# health's checkpoint_dir check on a volume that holds every rank's scratch file with room to spare: it passes
# on every rank, every time. The ranks of a host write at once; each used to read the free space as it began,
# so a rank that came late counted its neighbours' writes in progress against the volume and failed (about 1
# run in 10 at 2 ranks). A small tmpfs, in a mount namespace of the test's own, makes the margin tight.
. "$(dirname "$0")/../lib.sh"

if ! unshare -m true 2>/dev/null; then
  skip "no mount namespace here (unshare -m needs CAP_SYS_ADMIN): a small volume cannot be made"
fi
mkdir -p "$T/vol"
# 4 ranks x 40 MiB = 160 MiB against 200 MiB: under 90% of the free space, so it fits.
for i in 1 2 3; do
  run_capture "fit$i" unshare -m bash -c 'mount -t tmpfs -o size=200M tmpfs "$1" && shift && exec "$@"' _ "$T/vol" \
    timeout 120 mpirun --oversubscribe -np 4 "$FACTORYBENCH" health --backend host --checkpoint-dir "$T/vol" \
    --checkpoint-size 40M --hang-timeout 60s --output "$T/fit$i.json"
  [ "$RC" -eq 0 ] && assert_json "$T/fit$i.json" "[(r['name'], r['status']) for r in d['results'] if r['name'].startswith('checkpoint_dir/')] == [('checkpoint_dir/rank%d' % k, 'ok') for k in range(4)]" \
    "run $i: checkpoint_dir passes on all 4 ranks of a volume they fit in" \
    || fail "fit$i: exit $RC: $(grep -h "checkpoint_dir" "$T/fit$i.out" "$T/fit$i.err" | head -3)"
done
# The same volume, 4 x 50 MiB = 200 MiB: more than 90% of it. Every rank fails, naming the sizes.
run_capture nofit unshare -m bash -c 'mount -t tmpfs -o size=200M tmpfs "$1" && shift && exec "$@"' _ "$T/vol" \
  timeout 120 mpirun --oversubscribe -np 4 "$FACTORYBENCH" health --backend host --checkpoint-dir "$T/vol" \
  --checkpoint-size 50M --hang-timeout 60s
[ "$RC" -eq 1 ] && [ "$(grep -cE "FAIL checkpoint_dir: checkpoint dir '$T/vol': 50 MiB per rank x 4 rank\(s\) on this host would not fit: 200 MiB free" "$T/nofit.out")" -eq 4 ] \
  && ok "4 x 50 MiB on 200 MiB: every rank fails checkpoint_dir with the sizes" \
  || fail "nofit: exit $RC: $(grep -c checkpoint_dir "$T/nofit.out") line(s): $(grep checkpoint_dir "$T/nofit.out" | head -2)"
finish
