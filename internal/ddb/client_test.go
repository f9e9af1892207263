package ddb_test

import (
	"context"
	"errors"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/ddb"
	"github.com/triggers-dev/triggers/internal/ddb/ddbtest"
	"github.com/triggers-dev/triggers/schema"
)

// db is DynamoDB Local, for CreateTable.
var db *ddbtest.Local

func TestMain(m *testing.M) { os.Exit(ddbtest.Main(m, &db)) }

// Every client of the module: 4 attempts unless told, each bounded by the
// timeout the caller passes unless AttemptTimeout says otherwise, retries
// backing off at most 2 s.
func TestTransport(t *testing.T) {
	assert.Equal(t, 3*time.Second, ddb.DefaultAttemptTimeout)
	for _, c := range []struct {
		name         string
		o            ddb.Options
		wantAttempts int
		wantTimeout  time.Duration
	}{
		{"defaults", ddb.Options{}, 4, ddb.DefaultAttemptTimeout},
		{"negative attempts", ddb.Options{MaxAttempts: -2}, 4, ddb.DefaultAttemptTimeout},
		{"one attempt", ddb.Options{MaxAttempts: 1}, 1, ddb.DefaultAttemptTimeout},
		{"attempt timeout", ddb.Options{MaxAttempts: 7, AttemptTimeout: 250 * time.Millisecond}, 7, 250 * time.Millisecond},
	} {
		hc, newRetryer := c.o.Transport(ddb.DefaultAttemptTimeout)
		assert.Equal(t, c.wantTimeout, hc.GetTimeout(), c.name)
		r := newRetryer()
		assert.Equal(t, c.wantAttempts, r.MaxAttempts(), c.name)
		// Backoff is random up to min(2 s, exponential): at attempt 20
		// it is uniform in [0, 2 s].
		var longest time.Duration
		for range 200 {
			d, err := r.RetryDelay(20, errors.New("throttled"))
			require.NoError(t, err)
			longest = max(longest, d)
		}
		assert.LessOrEqual(t, longest, 2*time.Second, c.name)
		assert.Greater(t, longest, time.Second, "%s: 200 draws in [0, 2 s] all under 1 s", c.name)
	}
}

// LocalConfig: the local credentials and region, whatever the environment
// says, and a 10 s attempt timeout; an endpoint only where one is given.
func TestLocalConfig(t *testing.T) {
	t.Setenv("AWS_REGION", "ap-south-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIAFROMTHEENVIRONMENT")
	assert.Equal(t, 10*time.Second, ddb.LocalAttemptTimeout)

	cfg := ddb.LocalConfig(ddb.Options{})
	assert.Equal(t, ddb.LocalRegion, cfg.Region)
	creds, err := cfg.Credentials.Retrieve(context.Background())
	require.NoError(t, err)
	assert.Equal(t, ddb.LocalAccessKeyID, creds.AccessKeyID)
	assert.Equal(t, ddb.LocalSecretAccessKey, creds.SecretAccessKey)
	hc, ok := cfg.HTTPClient.(*awshttp.BuildableClient)
	require.True(t, ok, "%T", cfg.HTTPClient)
	assert.Equal(t, ddb.LocalAttemptTimeout, hc.GetTimeout())
	assert.Equal(t, 4, cfg.Retryer().MaxAttempts())

	assert.Equal(t, "eu-west-1", ddb.LocalConfig(ddb.Options{Region: "eu-west-1"}).Region)
	short, ok := ddb.LocalConfig(ddb.Options{AttemptTimeout: time.Second}).HTTPClient.(*awshttp.BuildableClient)
	require.True(t, ok)
	assert.Equal(t, time.Second, short.GetTimeout())

	assert.Nil(t, ddb.ClientFromConfig(cfg, ddb.Options{}).Options().BaseEndpoint, "no endpoint given: the regional one")
	c := ddb.ClientFromConfig(cfg, ddb.Options{EndpointURL: "http://127.0.0.1:8000"}, func(o *dynamodb.Options) { o.RetryMaxAttempts = 2 })
	assert.Equal(t, "http://127.0.0.1:8000", aws.ToString(c.Options().BaseEndpoint))
	assert.Equal(t, 2, c.Options().RetryMaxAttempts, "the caller's options apply after the endpoint")
	assert.Equal(t, "http://127.0.0.1:9000", aws.ToString(ddb.NewLocalClient("http://127.0.0.1:9000").Options().BaseEndpoint))
}

// CreateTable on DynamoDB Local: the table ACTIVE with TTL on when the
// schema has a TTL attribute; a second create an error, or nothing with
// ifMissing; an invalid schema refused before any request.
func TestCreateTable(t *testing.T) {
	ctx := context.Background()
	// Unique names: make mutate runs every mutant on one engine.
	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)
	name := "create-table-test-events-" + suffix
	created, err := ddb.CreateTable(ctx, db.Client, schema.Events(), name, false)
	require.NoError(t, err)
	assert.True(t, created)
	t.Cleanup(func() { _, _ = db.Client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)}) })
	desc, err := db.Client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	require.NoError(t, err)
	assert.Equal(t, types.TableStatusActive, desc.Table.TableStatus)
	ttl, err := db.Client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
	require.NoError(t, err)
	assert.Equal(t, types.TimeToLiveStatusEnabled, ttl.TimeToLiveDescription.TimeToLiveStatus)
	assert.Equal(t, schema.AttrTTL, aws.ToString(ttl.TimeToLiveDescription.AttributeName))

	created, err = ddb.CreateTable(ctx, db.Client, schema.Events(), name, true)
	require.NoError(t, err, "ifMissing: an existing table is left alone")
	assert.False(t, created)
	_, err = ddb.CreateTable(ctx, db.Client, schema.Events(), name, false)
	var inUse *types.ResourceInUseException
	require.ErrorAs(t, err, &inUse)
	assert.Contains(t, err.Error(), "create table "+name)

	// Without a TTL attribute: no TTL.
	keys := "create-table-test-keys-" + suffix
	created, err = ddb.CreateTable(ctx, db.Client, schema.APIKeys(), keys, true)
	require.NoError(t, err)
	assert.True(t, created)
	t.Cleanup(func() { _, _ = db.Client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(keys)}) })
	ttl, err = db.Client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(keys)})
	require.NoError(t, err)
	assert.Equal(t, types.TimeToLiveStatusDisabled, ttl.TimeToLiveDescription.TimeToLiveStatus)

	bad := schema.Events()
	bad.PartitionKey.Name = ""
	_, err = ddb.CreateTable(ctx, db.Client, bad, "create-table-test-bad-"+suffix, false)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `schema "events" is invalid`)
	_, err = db.Client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("create-table-test-bad-" + suffix)})
	var notFound *types.ResourceNotFoundException
	assert.ErrorAs(t, err, &notFound, "nothing was created")
}
