package store_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

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

// stored returns the item of the tenant's event e as it is in the table.
func stored(t *testing.T, table, tenant string, e event.Event) map[string]types.AttributeValue {
	t.Helper()
	out, err := db.Client.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{
			schema.AttrUserID:           &types.AttributeValueMemberS{Value: tenant},
			schema.AttrTimestampEventID: &types.AttributeValueMemberS{Value: e.SortKey()},
		},
	})
	require.NoError(t, err)
	require.NotNil(t, out.Item, "no item for %s", e.ID)
	return out.Item
}

func attrS(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func attrN(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberN); ok {
		return v.Value
	}
	return ""
}

// Transition follows the status machine on the stored item: status and
// status#timestamp change together (the index key keeps the event's own
// timestamp), retry_count grows by one exactly on a move to retrying, and
// the returned event is the item after the update.
func TestTransitionUpdatesTheItem(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table)
	e := newEvent(t, "order.paid", map[string]any{"n": json.Number("1")})
	require.NoError(t, st.Put(ctx, "tenant-a", e))

	steps := []struct {
		from  []event.Status
		to    event.Status
		retry int
	}{
		{[]event.Status{event.Received}, event.Failed, 0},
		{[]event.Status{event.Failed}, event.Retrying, 1},
		{[]event.Status{event.Retrying}, event.Failed, 1},
		{[]event.Status{event.Failed}, event.Retrying, 2},
		{[]event.Status{event.Received, event.Retrying}, event.Delivered, 2},
	}
	for _, s := range steps {
		got, err := st.Transition(ctx, "tenant-a", e.ID, s.from, s.to)
		require.NoError(t, err, "to %s", s.to)
		assert.Equal(t, s.to, got.Status)
		assert.Equal(t, s.retry, got.RetryCount, "retry_count after moving to %s", s.to)
		assert.Equal(t, e.ID, got.ID)
		assert.Equal(t, e.Payload, got.Payload)
		item := stored(t, table, "tenant-a", e)
		assert.Equal(t, string(s.to), attrS(item, schema.AttrStatus))
		assert.Equal(t, string(s.to)+"#"+e.Timestamp, attrS(item, schema.AttrStatusTS))
		assert.Equal(t, e.Type+"#"+e.Timestamp, attrS(item, schema.AttrEventTypeTS), "the event type index key never changes")
		assert.Equal(t, got, itemconv.EventFromItem(item))
	}
}

// A move the current status does not allow is a *event.TransitionError
// naming the current status, and the item is unchanged.
func TestTransitionRefusedFromAnotherStatus(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table)
	e := newEvent(t, "t", map[string]any{})
	require.NoError(t, st.Put(ctx, "tenant-a", e))
	before := stored(t, table, "tenant-a", e)

	old, err := st.Transition(ctx, "tenant-a", e.ID, []event.Status{event.Failed, event.Retrying}, event.Delivered)
	var te *event.TransitionError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, event.TransitionError{From: event.Received, To: event.Delivered}, *te)
	assert.Equal(t, e.ID, old.ID, "the event as it is")
	assert.Equal(t, event.Received, old.Status)
	assert.Equal(t, before, stored(t, table, "tenant-a", e))

	// No status to move from: the answer names the current one, read.
	_, err = st.Transition(ctx, "tenant-a", e.ID, nil, event.Retrying)
	require.ErrorAs(t, err, &te)
	assert.Equal(t, event.TransitionError{From: event.Received, To: event.Retrying}, *te)
	assert.Equal(t, before, stored(t, table, "tenant-a", e))
}

// Every way of naming an event that is not the tenant's live event is
// event.ErrNotFound, from Get and from Transition alike, and nothing is
// written.
func TestNotFoundEverywhere(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table)
	e := newEvent(t, "t", map[string]any{})
	require.NoError(t, st.Put(ctx, "tenant-a", e))
	// The event's ttl is e.TTL: a store whose clock is past it sees an
	// expired event (the item is never written already expired, which
	// DynamoDB Local might delete under the test).
	later := store.New(db.Client, table, store.WithClock(func() time.Time { return time.Unix(e.TTL+1, 0) }))
	atTTL := store.New(db.Client, table, store.WithClock(func() time.Time { return time.Unix(e.TTL, 0) }))
	missing := newEvent(t, "t", map[string]any{})

	cases := []struct {
		name   string
		st     *store.Store
		tenant string
		id     string
	}{
		{"malformed id", st, "tenant-a", "evt_nope"},
		{"empty id", st, "tenant-a", ""},
		{"id of no event", st, "tenant-a", missing.ID},
		{"another tenant's event", st, "tenant-b", e.ID},
		{"expired", later, "tenant-a", e.ID},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.st.Get(ctx, c.tenant, c.id)
			assert.ErrorIs(t, err, event.ErrNotFound)
			_, err = c.st.Transition(ctx, c.tenant, c.id, []event.Status{event.Received}, event.Delivered)
			assert.ErrorIs(t, err, event.ErrNotFound)
			_, err = c.st.Transition(ctx, c.tenant, c.id, nil, event.Delivered)
			assert.ErrorIs(t, err, event.ErrNotFound)
		})
	}
	assert.Len(t, scan(t, table), 1, "a transition of a missing event created an item")
	assert.Equal(t, string(event.Received), attrS(stored(t, table, "tenant-a", e), schema.AttrStatus))

	// At its ttl second the event still lives (ttl >= now).
	got, err := atTTL.Get(ctx, "tenant-a", e.ID)
	require.NoError(t, err)
	assert.Equal(t, e, got)
	got, err = atTTL.Transition(ctx, "tenant-a", e.ID, []event.Status{event.Received}, event.Delivered)
	require.NoError(t, err)
	assert.Equal(t, event.Delivered, got.Status)
}

// The condition of a transition on an item that is not this event (an
// item under the key with another event id) is not found, not a
// transition error about someone else's status.
func TestTransitionOfAForeignItemIsNotFound(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table)
	e := newEvent(t, "t", map[string]any{})
	item := itemconv.FromEvent("tenant-a", e, schema.ProfileSeed)
	item[schema.AttrEventID] = &types.AttributeValueMemberS{Value: "evt_someone_else"}
	_, err := db.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item})
	require.NoError(t, err)
	_, err = st.Transition(ctx, "tenant-a", e.ID, []event.Status{event.Failed}, event.Retrying)
	assert.ErrorIs(t, err, event.ErrNotFound)
	assert.Equal(t, "0", attrN(stored(t, table, "tenant-a", e), schema.AttrRetryCount))
}
