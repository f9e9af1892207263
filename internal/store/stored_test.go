package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/event/eventtest"
	"github.com/triggers-dev/triggers/internal/store"
	"github.com/triggers-dev/triggers/schema"
)

// A payload ParseCreate decoded (its fast path) goes through Put, PutBatch
// and PutIdempotent and reads back exactly as parsed, the values a plain
// decode of its JSON gives; a nil payload is stored as the empty object.
func TestPayloadsReadBackAsParsed(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table)
	payload := `{"n":1.50,"s":"<x>","l":[true,null,{"k":[]}],"m":{}}`
	req, err := event.ParseCreate([]byte(`{"event_type":"order.created","payload":` + payload + `}`))
	require.NoError(t, err)
	want := eventtest.Payload(t, payload)
	require.Equal(t, want, req.Payload)
	newEvent := func(req event.CreateRequest) event.Event {
		e, err := event.New(req, time.Now(), event.DefaultRetention, event.Metadata{SourceIP: "192.0.2.1", APIVersion: "v1"})
		require.NoError(t, err)
		return e
	}
	one, batch, idem := newEvent(req), newEvent(req), newEvent(req)
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
		assert.Equal(t, want, got.Payload, "read back as parsed")
	}

	empty := newEvent(event.CreateRequest{EventType: "t"})
	require.Nil(t, empty.Payload)
	require.NoError(t, st.Put(ctx, "tenant-a", empty))
	got, err := st.Get(ctx, "tenant-a", empty.ID)
	require.NoError(t, err)
	assert.Equal(t, event.Payload{}, got.Payload)
}
