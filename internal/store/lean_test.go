package store_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/ddb/ddbtest"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/store"
	"github.com/triggers-dev/triggers/schema"
)

func leanStore(t *testing.T, client store.API) (string, *store.Store) {
	t.Helper()
	table := db.CreateTable(t, schema.EventsFor(schema.ProfileLean))
	return table, store.New(client, table, store.WithProfile(schema.ProfileLean))
}

// statusIndex returns the tenant's entries in StatusIndex, by sort key.
func statusIndex(t *testing.T, table, tenant string) []map[string]types.AttributeValue {
	t.Helper()
	out, err := db.Client.Query(context.Background(), &dynamodb.QueryInput{
		TableName:                 aws.String(table),
		IndexName:                 aws.String(schema.StatusIndex),
		KeyConditionExpression:    aws.String("user_id = :u"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":u": &types.AttributeValueMemberS{Value: tenant}},
	})
	require.NoError(t, err)
	return out.Items
}

func attrNames(it map[string]types.AttributeValue) []string {
	var names []string
	for k := range it {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// In the lean profile every way in writes items without
// event_type#timestamp; status#timestamp goes with delivery (from
// received and from retrying) and comes back with any other status, so
// StatusIndex holds exactly the undelivered events, each entry only its
// keys, event_type and ttl.
func TestLeanItemsAndSparseIndex(t *testing.T) {
	ctx := context.Background()
	table, st := leanStore(t, db.Client)
	one := newEvent(t, "one", map[string]any{"n": json.Number("1")})
	require.NoError(t, st.Put(ctx, "tenant-a", one))
	batch := []event.Event{newEvent(t, "two", map[string]any{}), newEvent(t, "three", map[string]any{})}
	for i, err := range st.PutBatch(ctx, "tenant-a", batch) {
		require.NoError(t, err, "event %d", i)
	}
	idem := newEvent(t, "four", map[string]any{})
	_, created, err := st.PutIdempotent(ctx, "tenant-a", idem, "key-1", "hash-1")
	require.NoError(t, err)
	require.True(t, created)
	all := append([]event.Event{one}, append(batch, idem)...)
	for _, e := range all {
		got, err := st.Get(ctx, "tenant-a", e.ID)
		require.NoError(t, err)
		assert.Equal(t, e, got, "the event reads back whole")
	}
	for _, it := range scan(t, table) {
		if it[schema.AttrEventType] == nil {
			continue // the idempotency record
		}
		assert.NotContains(t, it, schema.AttrEventTypeTS, "no EventTypeIndex key")
		assert.Equal(t, "received#"+item(it, schema.AttrTimestamp), item(it, schema.AttrStatusTS))
	}
	entries := statusIndex(t, table, "tenant-a")
	require.Len(t, entries, 4)
	for _, it := range entries {
		assert.Equal(t, []string{schema.AttrEventType, schema.AttrStatusTS, schema.AttrTimestampEventID, schema.AttrTTL, schema.AttrUserID}, attrNames(it),
			"keys, event_type and ttl only")
	}

	// received -> delivered removes the index key; failed -> retrying ->
	// delivered sets it twice and removes it.
	acked, err := st.Transition(ctx, "tenant-a", one.ID, []event.Status{event.Received}, event.Delivered)
	require.NoError(t, err)
	assert.Equal(t, event.Delivered, acked.Status)
	_, err = st.Transition(ctx, "tenant-a", batch[0].ID, []event.Status{event.Received}, event.Failed)
	require.NoError(t, err)
	retrying, err := st.Transition(ctx, "tenant-a", batch[0].ID, []event.Status{event.Failed}, event.Retrying)
	require.NoError(t, err)
	assert.Equal(t, 1, retrying.RetryCount)
	keys := map[string]string{}
	for _, it := range statusIndex(t, table, "tenant-a") {
		keys[item(it, schema.AttrTimestampEventID)] = item(it, schema.AttrStatusTS)
	}
	assert.Equal(t, map[string]string{
		batch[0].SortKey(): "retrying#" + batch[0].Timestamp,
		batch[1].SortKey(): "received#" + batch[1].Timestamp,
		idem.SortKey():     "received#" + idem.Timestamp,
	}, keys)
	_, err = st.Transition(ctx, "tenant-a", batch[0].ID, []event.Status{event.Retrying}, event.Delivered)
	require.NoError(t, err)
	assert.Len(t, statusIndex(t, table, "tenant-a"), 2)
	for _, e := range []event.Event{one, batch[0]} {
		got, err := st.Get(ctx, "tenant-a", e.ID)
		require.NoError(t, err)
		assert.Equal(t, event.Delivered, got.Status)
		for _, it := range scan(t, table) {
			if item(it, schema.AttrEventID) == e.ID {
				assert.NotContains(t, it, schema.AttrStatusTS)
			}
		}
	}
	// A delivered event is delivered for good: the status machine ends
	// there, in both profiles.
	_, err = st.Transition(ctx, "tenant-a", one.ID, []event.Status{event.Received}, event.Failed)
	var te *event.TransitionError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, event.Delivered, te.From)

	// The seed profile on its own table keeps both keys on every item.
	seedTable := db.CreateTable(t, schema.Events())
	seed := store.New(db.Client, seedTable, store.WithProfile(schema.ProfileSeed))
	require.NoError(t, seed.Put(ctx, "tenant-a", one))
	_, err = seed.Transition(ctx, "tenant-a", one.ID, []event.Status{event.Received}, event.Delivered)
	require.NoError(t, err)
	it := scan(t, seedTable)[0]
	assert.Equal(t, "one#"+one.Timestamp, item(it, schema.AttrEventTypeTS))
	assert.Equal(t, "delivered#"+one.Timestamp, item(it, schema.AttrStatusTS))
}

func item(it map[string]types.AttributeValue, name string) string {
	if v, ok := it[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

// The events of a lean inbox page come from the table after the index
// query: an event acked or deleted in between is left out (the table is
// fresher than the index), the rest keep the index's order.
func TestLeanPageReadsTheTableAfterTheIndex(t *testing.T) {
	ctx := context.Background()
	var table string
	var evs []event.Event
	var once atomic.Bool
	client := db.FaultClient(func(op string, _ []byte) *http.Response {
		if op == "BatchGetItem" && once.CompareAndSwap(false, true) {
			// Between the index query and the table read.
			_, err := store.New(db.Client, table, store.WithProfile(schema.ProfileLean)).
				Transition(ctx, "tenant-a", evs[1].ID, []event.Status{event.Received}, event.Delivered)
			require.NoError(t, err)
			_, err = db.Client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
				TableName: aws.String(table),
				Key: map[string]types.AttributeValue{
					schema.AttrUserID:           &types.AttributeValueMemberS{Value: "tenant-a"},
					schema.AttrTimestampEventID: &types.AttributeValueMemberS{Value: evs[3].SortKey()},
				},
			})
			require.NoError(t, err)
		}
		return nil
	})
	table, _ = leanStore(t, db.Client)
	st := store.New(client, table, store.WithProfile(schema.ProfileLean))
	for i := 0; i < 5; i++ {
		e := newEvent(t, "t", map[string]any{"i": json.Number(string(rune('0' + i)))})
		require.NoError(t, st.Put(ctx, "tenant-a", e))
		evs = append(evs, e)
	}
	page, err := st.List(ctx, event.InboxQuery{Tenant: "tenant-a", Status: event.Received, Limit: 5, Ascending: true})
	require.NoError(t, err)
	assert.Equal(t, []string{evs[0].ID, evs[2].ID, evs[4].ID}, idsOf(page.Events, func(int, event.Event) bool { return true }, true))
	for i, e := range page.Events {
		assert.Equal(t, evs[2*i].Payload, e.Payload, "payload of %s", e.ID)
	}
	assert.Nil(t, page.Next)
}

// Keys BatchGetItem leaves unprocessed are asked for again; when they
// stay unprocessed the page is unavailable (503), not short.
func TestLeanPageRetriesUnprocessedKeys(t *testing.T) {
	ctx := context.Background()
	var calls, unprocessed atomic.Int32
	client := db.FaultClient(func(op string, body []byte) *http.Response {
		if op != "BatchGetItem" {
			return nil
		}
		calls.Add(1)
		if unprocessed.Add(-1) >= 0 {
			var in map[string]json.RawMessage
			_ = json.Unmarshal(body, &in)
			return ddbtest.AWSJSON(map[string]json.RawMessage{"Responses": json.RawMessage("{}"), "UnprocessedKeys": in["RequestItems"]})
		}
		return nil
	})
	table, _ := leanStore(t, db.Client)
	st := store.New(client, table, store.WithProfile(schema.ProfileLean))
	evs := []event.Event{newEvent(t, "a", map[string]any{}), newEvent(t, "b", map[string]any{})}
	for _, e := range evs {
		require.NoError(t, st.Put(ctx, "tenant-a", e))
	}
	q := event.InboxQuery{Tenant: "tenant-a", Status: event.Received, Limit: 10, Ascending: true}

	unprocessed.Store(5) // the 6th and last call gets them
	page, err := st.List(ctx, q)
	require.NoError(t, err)
	assert.Equal(t, evs, page.Events)
	assert.Equal(t, int32(6), calls.Load())

	calls.Store(0)
	unprocessed.Store(6)
	_, err = st.List(ctx, q)
	require.ErrorIs(t, err, event.ErrUnavailable)
	assert.ErrorContains(t, err, "2 keys still unprocessed after 6 BatchGetItem calls")
	assert.Equal(t, int32(6), calls.Load())

	// The wait between calls ends with the request.
	cctx, cancel := context.WithCancel(ctx)
	cancelling := db.FaultClient(func(op string, body []byte) *http.Response {
		if op != "BatchGetItem" {
			return nil
		}
		cancel()
		var in map[string]json.RawMessage
		_ = json.Unmarshal(body, &in)
		return ddbtest.AWSJSON(map[string]json.RawMessage{"Responses": json.RawMessage("{}"), "UnprocessedKeys": in["RequestItems"]})
	})
	_, err = store.New(cancelling, table, store.WithProfile(schema.ProfileLean)).List(cctx, q)
	require.ErrorIs(t, err, event.ErrUnavailable)
	require.ErrorContains(t, err, "context canceled")

	// Throttling that outlasts the SDK's retries is unavailable too.
	throttled := db.FaultClient(func(op string, _ []byte) *http.Response {
		if op == "BatchGetItem" {
			return ddbtest.AWSError("ProvisionedThroughputExceededException", "slow down")
		}
		return nil
	})
	_, err = store.New(throttled, table, store.WithProfile(schema.ProfileLean)).List(ctx, q)
	require.ErrorIs(t, err, event.ErrUnavailable)
}
