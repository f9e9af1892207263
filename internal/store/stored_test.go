package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/avjson"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/store"
	"github.com/triggers-dev/triggers/schema"
)

// otherStored is a stored payload of a form the store does not know.
type otherStored struct{}

func (otherStored) AppendJSON(dst []byte, _ bool) ([]byte, error) { return append(dst, "{}"...), nil }

// The fast ingest path (avjson) hands the store its payload in stored
// form, Payload nil: Put, PutBatch and PutIdempotent store exactly the
// item the decoded payload makes; a nil stored payload is the empty
// object; Payload wins when both are set; a stored payload of another
// form is refused as an invalid item, not stored.
func TestStoredPayloads(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table)
	body := []byte(`{"event_type":"order.created","payload":{"n":1.50,"s":"<x>","l":[true,null,{"k":[]}],"m":{}}}`)
	fast, err := avjson.ParseCreate(body)
	require.NoError(t, err)
	require.Nil(t, fast.Payload, "the fast path keeps the payload stored")
	ref, err := event.ParseCreate(body)
	require.NoError(t, err)
	newEvent := func(req event.CreateRequest) event.Event {
		e, err := event.New(req, time.Now(), event.DefaultRetention, event.Metadata{SourceIP: "192.0.2.1", APIVersion: "v1"})
		require.NoError(t, err)
		return e
	}
	one, batch, idem := newEvent(fast), newEvent(fast), newEvent(fast)
	require.NoError(t, st.Put(ctx, "tenant-a", one))
	for _, err := range st.PutBatch(ctx, "tenant-a", []event.Event{batch}) {
		require.NoError(t, err)
	}
	_, created, err := st.PutIdempotent(ctx, "tenant-a", idem, "key", "hash")
	require.NoError(t, err)
	require.True(t, created)
	for _, e := range []event.Event{one, batch, idem} {
		got, err := st.Get(ctx, "tenant-a", e.ID)
		require.NoError(t, err)
		assert.Equal(t, ref.Payload, got.Payload, "stored as the decoded payload is")
		want, err := store.Item("tenant-a", newEventLike(e, ref.Payload))
		require.NoError(t, err)
		item, err := store.Item("tenant-a", e)
		require.NoError(t, err)
		assert.Equal(t, want, item)
	}

	empty := newEvent(event.CreateRequest{EventType: "t", Stored: avjson.Payload(nil)})
	require.NoError(t, st.Put(ctx, "tenant-a", empty))
	got, err := st.Get(ctx, "tenant-a", empty.ID)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{}, got.Payload)

	both := newEvent(fast)
	both.Payload = map[string]any{"from": "Payload"}
	require.NoError(t, st.Put(ctx, "tenant-a", both))
	got, err = st.Get(ctx, "tenant-a", both.ID)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"from": "Payload"}, got.Payload)

	odd := newEvent(event.CreateRequest{EventType: "t", Stored: otherStored{}})
	err = st.Put(ctx, "tenant-a", odd)
	require.ErrorIs(t, err, event.ErrInvalidItem)
	assert.ErrorContains(t, err, "payload held as store_test.otherStored")
	_, err = st.Get(ctx, "tenant-a", odd.ID)
	assert.ErrorIs(t, err, event.ErrNotFound, "nothing stored")
}

// newEventLike is e with its payload decoded to p.
func newEventLike(e event.Event, p map[string]any) event.Event {
	e.Payload, e.Stored = p, nil
	return e
}
