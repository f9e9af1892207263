package main

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/ddb/ddbtest"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/schema"
)

// The raw ingest arm with its answer lost (the SDK sends the PutItem
// again, which finds the event it wrote) measures a success, as
// store.Put does: before, it was an error, and one in the warm-up ended
// the run (found by review).
func TestRawIngestSurvivesALostAnswer(t *testing.T) {
	ctx := context.Background()
	local, err := ddbtest.Start(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = local.Stop() })
	proxy, client := local.Faulty(t)
	e := &env{db: client, eventsTable: local.CreateTable(t, schema.Events()), ingestTenant: "tenant-a",
		createReq: event.CreateRequest{EventType: "load.test", Payload: event.Payload{}}, retention: event.DefaultRetention}

	proxy.LoseResponse("PutItem", 1)
	_, err = e.rawIngest(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, proxy.Calls("PutItem"), "the SDK sent it again")
	out, err := local.Client.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(e.eventsTable)})
	require.NoError(t, err)
	assert.Len(t, out.Items, 1, "stored once")
}
