#!/usr/bin/env bash
# Runs every test (make test), then prints the run's wall and CPU time and
# the five slowest packages.
#
# What keeps it shorter on 2 cores (docs/testing.md, "How long make test
# takes"):
#   - the slowest packages are named first, so go test starts them first
#     instead of in import-path order (internal/webhook/dispatch, the
#     slowest, used to start last and run alone for its last two minutes);
#   - every DynamoDB Local a test starts, its own (ddbtest) or a dev
#     server's (cmd/triggers-dev, triggers-load), runs with the client
#     compiler only (internal/ddb/ddblocal.QuickStartJavaOptions, through
#     TRIGGERS_DYNAMODB_JAVA_OPTIONS), a fifth less CPU; except
#     internal/webhook/dispatch's (ddbtest.Options.Busy: its crash-point
#     harness keeps the engine busy for minutes, which repays the
#     optimizing compiler).
# TEST_PARALLEL sets go test -p (default: the number of cores). More than
# the cores was slower here: the run is CPU-bound.
set -euo pipefail
cd "$(dirname "$0")/.."
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# The slowest packages, slowest first (from the lists the end of a run
# prints; a package missing here only starts later, one that no longer
# exists is left out).
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
all=$(go list ./...)
first=()
for s in "${slow[@]}"; do
	! grep -qxF "$mod/${s#./}" <<<"$all" || first+=("$mod/${s#./}")
done
rest=$(grep -vxF -f <(printf '%s\n' "${first[@]}") <<<"$all" || true)
mapfile -t pkgs < <(printf '%s\n' "${first[@]}" $rest)

# ddblocal.QuickStartJavaOptions, spelled out (ddblocal's
# TestTestScriptUsesQuickStartOptions keeps the two the same).
export TRIGGERS_DYNAMODB_JAVA_OPTIONS="${TRIGGERS_DYNAMODB_JAVA_OPTIONS--XX:TieredStopAtLevel=1 -XX:+UseSerialGC}"

status=0
parallel=()
[ -z "${TEST_PARALLEL:-}" ] || parallel=(-p "$TEST_PARALLEL")
t0=$SECONDS
go test -count=1 -timeout 40m "${parallel[@]}" "${pkgs[@]}" 2>&1 | tee "$log" || status=$?
# The CPU time of every process the run started and waited for (go, the
# test binaries and the engines they start), from bash's times: the
# figure docs/testing.md compares runs by, steadier than the wall time on
# a shared machine.
times >"$log.times"
cpu=$(awk 'NR == 2 { for (i = 1; i <= 2; i++) { split($i, t, /[ms]/); s += t[1] * 60 + t[2] } printf "%.0f", s }' "$log.times")
rm -f "$log.times"
echo "go test: $((SECONDS - t0)) s, $cpu CPU-seconds (user + system, with the processes it started)"
echo "slowest packages:"
# The last stage reads all its input: with head -5, which exits after five
# lines, sort died of SIGPIPE (141, failing the script under pipefail) once
# its output passed its 4 KB buffer (CI at 04b151e: 4,414 bytes).
awk '($1 == "ok" || $1 == "FAIL") && $3 ~ /^[0-9.]+s$/ { sub(/s$/, "", $3); printf "%10.1fs  %s\n", $3, $2 }' "$log" |
	sort -rn | awk 'NR <= 5'
exit "$status"
