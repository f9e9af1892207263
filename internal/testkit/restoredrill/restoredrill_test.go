package restoredrill

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/ddb"
	"github.com/triggers-dev/triggers/internal/ddb/ddbtest"
	"github.com/triggers-dev/triggers/internal/synth/modroot"
	"github.com/triggers-dev/triggers/schema"
)

var db *ddbtest.Local

func TestMain(m *testing.M) { os.Exit(ddbtest.Main(m, &db)) }

// drill runs scripts/restore-drill.sh against DynamoDB Local with dummy
// credentials and no AWS configuration files, and returns its combined
// output and exit code.
func drill(t *testing.T, args ...string) (string, int) {
	t.Helper()
	for _, tool := range []string{"aws", "jq", "shuf"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: the drill needs the AWS CLI, jq and shuf", tool)
		}
	}
	root, err := modroot.FromWorkingDir()
	require.NoError(t, err)
	cmd := exec.Command("bash", append([]string{filepath.Join(root, "scripts", "restore-drill.sh")}, args...)...)
	cmd.Env = awsEnv()
	out, err := cmd.CombinedOutput()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return string(out), code
}

// awsEnv is the environment without the developer's AWS settings, plus
// dummy credentials (DynamoDB Local runs -sharedDb: any key sees the same
// tables), the local region and no configuration files.
func awsEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") {
			env = append(env, kv)
		}
	}
	return append(env,
		"AWS_ACCESS_KEY_ID="+ddb.LocalAccessKeyID, "AWS_SECRET_ACCESS_KEY="+ddb.LocalSecretAccessKey,
		"AWS_DEFAULT_REGION="+ddb.LocalRegion, "AWS_REGION="+ddb.LocalRegion,
		"AWS_CONFIG_FILE=/nonexistent", "AWS_SHARED_CREDENTIALS_FILE=/nonexistent", "AWS_PAGER=",
	)
}

// items of the source table: events with every attribute type the API
// writes plus sets (whose members DynamoDB returns in any order), numbers
// of 38 digits, and an idempotency record.
var items = []string{
	`{"user_id":{"S":"acme"},"timestamp#event_id":{"S":"2026-11-01T00:00:00.000001Z#e1"},"event_id":{"S":"e1"},"payload":{"M":{"n":{"N":"12345678901234567890123456789012345678"},"tiny":{"N":"1E-130"},"l":{"L":[{"BOOL":true},{"NULL":true},{"S":"héllo 𝄞"}]},"empty":{"M":{}}}},"ttl":{"N":"1795000000"}}`,
	`{"user_id":{"S":"acme"},"timestamp#event_id":{"S":"2026-11-01T00:00:00.000002Z#e2"},"event_id":{"S":"e2"},"payload":{"M":{"ss":{"SS":["b","a","c"]},"ns":{"NS":["1","2.5","-3"]},"B":{"M":{"B":{"S":"a map named B is not binary"}}}}}}`,
	`{"user_id":{"S":"globex"},"timestamp#event_id":{"S":"2026-11-02T00:00:00.000003Z#e3"},"event_id":{"S":"e3"},"payload":{"M":{}},"status":{"S":"received"},"status#timestamp":{"S":"received#2026-11-02T00:00:00.000003Z"}}`,
	`{"user_id":{"S":"globex"},"timestamp#event_id":{"S":"2026-11-02T00:00:00.000004Z#e4"},"event_id":{"S":"e4"},"payload":{"M":{"k":{"S":"v"}}},"event_type":{"S":"a.b"},"event_type#timestamp":{"S":"a.b#2026-11-02T00:00:00.000004Z"}}`,
	`{"user_id":{"S":"idempotency#acme#h"},"timestamp#event_id":{"S":"idempotency"},"event_key":{"S":"2026-11-01T00:00:00.000001Z#e1"}}`,
}

// put writes items into table with one batch-write-item of the AWS CLI,
// so they go through the same JSON the drill reads.
func put(t *testing.T, table string) {
	t.Helper()
	var reqs []string
	for _, it := range items {
		reqs = append(reqs, `{"PutRequest":{"Item":`+it+`}}`)
	}
	out, code := drillFree(t, "batch-write-item", "--request-items", `{"`+table+`":[`+strings.Join(reqs, ",")+`]}`)
	require.Equal(t, 0, code, "batch-write-item: %s", out)
	require.Contains(t, out, `"UnprocessedItems": {}`)
}

// drillFree runs one plain AWS CLI DynamoDB command against DynamoDB Local
// with the drill's environment.
func drillFree(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command("aws", append(append([]string{"dynamodb"}, args...), "--endpoint-url", db.Endpoint)...)
	cmd.Env = awsEnv()
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return string(out), exit.ExitCode()
	}
	require.NoError(t, err)
	return string(out), 0
}

// The drill restores the events table to a new table on DynamoDB Local
// (copy mode: no PITR or backups there), finds it equal, and prints the
// context that swaps it in; after the restored table is changed, the
// comparison fails and names what differs.
func TestRestoreDrill(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the AWS CLI a few dozen times")
	}
	ctx := context.Background()
	source := db.CreateTable(t, schema.Events())
	put(t, source)
	target := source + "-restored"

	out, code := drill(t, "--source-table", source, "--target-table", target, "--endpoint-url", db.Endpoint, "--env", "prod")
	require.Equal(t, 0, code, "drill output:\n%s", out)
	for _, want := range []string{
		"mode copy: the endpoint supports neither PITR nor backups; copying " + source + " -> " + target,
		"count source=5 restored=5 OK",
		"sample 5/5 items equal OK",
		"npx cdk deploy triggers-prod-api -c triggers:env=prod",
		"-c triggers:events-table-name=" + target + " ",
		"-c triggers:events-table-stream-arn=arn:aws:dynamodb:",
		"RESULT: PASS",
	} {
		assert.Contains(t, out, want)
	}
	assert.True(t, strings.HasSuffix(out, "RESULT: PASS\n"), "the verdict is the last line:\n%s", out)

	// The restored table has the source's keys, indexes, stream and TTL.
	desc, err := db.Client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(target)})
	require.NoError(t, err)
	assert.Len(t, desc.Table.GlobalSecondaryIndexes, 2)
	assert.Equal(t, types.StreamViewTypeNewAndOldImages, desc.Table.StreamSpecification.StreamViewType)
	assert.Contains(t, out, aws.ToString(desc.Table.LatestStreamArn), "the printed stream ARN is the restored table's")
	ttl, err := db.Client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(target)})
	require.NoError(t, err)
	assert.Equal(t, schema.AttrTTL, aws.ToString(ttl.TimeToLiveDescription.AttributeName))

	// Break the restored table: one item changed, one lost.
	_, err = db.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(target),
		Key: map[string]types.AttributeValue{
			schema.AttrUserID:           &types.AttributeValueMemberS{Value: "acme"},
			schema.AttrTimestampEventID: &types.AttributeValueMemberS{Value: "2026-11-01T00:00:00.000001Z#e1"},
		},
		UpdateExpression:          aws.String("SET payload.n = :n"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":n": &types.AttributeValueMemberN{Value: "12345678901234567890123456789012345679"}},
	})
	require.NoError(t, err)
	_, err = db.Client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(target),
		Key: map[string]types.AttributeValue{
			schema.AttrUserID:           &types.AttributeValueMemberS{Value: "globex"},
			schema.AttrTimestampEventID: &types.AttributeValueMemberS{Value: "2026-11-02T00:00:00.000003Z#e3"},
		},
	})
	require.NoError(t, err)

	out, code = drill(t, "--source-table", source, "--target-table", target, "--compare-only", "--endpoint-url", db.Endpoint, "--tolerance", "1")
	assert.Equal(t, 1, code, "a failing comparison exits 1:\n%s", out)
	for _, want := range []string{
		"mode compare-only: " + source + " vs " + target,
		"count source=5 restored=4 OK", // within --tolerance 1
		`sample item [{"S":"globex"},{"S":"2026-11-02T00:00:00.000003Z#e3"}] MISSING from the restored table`,
		`sample item [{"S":"acme"},{"S":"2026-11-01T00:00:00.000001Z#e1"}] DIFFERS in ["payload"]`,
		"sample 3/5 items equal MISMATCH",
		"RESULT: FAIL",
	} {
		assert.Contains(t, out, want)
	}

	// An AWS error (no such target) is exit 2, not the CLI's own 254/255.
	out, code = drill(t, "--source-table", source, "--target-table", target+"-none", "--compare-only", "--endpoint-url", db.Endpoint)
	assert.Equal(t, 2, code, "%s", out)
	assert.Contains(t, out, "restore-drill: aws dynamodb scan failed")

	out, code = drill(t, "--source-table", source, "--target-table", target, "--compare-only", "--endpoint-url", db.Endpoint, "--sample", "0")
	assert.Equal(t, 1, code, "%s", out)
	assert.Contains(t, out, "count source=5 restored=4 MISMATCH (tolerance 0)")

	// AWS CLI v1 cannot copy binary values faithfully: the copy refuses.
	if v, _ := exec.Command("aws", "--version").CombinedOutput(); strings.HasPrefix(string(v), "aws-cli/1.") {
		bin := db.CreateTable(t, schema.Events())
		out, code := drillFree(t, "put-item", "--table-name", bin, "--item", `{"user_id":{"S":"a"},"timestamp#event_id":{"S":"x"},"b":{"B":"AAEC"}}`)
		require.Equal(t, 0, code, "%s", out)
		out, code = drill(t, "--source-table", bin, "--target-table", bin+"-copy", "--endpoint-url", db.Endpoint)
		assert.Equal(t, 2, code, "%s", out)
		assert.Contains(t, out, "holds binary attributes, which AWS CLI v1 cannot copy faithfully")
		// Refused before the copy is made: no table left behind.
		_, err := db.Client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(bin + "-copy")})
		var nf *types.ResourceNotFoundException
		assert.ErrorAs(t, err, &nf, "the refused copy left its table")
	}
}

// Bad arguments exit 2 with a message before any AWS call.
func TestRestoreDrillUsage(t *testing.T) {
	for args, want := range map[string]string{
		"":                                         "--source-table is required",
		"--source-table t --mode fast":             "--mode fast: use pitr, copy or auto",
		"--source-table t --compare-only":          "--compare-only needs --target-table",
		"--source-table t --sample x":              "--sample x is not a number",
		"--source-table t --bogus":                 "unknown argument --bogus",
		"--source-table t --tolerance -1":          "--tolerance -1 is not a number",
		"--source-table t --target-table u --help": "Restore drill for a DynamoDB table",
		"--source-table":                           "--source-table needs a value",
		"--source-table t --sample":                "--sample needs a value",
	} {
		out, code := drill(t, strings.Fields(args)...)
		assert.Equal(t, 2, code, "%q: %s", args, out)
		assert.Contains(t, out, want, args)
	}
}

// Events of realistic size (payloads of tens of kilobytes; the API takes
// up to 256 KiB) are copied and compared like small ones: neither a
// batch of them nor the sampled items go on a command line, whose single
// argument Linux bounds at 128 KiB (MAX_ARG_STRLEN).
func TestRestoreDrillLargeItems(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the AWS CLI a few dozen times")
	}
	ctx := context.Background()
	source := db.CreateTable(t, schema.Events())
	const n = 12
	big := strings.Repeat("x", 40<<10)
	for i := range n {
		ts := fmt.Sprintf("2026-11-01T00:00:00.%06dZ", i)
		_, err := db.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(source), Item: map[string]types.AttributeValue{
			schema.AttrUserID:           &types.AttributeValueMemberS{Value: "acme"},
			schema.AttrTimestampEventID: &types.AttributeValueMemberS{Value: fmt.Sprintf("%s#e%d", ts, i)},
			schema.AttrEventID:          &types.AttributeValueMemberS{Value: fmt.Sprintf("e%d", i)},
			schema.AttrPayload:          &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"blob": &types.AttributeValueMemberS{Value: big}}},
		}})
		require.NoError(t, err)
	}
	target := source + "-restored"
	out, code := drill(t, "--source-table", source, "--target-table", target, "--endpoint-url", db.Endpoint)
	require.Equal(t, 0, code, "drill output:\n%s", out)
	assert.Contains(t, out, fmt.Sprintf("count source=%d restored=%d OK", n, n))
	assert.Contains(t, out, fmt.Sprintf("sample %d/%d items equal OK", n, n))
	assert.True(t, strings.HasSuffix(out, "RESULT: PASS\n"), "the verdict is the last line:\n%s", out)
}

// The target must be another table than the source: compared with itself
// the drill passed whatever the data, and with --delete-target it
// deleted the source (the events table, where deletion protection is
// off). Refused before any AWS call, the source untouched.
func TestRestoreDrillTargetIsNotTheSource(t *testing.T) {
	ctx := context.Background()
	source := db.CreateTable(t, schema.Events())
	out, code := drill(t, "--source-table", source, "--target-table", source, "--compare-only", "--delete-target", "--endpoint-url", db.Endpoint)
	assert.Equal(t, 2, code, "%s", out)
	assert.Contains(t, out, "--target-table must name another table than --source-table")
	_, err := db.Client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(source)})
	assert.NoError(t, err, "the source is still there")
}
