#!/usr/bin/env bash
# Times synthesizing the whole app: without bundling (what tests do) and
# with bundling (what cdk synth does: three Go builds for linux/arm64).
# Wall-clock numbers for docs and trends; nothing asserts them.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="$(mktemp -d)/app"
go build -o "$bin" .
for mode in skip-bundling bundling; do
	out="$(mktemp -d)"
	ctx='{}'
	[ "$mode" = skip-bundling ] && ctx='{"aws:cdk:bundling-stacks":[]}'
	start=$(date +%s.%N)
	CDK_OUTDIR="$out" CDK_CONTEXT_JSON="$ctx" "$bin" >/dev/null 2>&1
	end=$(date +%s.%N)
	printf 'synth (%s): %.1f s\n' "$mode" "$(echo "$end - $start" | bc)"
	rm -rf "$out"
done
