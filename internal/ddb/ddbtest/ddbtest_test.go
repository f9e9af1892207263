package ddbtest_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/ddb/ddblocal"
	"github.com/triggers-dev/triggers/internal/ddb/ddbtest"
	"github.com/triggers-dev/triggers/schema"
)

var db *ddbtest.Local

func TestMain(m *testing.M) { os.Exit(ddbtest.Main(m, &db)) }

func TestCreateTableFromSchema(t *testing.T) {
	ctx := context.Background()
	name := db.CreateTable(t, schema.Events())
	other := db.CreateTable(t, schema.Events())
	assert.NotEqual(t, name, other, "CreateTable twice gave the same name")

	out, err := db.Client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	require.NoError(t, err)
	assert.Equal(t, types.TableStatusActive, out.Table.TableStatus)
	var idx []string
	for _, g := range out.Table.GlobalSecondaryIndexes {
		idx = append(idx, aws.ToString(g.IndexName))
	}
	assert.ElementsMatch(t, []string{schema.EventTypeIndex, schema.StatusIndex}, idx)

	ttl, err := db.Client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
	require.NoError(t, err)
	assert.Equal(t, schema.AttrTTL, aws.ToString(ttl.TimeToLiveDescription.AttributeName))

	ok, err := ddbtest.TableExists(ctx, db.Client, name)
	require.NoError(t, err)
	assert.True(t, ok, "TableExists(%s) = false, want true", name)
	ok, err = ddbtest.TableExists(ctx, db.Client, "missing-table")
	require.NoError(t, err)
	assert.False(t, ok, "TableExists(missing-table) = true, want false")
}

func TestTableNameSanitized(t *testing.T) {
	got := ddbtest.TableName("events-Test/with spaces#and#hash")
	assert.Regexp(t, `^[A-Za-z0-9_.-]+$`, got)
}

func TestStopIsIdempotent(t *testing.T) {
	l, err := ddbtest.Start(context.Background())
	require.NoError(t, err)
	require.NoError(t, l.Stop())
	require.NoError(t, l.Stop())
	_, err = l.Client.ListTables(context.Background(), &dynamodb.ListTablesInput{}, func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
	assert.Error(t, err, "ListTables after Stop succeeded, want a connection error")
}

// A busy package's engine runs with the optimizing compiler even when the
// run asks every engine for the client compiler only (scripts/test.sh,
// through ddblocal.EnvJavaOptions); another package's keeps the client
// compiler.
func TestBusyEngineGetsTheOptimizingCompiler(t *testing.T) {
	t.Setenv(ddblocal.EnvJavaOptions, strings.Join(ddblocal.QuickStartJavaOptions(), " "))
	compiler := func(o ddbtest.Options) string {
		l, err := ddbtest.StartWith(context.Background(), o)
		require.NoError(t, err)
		defer l.Stop()
		cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(l.Pid()) + "/cmdline")
		require.NoError(t, err)
		args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		args = args[:slices.Index(args, "-jar")]
		last := ""
		for _, a := range args {
			if strings.HasPrefix(a, "-XX:TieredStopAtLevel=") {
				last = a // the JVM takes the last
			}
		}
		return last
	}
	assert.Equal(t, "-XX:TieredStopAtLevel=4", compiler(ddbtest.Options{Busy: true}), "busy")
	assert.Equal(t, "-XX:TieredStopAtLevel=1", compiler(ddbtest.Options{}), "not busy")
}

// An engine of a package that reads no stream (Options.NoStreams)
// creates tables without one; WithStreams gives them back; an engine
// started without the option keeps them.
func TestNoStreams(t *testing.T) {
	ctx := context.Background()
	quiet := ddbtest.NoStreamsOf(db)
	for _, c := range []struct {
		name   string
		l      *ddbtest.Local
		stream bool
	}{{"NoStreams", quiet, false}, {"WithStreams", quiet.WithStreams(), true}, {"default", db, true}} {
		table := c.l.CreateTable(t, schema.Events())
		out, err := db.Client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		require.NoError(t, err)
		spec := out.Table.StreamSpecification
		assert.Equal(t, c.stream, spec != nil && aws.ToBool(spec.StreamEnabled), c.name)
		assert.Equal(t, c.stream, aws.ToString(out.Table.LatestStreamArn) != "", c.name)
	}
}
