#!/usr/bin/env bash
# Builds every Lambda function (lambda/<fn>/main.go) for provided.al2023 on
# arm64 into bin/<fn>/bootstrap, with the flags constructs/golambda deploys
# with, and prints the sizes beside the 10 MB budget (docs/performance.md).
#   scripts/build-lambdas.sh            # all functions
#   scripts/build-lambdas.sh api        # only lambda/api
set -euo pipefail
cd "$(dirname "$0")/.."
budget=10000000
fns=("$@")
if [ ${#fns[@]} -eq 0 ]; then
	for d in lambda/*/; do
		[ -f "${d}main.go" ] && fns+=("$(basename "$d")")
	done
fi
for fn in "${fns[@]}"; do
	mkdir -p "bin/$fn"
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build -tags lambda.norpc -trimpath -buildvcs=false -ldflags "-s -w" -o "bin/$fn/bootstrap" "./lambda/$fn"
	size=$(stat -c %s "bin/$fn/bootstrap" 2>/dev/null || stat -f %z "bin/$fn/bootstrap")
	note=""
	[ "$size" -gt "$budget" ] && note="  over the 10 MB budget"
	printf '%-16s %10d bytes  bin/%s/bootstrap%s\n' "$fn" "$size" "$fn" "$note"
done
