package main

import (
	"context"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/ddb/ddbtest"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/schema"
)

// db is this package's DynamoDB Local (ddbtest.MainWith); TestEndToEnd
// and the scale tests start their own through the command, as it runs.
var db *ddbtest.Local

func TestMain(m *testing.M) { os.Exit(ddbtest.MainWith(m, &db, ddbtest.Options{NoStreams: true})) }

// The raw ingest arm with its answer lost (the SDK sends the PutItem
// again, which finds the event it wrote) measures a success, as
// store.Put does: before, it was an error, and one in the warm-up ended
// the run (found by review).
func TestRawIngestSurvivesALostAnswer(t *testing.T) {
	ctx := context.Background()
	proxy, client := db.Faulty(t)
	e := &env{db: client, eventsTable: db.CreateTable(t, schema.Events()), ingestTenant: "tenant-a",
		createReq: event.CreateRequest{EventType: "load.test", Payload: event.Payload{}}, retention: event.DefaultRetention}

	proxy.LoseResponse("PutItem", 1)
	_, err := e.rawIngest(ctx)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, proxy.Calls("PutItem"), 2, "the SDK sent it again") // (a third if the resend outlasted its attempt)
	out, err := db.Client.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(e.eventsTable)})
	require.NoError(t, err)
	assert.Len(t, out.Items, 1, "stored once")
}
