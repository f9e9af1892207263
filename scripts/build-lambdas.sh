#!/usr/bin/env bash
# Builds every Lambda function (lambda/<fn>/main.go) for provided.al2023 on
# arm64 into bin/<fn>/bootstrap and prints the sizes.
#   scripts/build-lambdas.sh            # all functions
#   scripts/build-lambdas.sh api        # only lambda/api
set -euo pipefail
cd "$(dirname "$0")/.."
fns=("$@")
if [ ${#fns[@]} -eq 0 ]; then
	for d in lambda/*/; do
		[ -f "${d}main.go" ] && fns+=("$(basename "$d")")
	done
fi
for fn in "${fns[@]}"; do
	mkdir -p "bin/$fn"
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build -tags lambda.norpc -trimpath -ldflags "-s -w" -o "bin/$fn/bootstrap" "./lambda/$fn"
	printf '%-16s %10d bytes  bin/%s/bootstrap\n' "$fn" "$(stat -c %s "bin/$fn/bootstrap" 2>/dev/null || stat -f %z "bin/$fn/bootstrap")" "$fn"
done
