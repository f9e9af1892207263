#!/usr/bin/env bash
# Compares the Go CDK app's synth with its JavaScript twin, side by side:
# the same constructs built by aws-cdk-lib in one Node process, with no Go
# and no jsii round trips (scripts/synth-twin/replay.js replays the jsii
# requests of one run of the Go app, recorded with JSII_DEBUG=1). Both
# synthesize every stack with cdk.json's context, bundling skipped, the
# templates validated (as make synth does); the twin's templates are first
# checked to be byte-identical to the Go app's. Then SYNTH_PAIRS pairs
# (default 5) run alternately, Go first then the twin, and the script
# prints each run and the medians: wall time of the process, and CDK's
# phases from performance-counters.json (Load, Construction, Synthesis,
# of which validateTemplates), with Go/JS ratios.
#
# The libraries the twin loads are the tarballs the Go bindings embed
# (aws-cdk-lib, constructs, cdk-nag and their jsii dependencies, from the
# Go module cache at go.mod's versions), unpacked into
# .cache/synth-twin/node_modules: the same library code on both sides.
# Wall-clock numbers for docs; nothing asserts them.
#
# The Go app runs as make synth runs it: its jsii kernel in direct mode
# (internal/synth/jsiienv), with V8's background threads sized to the
# machine (--v8-pool-size=0) and CDK's validation engine started in a
# worker thread while the constructs are built (the validation worker;
# TRIGGERS_JSII_VALIDATION_WORKER=0 turns it off, TRIGGERS_JSII_RELAY=1
# all of direct mode). The twin runs on plain node, as a JavaScript app
# does; SYNTH_TWIN_TUNED=1 runs it with the same flag and worker, to compare
# the rest like for like.
#   SYNTH_PAIRS=7 scripts/synth-twin.sh
#   SYNTH_APP=path/to/built/app scripts/synth-twin.sh   (skips the go build)
set -euo pipefail
cd "$(dirname "$0")/.."
export CDK_DISABLE_VERSION_CHECK=1 CDK_DISABLE_CLI_TELEMETRY=true
pairs="${SYNTH_PAIRS:-5}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mods=.cache/synth-twin/node_modules

# unpack MODULE NPM_NAME: the jsii tarball of Go module MODULE into $mods/NPM_NAME.
unpack() {
	local dir tgz
	dir="$(go list -m -f '{{.Dir}}' "$1")"
	tgz="$(ls "$dir"/jsii/*.tgz)"
	if [ ! -f "$mods/$2/.from" ] || [ "$(cat "$mods/$2/.from")" != "$tgz" ]; then
		rm -rf "${mods:?}/$2"
		mkdir -p "$mods/$2"
		tar xzf "$tgz" -C "$mods/$2" --strip-components=1
		echo "$tgz" >"$mods/$2/.from"
	fi
}
unpack github.com/aws/aws-cdk-go/awscdk/v2 aws-cdk-lib
unpack github.com/aws/constructs-go/constructs/v10 constructs
unpack github.com/cdklabs/cdk-nag-go/cdknag/v2 cdk-nag
unpack github.com/cdklabs/awscdk-asset-awscli-go/awscliv1/v2 @aws-cdk/asset-awscli-v1
unpack github.com/cdklabs/awscdk-asset-node-proxy-agent-go/nodeproxyagentv6/v2 @aws-cdk/asset-node-proxy-agent-v6
unpack github.com/cdklabs/cloud-assembly-schema-go/awscdkcloudassemblyschema/v54 @aws-cdk/cloud-assembly-schema

app="${SYNTH_APP:-$tmp/app}"
[ -n "${SYNTH_APP:-}" ] || go build -o "$app" .
ctx="$(node -e '
	const c = require("./cdk.json").context;
	Object.assign(c, {"@aws-cdk/core.slowSynthThreshold": 0, "aws:cdk:bundling-stacks": []});
	console.log(JSON.stringify(c));')"

# run NAME OUTDIR CMD...: one synth into OUTDIR; prints "NAME wall load construction synthesis validation".
run() {
	local name="$1" out="$2" start end
	shift 2
	rm -rf "$out"
	mkdir -p "$out"
	start=$(date +%s.%N)
	CDK_OUTDIR="$out" CDK_CONTEXT_JSON="$ctx" CDK_PERF_COUNTERS_FILE="$out/performance-counters.json" \
		SYNTH_TWIN_MODULES="$mods" "$@" >"$out.log" 2>&1 || { cat "$out.log"; exit 1; }
	end=$(date +%s.%N)
	node -e '
		const c = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).counters;
		const s = (k) => (c[k] / 1000).toFixed(2);
		console.log([process.argv[2], (+process.argv[3]).toFixed(2), s("phase:Load"), s("phase:Construction"),
			s("phase:Synthesis"), s("validateTemplates")].join(" "));
	' "$out/performance-counters.json" "$name" "$(echo "$end - $start" | bc)"
}

# The recording run, then the twin's templates against it.
JSII_DEBUG=1 run record "$tmp/record" "$app" >/dev/null
run check "$tmp/check" node scripts/synth-twin/replay.js "$tmp/record.log" >/dev/null
for f in "$tmp"/record/*.template.json; do
	cmp -s "$f" "$tmp/check/$(basename "$f")" || { echo "twin template differs: $(basename "$f")"; exit 1; }
done
echo "twin: $(ls "$tmp"/check/*.template.json | wc -l) templates byte-identical to the Go app's"

twin=(node)
if [ "${SYNTH_TWIN_TUNED:-}" = 1 ]; then
	go run ./scripts/synth-twin/validationpreload >"$tmp/validation.js"
	twin=(node --v8-pool-size=0 --require "$tmp/validation.js")
fi
echo "run wall load construction synthesis validateTemplates (s)"
for i in $(seq "$pairs"); do
	run go "$tmp/go" "$app" | tee -a "$tmp/results"
	run js "$tmp/js" "${twin[@]}" scripts/synth-twin/replay.js "$tmp/record.log" | tee -a "$tmp/results"
done
node -e '
	const rows = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map((l) => l.split(" "));
	const med = (side, i) => { const v = rows.filter((r) => r[0] === side).map((r) => +r[i]).sort((a, b) => a - b);
		return v.length % 2 ? v[(v.length - 1) / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2; };
	const names = ["wall", "Load", "Construction", "Synthesis", "validateTemplates"];
	console.log("medians of " + rows.length / 2 + " pairs: measure go js go/js");
	names.forEach((n, k) => { const g = med("go", k + 1), j = med("js", k + 1);
		console.log("  " + n + " " + g.toFixed(2) + " " + j.toFixed(2) + " " + (g / j).toFixed(2)); });
' "$tmp/results"
