#!/usr/bin/env bash
# Runs every test (make test), then prints the five slowest packages.
#
# What keeps it short on 2 cores (docs/testing.md, "How long make test
# takes"):
#   - one DynamoDB Local and one moto_server serve every test package
#     (scripts/engines.sh, through TRIGGERS_DYNAMODB_ENDPOINT and
#     TRIGGERS_MOTO_ENDPOINT) instead of one JVM and one Python server per
#     package; every test makes its own tables, queues and buckets, so the
#     packages share nothing else. The JVM runs with the client compiler only
#     (TEST_JAVA_OPTIONS): most of a DynamoDB Local's CPU went into the
#     optimizing compiler, for code that runs seconds.
#   - the slowest packages are named first, so go test starts them first
#     instead of in import-path order (the slowest one used to start last).
#   - TEST_PARALLEL test binaries run at once (go test -p; default 4): the
#     packages wait on the engines, Node and child processes more than they
#     compute.
# TEST_SHARED_ENGINES=0 runs the packages with their own engines, as
# go test does on its own.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
log=$(mktemp)
engines_log=$(mktemp -d)
# shellcheck source=scripts/engines.sh
. scripts/engines.sh
cleanup() {
	stop_dynamodb
	stop_moto
	rm -rf "$log" "$engines_log"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

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

if [ "${TEST_SHARED_ENGINES:-1}" != 0 ]; then
	read -r -a java_options <<<"${TEST_JAVA_OPTIONS:--XX:TieredStopAtLevel=1 -XX:+UseSerialGC}"
	start_dynamodb "$engines_log/dynamodb.log" "${java_options[@]}"
	start_moto "$engines_log/moto.log"
fi

status=0
go test -count=1 -timeout 40m -p "${TEST_PARALLEL:-4}" "${pkgs[@]}" 2>&1 | tee "$log" || status=$?
echo "slowest packages:"
awk '($1 == "ok" || $1 == "FAIL") && $3 ~ /^[0-9.]+s$/ { sub(/s$/, "", $3); printf "%10.1fs  %s\n", $3, $2 }' "$log" |
	sort -rn | head -5
exit "$status"
