package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/ddb/ddbtest"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/event/eventtest"
	itemconv "github.com/triggers-dev/triggers/internal/item"
	"github.com/triggers-dev/triggers/internal/store"
	"github.com/triggers-dev/triggers/schema"
)

var db *ddbtest.Local

// The tests read no stream: their tables have none (ddbtest.Options).
func TestMain(m *testing.M) { os.Exit(ddbtest.MainWith(m, &db, ddbtest.Options{NoStreams: true})) }

// newEvent returns a new event of type typ with the payload p (written
// as Go values).
func newEvent(t *testing.T, typ string, p map[string]any) event.Event {
	t.Helper()
	e, err := event.New(event.CreateRequest{EventType: typ, Payload: eventtest.PayloadOf(t, p)}, time.Now(), event.DefaultRetention, event.Metadata{SourceIP: "192.0.2.1"})
	require.NoError(t, err)
	return e
}

func scan(t *testing.T, table string) []map[string]types.AttributeValue {
	t.Helper()
	out, err := db.Client.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	return out.Items
}

// TestIdempotencyRecordIsDistinguishable pins what a stream consumer sees:
// the idempotency record lives in an "idempotency#" partition, carries
// record_type, and has neither event_type nor the GSI keys.
func TestIdempotencyRecordIsDistinguishable(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table)
	e := newEvent(t, "t", map[string]any{"a": json.Number("1")})
	got, created, err := st.PutIdempotent(ctx, "tenant-a", e, "key-1", "hash-1")
	require.NoError(t, err)
	assert.True(t, created)
	assert.Equal(t, e.ID, got.ID)

	items := scan(t, table)
	require.Len(t, items, 2)
	var events, records int
	for _, it := range items {
		if strings.HasPrefix(it[schema.AttrUserID].(*types.AttributeValueMemberS).Value, contract.IdempotencyPrefix) {
			records++
			pk := it[schema.AttrUserID].(*types.AttributeValueMemberS).Value
			assert.Equal(t, store.IdempotencyPartition("tenant-a", "key-1"), pk)
			assert.True(t, strings.HasPrefix(pk, "idempotency#tenant-a#"), pk)
			assert.Equal(t, contract.RecordTypeIdempotency, it[contract.AttrRecordType].(*types.AttributeValueMemberS).Value)
			assert.Equal(t, e.SortKey(), it[contract.AttrEventKey].(*types.AttributeValueMemberS).Value)
			for _, absent := range []string{schema.AttrEventType, schema.AttrStatusTS, schema.AttrEventTypeTS, schema.AttrPayload} {
				assert.NotContains(t, it, absent, "idempotency record has %s", absent)
			}
			assert.Equal(t, &types.AttributeValueMemberN{Value: fmt.Sprint(e.TTL)}, it[schema.AttrTTL], "idempotency record's ttl is not the event's")
		} else {
			events++
			assert.Equal(t, e, itemconv.EventFromItem(it))
		}
	}
	assert.Equal(t, 1, events)
	assert.Equal(t, 1, records)

	// The key is per tenant and per request.
	again, created, err := st.PutIdempotent(ctx, "tenant-a", newEvent(t, "t", map[string]any{}), "key-1", "hash-1")
	require.NoError(t, err)
	assert.False(t, created)
	assert.Equal(t, e.ID, again.ID)
	_, _, err = st.PutIdempotent(ctx, "tenant-a", newEvent(t, "t", map[string]any{}), "key-1", "hash-2")
	assert.ErrorIs(t, err, event.ErrIdempotencyMismatch)
}

func TestItemShape(t *testing.T) {
	e := newEvent(t, "user.created", map[string]any{"email": "a@example.com"})
	e.Metadata.CorrelationID = "req-abc123"
	item := itemconv.FromEvent("user-12345", e, schema.ProfileSeed)
	var names []string
	for k := range item {
		names = append(names, k)
	}
	assert.ElementsMatch(t, []string{"user_id", "timestamp#event_id", "event_id", "event_type", "payload", "status", "timestamp", "ttl", "retry_count", "metadata", "event_type#timestamp", "status#timestamp"}, names)
	assert.Equal(t, &types.AttributeValueMemberS{Value: e.Timestamp + "#" + e.ID}, item[schema.AttrTimestampEventID])
	assert.Equal(t, &types.AttributeValueMemberN{Value: fmt.Sprint(e.TTL)}, item[schema.AttrTTL])
}

func TestListStopsAfterBoundedRounds(t *testing.T) {
	// Every item is expired, so each Query returns nothing after the
	// filter; List must stop and hand back a cursor instead of reading the
	// whole partition in one request.
	ctx := context.Background()
	// TTL stays off on this table: DynamoDB Local would otherwise delete
	// some of the expired items while the test runs.
	tbl := schema.Events()
	tbl.TTLAttribute = ""
	table := db.CreateTable(t, tbl)
	past := store.New(db.Client, table)
	var evs []event.Event
	for i := 0; i < 30; i++ {
		e, err := event.New(event.CreateRequest{EventType: "t", Payload: event.Payload{}}, time.Now().Add(-40*24*time.Hour+time.Duration(i)*time.Millisecond), event.DefaultRetention, event.Metadata{})
		require.NoError(t, err)
		evs = append(evs, e)
	}
	for i, err := range past.PutBatch(ctx, "tenant-a", evs[:25]) {
		require.NoError(t, err, "event %d", i)
	}
	for i, err := range past.PutBatch(ctx, "tenant-a", evs[25:]) {
		require.NoError(t, err, "event %d", i)
	}
	require.Len(t, scan(t, table), 30)
	st := store.New(db.Client, table)
	page, err := st.List(ctx, event.InboxQuery{Tenant: "tenant-a", Limit: 2})
	require.NoError(t, err)
	assert.Empty(t, page.Events)
	require.NotNil(t, page.Next, "want a cursor to continue after 5 rounds of 2")
	pages := 1
	for page.Next != nil {
		page, err = st.List(ctx, event.InboxQuery{Tenant: "tenant-a", Limit: 2, After: page.Next})
		require.NoError(t, err)
		assert.Empty(t, page.Events)
		pages++
		require.Less(t, pages, 10)
	}
	assert.Equal(t, 4, pages, "30 expired items, 10 evaluated per request (the third request ends on the last item, so a fourth finds nothing)")
}

func TestMissingTableIsNotUnavailable(t *testing.T) {
	st := store.New(db.Client, "no-such-table")
	_, err := st.Get(context.Background(), "tenant-a", newEvent(t, "t", map[string]any{}).ID)
	require.Error(t, err)
	assert.False(t, errors.Is(err, event.ErrUnavailable), "a missing table is a configuration error (500), not a 503: %v", err)
	assert.False(t, errors.Is(err, event.ErrNotFound))
}

// Put is conditional on the key being new, on the store itself: a late
// repeat of a Put (an SDK retry whose first attempt succeeded) reports
// success but never overwrites what happened to the event since.
func TestPutNeverOverwrites(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table)
	e := newEvent(t, "t", map[string]any{"v": json.Number("1")})
	require.NoError(t, st.Put(ctx, "tenant-a", e))
	_, err := st.Transition(ctx, "tenant-a", e.ID, []event.Status{event.Received}, event.Delivered)
	require.NoError(t, err)

	again := e
	again.Payload = eventtest.Payload(t, `{"v":2}`)
	require.NoError(t, st.Put(ctx, "tenant-a", again), "a repeated Put of the same event id")
	got, err := st.Get(ctx, "tenant-a", e.ID)
	require.NoError(t, err)
	assert.Equal(t, event.Delivered, got.Status, "the repeated Put overwrote the status")
	assert.Equal(t, eventtest.Payload(t, `{"v":1}`), got.Payload, "the repeated Put overwrote the payload")
	assert.Len(t, scan(t, table), 1)
}

func errorIs(err, target error) bool { return errors.Is(err, target) }

// The metadata map holds correlation_id only when there is one.
func TestItemMetadata(t *testing.T) {
	e := newEvent(t, "t", map[string]any{})
	keys := func(e event.Event) []string {
		item := itemconv.FromEvent("tenant-a", e, schema.ProfileSeed)
		var names []string
		for k := range item[schema.AttrMetadata].(*types.AttributeValueMemberM).Value {
			names = append(names, k)
		}
		return names
	}
	assert.ElementsMatch(t, []string{"source_ip", "api_version"}, keys(e))
	e.Metadata.CorrelationID = "req-1"
	assert.ElementsMatch(t, []string{"source_ip", "api_version", "correlation_id"}, keys(e))
}
