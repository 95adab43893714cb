#!/usr/bin/env python3
"""Independent judge of a factorybench checkpoint directory, for tests/mpi/checkpoint_kill_loop.sh.

Prints "NEWEST COUNT": the newest step whose checkpoint is whole for WORLD ranks (0 if none) and how many are.
Whole = manifest.json parses, its own xxHash64 checksum (over the canonical dump without "checksum"; pure
Python xxHash64 below, not the code under test) matches, format/step/world_size agree, and every shard file
listed exists with the listed size. Shard contents are not re-hashed (too slow in Python for MiB shards): a
kill -9 cannot tear a shard that was fsync'ed and renamed into place, so what a kill can leave behind (tmp
files, missing shards, missing manifests, half-removed directories) is all visible to these checks.
Usage: checkpoint_oracle.py CHECKPOINT_DIR WORLD
"""
import json
import os
import re
import struct
import sys

P1, P2, P3 = 11400714785074694791, 14029467366897019727, 1609587929392839161
P4, P5 = 9650029242287828579, 2870177450012600261
M = (1 << 64) - 1


def rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & M


def rnd(acc, value):
    return (rotl((acc + value * P2) & M, 31) * P1) & M


def merge(acc, v):
    return (((acc ^ rnd(0, v)) * P1) + P4) & M


def xxh64(data, seed=0):
    """xxHash64 as specified in https://github.com/Cyan4973/xxHash/blob/dev/doc/xxhash_spec.md."""
    n, i = len(data), 0
    if n >= 32:
        v = [(seed + P1 + P2) & M, (seed + P2) & M, seed, (seed - P1) & M]
        while i + 32 <= n:
            lanes = struct.unpack_from("<4Q", data, i)
            v = [rnd(v[k], lanes[k]) for k in range(4)]
            i += 32
        h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)) & M
        for k in range(4):
            h = merge(h, v[k])
    else:
        h = (seed + P5) & M
    h = (h + n) & M
    while i + 8 <= n:
        h ^= rnd(0, struct.unpack_from("<Q", data, i)[0])
        h = (rotl(h, 27) * P1 + P4) & M
        i += 8
    if i + 4 <= n:
        h ^= (struct.unpack_from("<I", data, i)[0] * P1) & M
        h = (rotl(h, 23) * P2 + P3) & M
        i += 4
    while i < n:
        h ^= (data[i] * P5) & M
        h = (rotl(h, 11) * P1) & M
        i += 1
    h ^= h >> 33
    h = (h * P2) & M
    h ^= h >> 29
    h = (h * P3) & M
    return h ^ (h >> 32)


def whole(path, step, world):
    try:
        with open(os.path.join(path, "manifest.json"), "rb") as f:
            m = json.loads(f.read())
        body = {k: v for k, v in m.items() if k != "checksum"}
        canonical = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
        if m["checksum"] != "%016x" % xxh64(canonical):
            return False
        if m["format"] != "factorybench.checkpoint/v1" or m["step"] != step or m["world_size"] != world:
            return False
        if len(m["shards"]) != world:
            return False
        for r, s in enumerate(m["shards"]):
            if s["rank"] != r or os.path.getsize(os.path.join(path, s["file"])) != s["bytes"]:
                return False
        return True
    except (OSError, ValueError, KeyError, TypeError):
        return False


def main():
    assert xxh64(b"") == 0xEF46DB3751D8E999 and xxh64(b"a") == 0xD24EC4F1A98C6E5B  # the spec's test values
    root, world = sys.argv[1], int(sys.argv[2])
    steps = []
    if os.path.isdir(root):
        for name in os.listdir(root):
            if re.fullmatch(r"step-\d{8}", name):
                steps.append(int(name[5:]))
    good = [s for s in sorted(steps) if whole(os.path.join(root, "step-%08d" % s), s, world)]
    print(good[-1] if good else 0, len(good))


if __name__ == "__main__":
    main()
