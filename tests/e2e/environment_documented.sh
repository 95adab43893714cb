#!/usr/bin/env bash
# The README's table of environment variables (section "Environment") names every FACTORYBENCH_ and FB_
# variable the sources name, and none that they no longer do: a new knob cannot go undocumented, nor a removed
# one stay listed.
. "$(dirname "$0")/../lib.sh"
cd "$FB_SOURCE_DIR"
section=$(awk '/^### Environment$/ {on = 1; next} on && /^##/ {exit} on' README.md)
[ -n "$section" ] || die "README.md has no '### Environment' section"
in_sources=$(grep -rhoE '"(FACTORYBENCH|FB)_[A-Z0-9_]+"' --include=*.cpp --include=*.hpp --include=*.cu \
  core tools workloads resilience reports kernels | tr -d '"' | sort -u)
[ "$(echo "$in_sources" | grep -c .)" -ge 10 ] || die "found only: $in_sources"
in_readme=$(printf '%s\n' "$section" | grep -oE '`(FACTORYBENCH|FB)_[A-Z0-9_]+`' | tr -d '`' | sort -u)
missing=$(comm -23 <(echo "$in_sources") <(echo "$in_readme"))
stale=$(comm -13 <(echo "$in_sources") <(echo "$in_readme"))
[ -z "$missing" ] && ok "every variable the sources read is in the README ($(echo "$in_sources" | grep -c .))" \
  || fail "not in README.md's Environment section: $(echo $missing)"
[ -z "$stale" ] && ok "the README lists no variable the sources no longer read" || fail "listed but not read: $(echo $stale)"
finish
