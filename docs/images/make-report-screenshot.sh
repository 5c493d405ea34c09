#!/bin/sh
# Rebuild docs/images/report.png: a real evaluation, its report, a screenshot of the page.
#   sh docs/images/make-report-screenshot.sh            (from the repository root)
# Needs acpc-lbr with the report extra (pip install -e '.[report]') and Chromium from the
# OS packages (Debian: apt-get install -y chromium). About a minute on 2 cores.
set -eu
ACPC_LBR=${ACPC_LBR:-acpc-lbr}
CHROMIUM=${CHROMIUM:-chromium}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$ACPC_LBR" evaluate --game leduc --opponent random --bets fcpa --rounds 1-2 --hands 2000 --seed 7 \
    --quiet --out "$work/logs" --json "$work/results.json" --report "$work/report.html" > "$work/stdout.txt"
"$CHROMIUM" --headless --no-sandbox --disable-gpu --hide-scrollbars --force-device-scale-factor=1 \
    --window-size=1100,2500 --screenshot="$work/report.png" "file://$work/report.html" 2> "$work/chromium.err"
cp "$work/report.png" docs/images/report.png
echo "docs/images/report.png written"
