#!/usr/bin/env bash
# Runs the runtime's benchmarks with allocation counts.
#   BENCHTIME=2s scripts/bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."
exec go test -run '^$' -bench . -benchmem -benchtime "${BENCHTIME:-1s}" ./internal/...
