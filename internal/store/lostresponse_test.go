package store_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/event"
	itemconv "github.com/triggers-dev/triggers/internal/item"
	"github.com/triggers-dev/triggers/internal/store"
	"github.com/triggers-dev/triggers/schema"
)

// A conditional PutItem that succeeded but whose response was lost is
// retried by the SDK; the retry fails the condition on our own item. Put
// must report success (the event is stored, once), not a failure that the
// API would answer with a 5xx and the client would retry into a duplicate.
func TestPutSurvivesALostResponse(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	proxy, client := db.Faulty(t)
	st := store.New(client, table)

	proxy.LoseResponse("PutItem", 1)
	e := newEvent(t, "order.paid", map[string]any{"n": json.Number("1")})
	require.NoError(t, st.Put(ctx, "tenant-a", e))
	assert.Equal(t, 2, proxy.Calls("PutItem"), "the SDK retried once after the lost response")
	items := scan(t, table)
	require.Len(t, items, 1, "stored exactly once")
	assert.Equal(t, e, itemconv.EventFromItem(items[0]))

	// A real conflict (another event's item under the key) is still an error.
	e2 := newEvent(t, "order.paid", map[string]any{})
	item := itemconv.FromEvent("tenant-a", e2, schema.ProfileSeed)
	item[schema.AttrEventID] = &types.AttributeValueMemberS{Value: "evt_someone_else"}
	_, err := db.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item})
	require.NoError(t, err)
	assert.Error(t, st.Put(ctx, "tenant-a", e2))
}

// A BatchWriteItem that took effect but whose response was lost must not
// be sent again blindly: BatchWriteItem has no conditions, so the SDK's
// retry would put the events' first versions back over whatever changed
// them meanwhile (here an ack: delivered back to received, so the event
// would be in the inbox again). PutBatch sends the batch once and, when
// its outcome is unknown, stores each event with Put's conditional write,
// which recognises an event already stored as its own.
func TestPutBatchSurvivesALostResponseWithoutOverwriting(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	proxy, client := db.Faulty(t)
	st := store.New(client, table)
	direct := store.New(db.Client, table)

	evs := []event.Event{
		newEvent(t, "order.paid", map[string]any{"n": json.Number("1")}),
		newEvent(t, "order.paid", map[string]any{"n": json.Number("2")}),
	}
	proxy.LoseResponseThen("BatchWriteItem", func() {
		// The first event is acked while the client waits for its answer.
		_, err := direct.Transition(ctx, "tenant-a", evs[0].ID, []event.Status{event.Received}, event.Delivered)
		assert.NoError(t, err)
	})
	for i, err := range st.PutBatch(ctx, "tenant-a", evs) {
		require.NoError(t, err, "event %d is stored", i)
	}
	assert.Equal(t, 1, proxy.Calls("BatchWriteItem"), "the batch is not sent again blindly")
	got, err := direct.Get(ctx, "tenant-a", evs[0].ID)
	require.NoError(t, err)
	assert.Equal(t, event.Delivered, got.Status, "the ack is not overwritten")
	got, err = direct.Get(ctx, "tenant-a", evs[1].ID)
	require.NoError(t, err)
	assert.Equal(t, evs[1], got)
	assert.Len(t, scan(t, table), 2, "each event stored once")
}
