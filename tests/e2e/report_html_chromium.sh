#!/usr/bin/env bash
# The HTML report in a real browser: Debian's chromium (listed in scripts/install-deps.sh) parses the page,
# renders it headless and writes a PNG screenshot. Skipped (exit 77, reported by ctest as skipped), saying
# why, only when chromium is not installed or cannot start; the test installs nothing itself.
# FB_SCREENSHOT_DIR=DIR keeps the screenshot.
. "$(dirname "$0")/../lib.sh"
set -e
find_chromium() { command -v chromium || command -v chromium-browser || command -v google-chrome || true; }
CHROMIUM=$(find_chromium)
[ -n "$CHROMIUM" ] || skip "chromium is not installed (scripts/install-deps.sh installs it)"
browser() {
  timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --hide-scrollbars \
    --no-first-run --user-data-dir="$T/profile" "$@" 2>>"$T/chromium.err"
}
if ! browser --dump-dom "data:text/html,<p>ok</p>" >"$T/probe.html" || ! grep -q "<p>ok</p>" "$T/probe.html"; then
  tail -5 "$T/chromium.err"
  skip "chromium ($CHROMIUM) cannot start here (its stderr above)"
fi

fb report "$FB_SOURCE_DIR/tests/data/report_sample.json" --format html -o "$T/report.html"
charts=$(grep -c '<figure class="chart"' "$T/report.html")

# The browser's DOM after parsing: every chart is an <svg> element that survived the HTML parser.
browser --dump-dom "file://$T/report.html" >"$T/dom.html"
dom_svgs=$(grep -o '<svg ' "$T/dom.html" | wc -l)
[ "$dom_svgs" -eq "$charts" ] && [ "$charts" -gt 0 ] && ok "chromium parsed $dom_svgs svg charts" ||
  fail "DOM has $dom_svgs svg for $charts charts"
grep -q "</html>" "$T/dom.html" && ok "DOM complete" || fail "DOM incomplete"

# The screenshot: a PNG of a real size, not a blank page.
browser --window-size=1400,3200 --screenshot="$T/report.png" "file://$T/report.html" >/dev/null
[ -s "$T/report.png" ] || die "no screenshot written: $(stderr_summary "$T/chromium.err")"
magic=$(head -c 8 "$T/report.png" | od -An -tx1 | tr -d ' \n')
[ "$magic" = "89504e470d0a1a0a" ] && ok "screenshot is a PNG" || fail "not a PNG: $magic"
size=$(stat -c %s "$T/report.png")
[ "$size" -gt 100000 ] && ok "screenshot has content ($size bytes)" || fail "screenshot too small ($size bytes): blank page?"
width=$((16#$(od -An -tx1 -j16 -N4 "$T/report.png" | tr -d ' \n')))
[ "$width" -eq 1400 ] && ok "screenshot 1400 px wide" || fail "screenshot width $width"
if [ -n "${FB_SCREENSHOT_DIR:-}" ]; then
  mkdir -p "$FB_SCREENSHOT_DIR" && cp "$T/report.png" "$T/report.html" "$FB_SCREENSHOT_DIR/" && ok "kept in $FB_SCREENSHOT_DIR"
fi
finish
