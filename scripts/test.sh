#!/usr/bin/env bash
# Runs every test (make test), then prints the five slowest packages.
set -euo pipefail
cd "$(dirname "$0")/.."
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
go test -count=1 -timeout 40m ./... 2>&1 | tee "$log" || status=$?
echo "slowest packages:"
awk '($1 == "ok" || $1 == "FAIL") && $3 ~ /^[0-9.]+s$/ { sub(/s$/, "", $3); printf "%10.1fs  %s\n", $3, $2 }' "$log" |
	sort -rn | head -5
exit "$status"
