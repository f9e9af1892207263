#!/usr/bin/env bash
# Times synthesizing the whole app and prints CDK's own phases (from
# performance-counters.json) beside issue 17's budgets (docs/performance.md):
#
#   app build          go build of the CDK app, as make synth does when a
#                      package it is built from changed
#   skip-bundling      the built app alone, with cdk.json's context and
#                      bundling skipped (what the tests do); phases
#   bundling, fresh    the same with every Lambda function built into an
#                      empty cdk.out
#   bundling, reused   again into the same cdk.out: the bundles are reused
#                      by golambda's source hash
#   make synth (warm)  the user's command, run twice; the second run is
#                      timed (app up to date, bundles reused); phases
#
# The CDK library writes performance-counters.json only for a synth slower
# than @aws-cdk/core.slowSynthThreshold per stack (10 s by default), so
# every run here sets that threshold to 0. Phases: Load (Node loads
# aws-cdk-lib), Construction (the Go code building the constructs, through
# jsii), Synthesis (of which validateTemplates: CDK's template validation).
# Wall-clock numbers for docs and trends; nothing asserts them.
#   SYNTH_RUNS=3 scripts/synth-timing.sh   (runs each app-alone mode 3 times)
set -euo pipefail
cd "$(dirname "$0")/.."
export CDK_DISABLE_VERSION_CHECK=1 CDK_DISABLE_CLI_TELEMETRY=true
runs="${SYNTH_RUNS:-1}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

now() { date +%s.%N; }
secs() { echo "$2 - $1" | bc; }

# phases FILE [budget]: the phases of one synth, in seconds; with a second
# argument, the construction budget beside them (it applies when nothing is
# built: bundling skipped or bundles reused).
phases() {
	node -e '
		const c = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).counters;
		const s = (k) => c[k] === undefined ? "-" : (c[k] / 1000).toFixed(2) + " s";
		const con = c["phase:Construction"] / 1000;
		const budget = process.argv[2] ? " (budget <= 0.6 s: " + (con <= 0.6 ? "met" : "MISSED") + ")" : "";
		console.log("    phases: Load " + s("phase:Load") + ", Construction " + s("phase:Construction") +
			budget + ", Synthesis " + s("phase:Synthesis") + " (validateTemplates " + s("validateTemplates") + ")");
	' "$@"
}

# context EXTRA_JSON: cdk.json's context (as the CDK CLI passes it) plus
# the threshold and EXTRA_JSON.
context() {
	node -e '
		const c = require("./cdk.json").context;
		Object.assign(c, {"@aws-cdk/core.slowSynthThreshold": 0}, JSON.parse(process.argv[1]));
		console.log(JSON.stringify(c));
	' "$1"
}

start=$(now)
go build -o "$tmp/app" .
printf 'app build: %.1f s\n' "$(secs "$start" "$(now)")"

# synth NAME OUTDIR EXTRA_JSON [budget]: runs the built app once and prints
# its time and phases.
synth() {
	local ctx start end
	ctx="$(context "$3")"
	start=$(now)
	CDK_OUTDIR="$2" CDK_CONTEXT_JSON="$ctx" CDK_PERF_COUNTERS_FILE="$2/performance-counters.json" \
		"$tmp/app" >"$tmp/log" 2>&1 || { cat "$tmp/log"; exit 1; }
	end=$(now)
	printf 'synth (%s): %.1f s\n' "$1" "$(secs "$start" "$end")"
	phases "$2/performance-counters.json" ${4:-}
}

for i in $(seq "$runs"); do
	synth skip-bundling "$tmp/skip$i" '{"aws:cdk:bundling-stacks":[]}' budget
done
for i in $(seq "$runs"); do
	synth "bundling, fresh cdk.out" "$tmp/bundle$i" '{}'
	synth "bundling, bundles reused" "$tmp/bundle$i" '{}' budget
done

make -s synth SYNTH_FLAGS="-c @aws-cdk/core.slowSynthThreshold=0" >/dev/null 2>&1
start=$(now)
make -s synth SYNTH_FLAGS="-c @aws-cdk/core.slowSynthThreshold=0" >/dev/null 2>&1
end=$(now)
printf 'make synth (warm): %.1f s (budget <= 8 s: %s)\n' "$(secs "$start" "$end")" \
	"$(if [ "$(echo "$end - $start <= 8" | bc)" = 1 ]; then echo met; else echo MISSED; fi)"
phases cdk.out/performance-counters.json budget
