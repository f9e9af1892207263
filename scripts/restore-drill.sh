#!/usr/bin/env bash
# Restore drill for a DynamoDB table (docs/runbook.md, "PITR restore"):
# restores SOURCE to a new table, compares item counts and a random sample
# of items, and prints the context that points the Triggers API stack at
# the restored table.
#
#   scripts/restore-drill.sh --source-table NAME [options]
#
# Options:
#   --target-table NAME      restored table (default: SOURCE-restored-<UTC yyyymmddHHMM>)
#   --restore-date-time T    restore to T (ISO 8601, UTC); default: the latest restorable time
#   --mode pitr|copy|auto    pitr: restore-table-to-point-in-time (AWS);
#                            copy: create the table from describe-table, then scan + batch-write-item
#                            (DynamoDB Local, which has neither PITR nor backups);
#                            auto (default): pitr unless the endpoint answers UnknownOperationException
#   --compare-only           restore nothing: compare SOURCE with an existing --target-table
#   --sample N               items compared attribute by attribute (default 20; all when N >= count)
#   --tolerance N            item count difference accepted (default 0; writes after the restore
#                            time make a live table differ)
#   --env ENV                environment named in the printed cdk command (default dev)
#   --endpoint-url URL       passed to every aws call (DynamoDB Local: http://127.0.0.1:8000)
#   --region REGION          passed to every aws call
#   --delete-target          delete the restored table at the end (a pure drill)
#
# Output: one line per check ("count ...", "sample ...") and a last line
# "RESULT: PASS" (exit 0) or "RESULT: FAIL" (exit 1). Exit 2: usage or AWS error.
# Needs the AWS CLI (v1 or v2), jq and shuf.
set -euo pipefail

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
die() { echo "restore-drill: $*" >&2; exit 2; }
# need FLAG VALUE...: FLAG must have a value.
need() { [ $# -ge 2 ] || die "$1 needs a value (see --help)"; }

# Every temporary file lives in one folder, removed however the script
# ends (the copy's items held the source table's data).
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

SOURCE="" TARGET="" WHEN="" MODE=auto COMPARE_ONLY=0 SAMPLE=20 TOLERANCE=0 ENV_NAME=dev DELETE=0
AWS_ARGS=()
while [ $# -gt 0 ]; do
	case "$1" in
	--source-table) need "$@"; SOURCE=$2; shift 2 ;;
	--target-table) need "$@"; TARGET=$2; shift 2 ;;
	--restore-date-time) need "$@"; WHEN=$2; shift 2 ;;
	--mode) need "$@"; MODE=$2; shift 2 ;;
	--compare-only) COMPARE_ONLY=1; shift ;;
	--sample) need "$@"; SAMPLE=$2; shift 2 ;;
	--tolerance) need "$@"; TOLERANCE=$2; shift 2 ;;
	--env) need "$@"; ENV_NAME=$2; shift 2 ;;
	--endpoint-url) need "$@"; AWS_ARGS+=(--endpoint-url "$2"); shift 2 ;;
	--region) need "$@"; AWS_ARGS+=(--region "$2"); shift 2 ;;
	--delete-target) DELETE=1; shift ;;
	-h | --help) usage ;;
	*) die "unknown argument $1 (see --help)" ;;
	esac
done
[ -n "$SOURCE" ] || die "--source-table is required (see --help)"
case "$MODE" in pitr | copy | auto) ;; *) die "--mode $MODE: use pitr, copy or auto" ;; esac
[[ "$SAMPLE" =~ ^[0-9]+$ ]] || die "--sample $SAMPLE is not a number"
[[ "$TOLERANCE" =~ ^[0-9]+$ ]] || die "--tolerance $TOLERANCE is not a number"
if [ -z "$TARGET" ]; then
	[ "$COMPARE_ONLY" = 0 ] || die "--compare-only needs --target-table"
	TARGET="$SOURCE-restored-$(date -u +%Y%m%d%H%M)"
fi
# Compared with itself the drill would pass whatever the data, and
# --delete-target would delete the source.
[ "$TARGET" != "$SOURCE" ] || die "--target-table must name another table than --source-table ($SOURCE)"
for tool in aws jq shuf; do command -v "$tool" >/dev/null || die "$tool is not installed"; done

# An AWS CLI installed through pyenv runs behind a shim that resolves the
# Python version again on every call (about 0.4 s of CPU each, a third of
# a call): the drill resolves it once.
AWS_BIN=$(command -v aws)
case "$AWS_BIN" in
*/shims/aws) AWS_BIN=$(pyenv which aws 2>/dev/null) || AWS_BIN=$(command -v aws) ;;
esac
aws() { "$AWS_BIN" "$@"; }

# source_description prints describe-table of the source, read once.
source_description() {
	[ -s "$tmp/source-description" ] || ddb describe-table --table-name "$SOURCE" >"$tmp/source-description"
	cat "$tmp/source-description"
}

# wait_active ANSWER waits for TARGET to be active, unless ANSWER (of the
# create-table or update-table that changed it) says it is already
# (DynamoDB Local's does; DynamoDB's says CREATING or UPDATING).
wait_active() {
	jq -e '.TableDescription.TableStatus == "ACTIVE"' <<<"$1" >/dev/null 2>&1 ||
		aws dynamodb wait table-exists --table-name "$TARGET" "${AWS_ARGS[@]}"
}

# ddb runs one aws dynamodb command; its failure ends the drill with exit 2
# (an AWS error), after the CLI's own message.
ddb() { aws dynamodb "$@" "${AWS_ARGS[@]}" --output json || die "aws dynamodb $1 failed (the AWS CLI's message is above)"; }

# restore_pitr: restore-table-to-point-in-time, then the settings a
# restore does not carry over (TTL, PITR, stream).
restore_pitr() {
	echo "mode pitr: restore-table-to-point-in-time $SOURCE -> $TARGET${WHEN:+ at $WHEN}"
	local when=(--use-latest-restorable-time)
	[ -z "$WHEN" ] || when=(--restore-date-time "$WHEN")
	ddb restore-table-to-point-in-time --source-table-name "$SOURCE" --target-table-name "$TARGET" "${when[@]}" >/dev/null
	aws dynamodb wait table-exists --table-name "$TARGET" "${AWS_ARGS[@]}"
	local ttl
	ttl=$(ddb describe-time-to-live --table-name "$SOURCE" | jq -r 'select(.TimeToLiveDescription.TimeToLiveStatus == "ENABLED") | .TimeToLiveDescription.AttributeName')
	if [ -n "$ttl" ]; then
		ddb update-time-to-live --table-name "$TARGET" --time-to-live-specification "AttributeName=$ttl,Enabled=true" >/dev/null
	fi
	ddb update-continuous-backups --table-name "$TARGET" \
		--point-in-time-recovery-specification PointInTimeRecoveryEnabled=true >/dev/null
	enable_stream
}

# enable_stream: the restored table gets the source's stream view (the API
# stack's consumers read it).
enable_stream() {
	local view answer
	view=$(source_description | jq -r '.Table.StreamSpecification.StreamViewType // empty')
	[ -n "$view" ] || return 0
	if [ -z "$(ddb describe-table --table-name "$TARGET" | jq -r '.Table.LatestStreamArn // empty')" ]; then
		answer=$(ddb update-table --table-name "$TARGET" --stream-specification "StreamEnabled=true,StreamViewType=$view")
		wait_active "$answer"
	fi
}

# restore_copy: DynamoDB Local has no PITR and no backups; create the
# table from the source's description and copy every item.
restore_copy() {
	echo "mode copy: the endpoint supports neither PITR nor backups; copying $SOURCE -> $TARGET with scan + batch-write-item (the drill's local stand-in for a restore: no point in time)"
	local spec answer items="$tmp/items" n=0
	ddb scan --table-name "$SOURCE" --consistent-read | jq -c '.Items[]' >"$items"
	# AWS CLI v1 prints binary values base64-encoded but reads them back as
	# raw text: a copy would double-encode them. (The events table holds
	# none: payloads are JSON. CLI v2 reads base64.) Checked before the
	# target table is made, so a refusal leaves nothing behind.
	if jq -e -s 'any(.[] | .. | objects;
		length == 1 and ((has("B") and (.B | type) == "string") or (has("BS") and (.BS | type) == "array")))' "$items" >/dev/null &&
		aws --version 2>&1 | grep -q '^aws-cli/1\.'; then
		die "$SOURCE holds binary attributes, which AWS CLI v1 cannot copy faithfully: run the drill with AWS CLI v2"
	fi
	spec=$(source_description | jq --arg t "$TARGET" '.Table | {
		TableName: $t, KeySchema, AttributeDefinitions, BillingMode: "PAY_PER_REQUEST"}
		+ (if .GlobalSecondaryIndexes then {GlobalSecondaryIndexes: [.GlobalSecondaryIndexes[] | {IndexName, KeySchema, Projection}]} else {} end)
		+ (if .StreamSpecification then {StreamSpecification} else {} end)')
	answer=$(ddb create-table --cli-input-json "$spec")
	wait_active "$answer"
	local ttl
	ttl=$(ddb describe-time-to-live --table-name "$SOURCE" | jq -r 'select(.TimeToLiveDescription.TimeToLiveStatus == "ENABLED") | .TimeToLiveDescription.AttributeName')
	if [ -n "$ttl" ]; then
		ddb update-time-to-live --table-name "$TARGET" --time-to-live-specification "AttributeName=$ttl,Enabled=true" >/dev/null
	fi
	# batch-write-item takes 25 items; unprocessed items are written again.
	# The request goes in a file (file://): 25 items of events with large
	# payloads exceed what Linux allows one command-line argument (128 KiB).
	local req="$tmp/write-request"
	while true; do
		local chunk
		chunk=$(sed -n "$((n + 1)),$((n + 25))p" "$items")
		[ -n "$chunk" ] || break
		jq -sc --arg t "$TARGET" '{($t): [.[] | {PutRequest: {Item: .}}]}' <<<"$chunk" >"$req"
		for _ in 1 2 3 4 5; do
			ddb batch-write-item --request-items "file://$req" | jq -c '.UnprocessedItems' >"$req.next"
			mv "$req.next" "$req"
			[ "$(cat "$req")" != "{}" ] || break
			sleep 1
		done
		[ "$(cat "$req")" = "{}" ] || die "batch-write-item left items unprocessed after 5 attempts"
		n=$((n + 25))
	done
}

count() { ddb scan --table-name "$1" --select COUNT --consistent-read | jq -r '.Count'; }

fail=0
if [ "$COMPARE_ONLY" = 0 ]; then
	if [ "$MODE" = auto ]; then
		err=$(ddb describe-continuous-backups --table-name "$SOURCE" 2>&1 >/dev/null) && MODE=pitr || {
			case "$err" in
			*UnknownOperationException*) MODE=copy ;;
			*) die "describe-continuous-backups $SOURCE: $err" ;;
			esac
		}
	fi
	if [ "$MODE" = pitr ]; then restore_pitr; else restore_copy; fi
else
	echo "mode compare-only: $SOURCE vs $TARGET"
fi

# 1. Item counts.
src_count=$(count "$SOURCE")
dst_count=$(count "$TARGET")
diff=$((src_count > dst_count ? src_count - dst_count : dst_count - src_count))
if [ "$diff" -le "$TOLERANCE" ]; then
	echo "count source=$src_count restored=$dst_count OK"
else
	echo "count source=$src_count restored=$dst_count MISMATCH (tolerance $TOLERANCE)"
	fail=1
fi

# 2. A random sample of the source's keys; the items are read from both
# tables with batch-get-item (100 keys a call, consistent) and compared
# attribute by attribute.
keys_json=$(source_description | jq -c '[.Table.KeySchema[].AttributeName]')
proj=$(jq -r 'to_entries | map("#k\(.key)") | join(",")' <<<"$keys_json")
names=$(jq -c 'to_entries | map({("#k\(.key)"): .value}) | add' <<<"$keys_json")
sample_file="$tmp/sample"
: >"$sample_file"
if [ "$SAMPLE" -gt 0 ]; then
	ddb scan --table-name "$SOURCE" --projection-expression "$proj" --expression-attribute-names "$names" |
		jq -c '.Items[]' | shuf -n "$SAMPLE" >"$sample_file"
fi

# norm sorts the members of string, number and binary sets: DynamoDB
# returns a set's members in no particular order.
NORM='def norm: walk(if type == "object" then with_entries(if (.key == "SS" or .key == "NS" or .key == "BS") and (.value | type) == "array" then .value |= sort else . end) else . end);'

# items TABLE FILE: writes the sampled items of TABLE (sets normalized)
# to FILE, as {"<key json>": item}. Requests and items stay in files,
# never on a command line: Linux bounds one argument at 128 KiB, which a
# sample of events with large payloads exceeds.
items() {
	local n=0 chunk req="$tmp/get-request" parts="$2.parts"
	: >"$parts"
	while true; do
		chunk=$(sed -n "$((n + 1)),$((n + 100))p" "$sample_file")
		[ -n "$chunk" ] || break
		jq -sc --arg t "$1" '{($t): {Keys: ., ConsistentRead: true}}' <<<"$chunk" >"$req"
		for _ in 1 2 3 4 5; do
			ddb batch-get-item --request-items "file://$req" >"$tmp/get-response"
			jq -c --arg t "$1" --argjson keys "$keys_json" \
				"$NORM"' [.Responses[$t][] | {key: ([$keys[] as $k | .[$k]] | tojson), value: norm}] | from_entries' "$tmp/get-response" >>"$parts"
			jq -c '.UnprocessedKeys' "$tmp/get-response" >"$req"
			[ "$(cat "$req")" != "{}" ] || break
			sleep 1
		done
		[ "$(cat "$req")" = "{}" ] || die "batch-get-item left keys unprocessed after 5 attempts"
		n=$((n + 100))
	done
	jq -cs 'add // {}' "$parts" >"$2"
}
items "$SOURCE" "$tmp/source-items"
items "$TARGET" "$tmp/target-items"
report=$(jq -nr --argjson keys "$keys_json" --slurpfile a "$tmp/source-items" --slurpfile b "$tmp/target-items" '
	$a[0] as $a | $b[0] as $b |
	[inputs | [$keys[] as $k | .[$k]] | tojson] as $ks | $ks | map(. as $key | $a[$key] as $x | $b[$key] as $y |
		if $x == null then empty # deleted from the source since the key scan
		elif $y == null then "sample item \($key) MISSING from the restored table"
		elif $x != $y then "sample item \($key) DIFFERS in \([($x | keys[]), ($y | keys[])] | unique | map(select($x[.] != $y[.])))"
		else "ok" end) as $r
	| ($r[] | select(. != "ok")),
	  if ($r | length) == 0 and ($ks | length) > 0 then
		# Not one sampled key read back from the source (AWS CLI v1 and a
		# binary key, say): nothing was compared, which is no pass.
		"sample 0/\($ks | length) keys read back from the source: nothing compared MISMATCH"
	  else
		"sample \($r | map(select(. == "ok")) | length)/\($r | length) items equal \(if ($r | all(. == "ok")) then "OK" else "MISMATCH" end)"
	  end
' "$sample_file")
echo "$report"
case "$report" in *MISMATCH) fail=1 ;; esac

# 3. How to swap the table in (the API stack imports it by name).
stream=$(ddb describe-table --table-name "$TARGET" | jq -r '.Table.LatestStreamArn // empty')
echo
echo "To point the API stack at $TARGET (TriggersApiStackProps.EventsTable, docs/runbook.md \"PITR restore\"):"
echo "  npx cdk deploy triggers-$ENV_NAME-api -c triggers:env=$ENV_NAME \\"
echo "    -c triggers:events-table-name=$TARGET \\"
echo "    -c triggers:events-table-stream-arn=${stream:-<enable the stream first: aws dynamodb update-table --table-name $TARGET --stream-specification StreamEnabled=true,StreamViewType=NEW_AND_OLD_IMAGES>}"
echo "  (the data stack keeps its own table, its backups and the archive of expired events; bring $TARGET under it with cdk import to make the swap permanent)"

if [ "$DELETE" = 1 ]; then
	ddb delete-table --table-name "$TARGET" >/dev/null
	echo "deleted $TARGET"
fi
echo
if [ "$fail" = 0 ]; then
	echo "RESULT: PASS"
else
	echo "RESULT: FAIL"
	exit 1
fi
