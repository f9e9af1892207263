#!/usr/bin/env bash
# make bench, part 1: the runtime's benchmarks with allocation counts, the
# hot path's figures beside their budgets (docs/performance.md), the
# DynamoDB write units of an event's ingest + ack in both table profiles
# (measured on DynamoDB Local, docs/capacity.md), then each Lambda
# function's cold start against a hello-world floor.
#   BENCHTIME=2s COLDSTART_ROUNDS=40 scripts/bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp)
trap 'rm -f "$out"' EXIT
go test -run '^$' -bench . -benchmem -benchtime "${BENCHTIME:-1s}" ./internal/... | tee "$out"

# Budgets of issue 17: name, ns/op budget, allocs/op budget.
echo
echo "hot path against its budgets (! marks a miss):"
awk '
BEGIN {
	budget["BenchmarkIngest/1KB"] = "15000 50"
	budget["BenchmarkIngest/64KB"] = "1000000 -"
	budget["BenchmarkInboxPage"] = "300000 1500"
}
$1 ~ /^Benchmark/ {
	name = $1; sub(/-[0-9]+$/, "", name)
	if (!(name in budget)) next
	split(budget[name], b, " ")
	ns = ""; allocs = ""
	for (i = 2; i < NF; i++) {
		if ($(i+1) == "ns/op") ns = $i
		if ($(i+1) == "allocs/op") allocs = $i
	}
	mark_t = (ns + 0 <= b[1] + 0) ? " " : "!"
	mark_a = (b[2] == "-" || allocs + 0 <= b[2] + 0) ? " " : "!"
	printf "  %-22s %12.1f us%s (budget %g us)   %8d allocs%s (budget %s)\n", name, ns / 1000, mark_t, b[1] / 1000, allocs, mark_a, b[2]
}' "$out"

echo
echo "DynamoDB write units per event against the budget (! marks a miss; docs/capacity.md):"
go test -count=1 -v -run '^TestWriteBudget$' ./internal/testkit/capacity | sed -n 's/^ *capacity_test.go:[0-9]*: /  /p'

echo
go run ./cmd/triggers-coldstart -n "${COLDSTART_ROUNDS:-40}"
