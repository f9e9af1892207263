#!/usr/bin/env bash
# Runs every fuzz target of the runtime briefly (FUZZTIME each, default 10s).
# Targets are discovered from the source, so new ones are picked up. New
# failing inputs land in the package's testdata/fuzz/<Target>/: commit them.
#   FUZZTIME=1m scripts/fuzz.sh
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${FUZZTIME:-10s}"
status=0
while IFS= read -r file; do
	pkg="./$(dirname "$file")"
	for target in $(grep -oE '^func (Fuzz[A-Za-z0-9_]+)\(' "$file" | sed -E 's/^func (Fuzz[A-Za-z0-9_]+)\(/\1/'); do
		echo "== $pkg $target ($fuzztime)"
		if ! go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" -parallel "${FUZZPARALLEL:-2}" "$pkg"; then
			status=1
		fi
	done
done < <(grep -rlE '^func Fuzz[A-Za-z0-9_]+\(' --include='*_test.go' --exclude-dir=node_modules --exclude-dir=.git --exclude-dir=cdk.out . 2>/dev/null | sort)
exit "$status"
