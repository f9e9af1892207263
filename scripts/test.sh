#!/usr/bin/env bash
# Runs every test (make test), then prints the five slowest packages.
#
# What keeps it short on 2 cores (docs/testing.md, "How long make test
# takes"):
#   - the slowest packages are named first, so go test starts them first
#     instead of in import-path order (internal/webhook/dispatch, the
#     slowest, used to start last and run alone for its last minute);
#   - TEST_PARALLEL test binaries run at once (go test -p; default 3, one
#     more than the cores): the packages wait on DynamoDB Local, Node and
#     child processes part of the time;
#   - each package's DynamoDB Local runs with the client compiler only
#     (internal/ddb/ddblocal.QuickStartJavaOptions), which halves its CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# The slowest packages, slowest first (the list the end of a run prints;
# a package missing here only starts later).
slow=(
	./internal/webhook/dispatch
	./cmd/triggers-dev
	./assertions
	./internal/testkit/restoredrill
	./internal/testkit/consumertest
	./internal/dev/noisyneighbour
	./internal/httpapi
	./internal/store
	./constructs/monitoring
	./internal/dev/sqsesm
	./constructs/triggersapi
	./internal/dev/localapi
	./constructs/golambda
	./cmd/triggers-replay
	./constructs/dynamotable
	./internal/archive
)
mod=$(go list -m)
pkgs=("${slow[@]}")
while read -r p; do
	skip=
	for s in "${slow[@]}"; do [ "$mod/${s#./}" != "$p" ] || skip=1; done
	[ -n "$skip" ] || pkgs+=("$p")
done < <(go list ./...)

status=0
go test -count=1 -timeout 40m -p "${TEST_PARALLEL:-3}" "${pkgs[@]}" 2>&1 | tee "$log" || status=$?
echo "slowest packages:"
awk '($1 == "ok" || $1 == "FAIL") && $3 ~ /^[0-9.]+s$/ { sub(/s$/, "", $3); printf "%10.1fs  %s\n", $3, $2 }' "$log" |
	sort -rn | head -5
exit "$status"
