package store_test

import (
	"bytes"
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/ddb/ddbtest"
	"github.com/triggers-dev/triggers/internal/event"
	itemconv "github.com/triggers-dev/triggers/internal/item"
	"github.com/triggers-dev/triggers/internal/store"
	"github.com/triggers-dev/triggers/schema"
)

// Each event of a batch gets its own answer: one too large is
// ErrInvalidItem, one whose writes stay throttled past the SDK's retries
// is ErrUnavailable, and the others are stored beside them. An empty
// batch writes nothing.
func TestPutBatchErrors(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table)
	assert.Empty(t, st.PutBatch(ctx, "tenant-a", nil))

	big := newEvent(t, "t", map[string]any{"s": string(make([]byte, 400*1024))})
	ok := newEvent(t, "t", map[string]any{})
	errs := st.PutBatch(ctx, "tenant-a", []event.Event{ok, big})
	assert.NoError(t, errs[0])
	assert.ErrorIs(t, errs[1], event.ErrInvalidItem)
	items := scan(t, table)
	require.Len(t, items, 1)
	assert.Equal(t, ok, itemconv.EventFromItem(items[0]))

	evs := []event.Event{newEvent(t, "a", map[string]any{}), newEvent(t, "b", map[string]any{}), newEvent(t, "c", map[string]any{})}
	var throttled atomic.Int32
	client := db.FaultClient(func(op string, body []byte) *http.Response {
		if op != "PutItem" || !bytes.Contains(body, []byte(evs[1].ID)) {
			return nil
		}
		throttled.Add(1)
		return ddbtest.AWSError("ProvisionedThroughputExceededException", "throughput exceeded")
	})
	errs = store.New(client, table).PutBatch(ctx, "tenant-b", evs)
	require.Len(t, errs, 3)
	assert.NoError(t, errs[0])
	assert.ErrorIs(t, errs[1], event.ErrUnavailable)
	assert.NoError(t, errs[2])
	assert.Greater(t, throttled.Load(), int32(1), "the SDK retried the throttled write")
	for i, e := range evs {
		got, err := st.Get(ctx, "tenant-b", e.ID)
		if i == 1 {
			assert.ErrorIs(t, err, event.ErrNotFound, "the throttled event is not stored")
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, e, got)
	}

	// Every write throttled: once the first events come back
	// unavailable, the rest are not sent (the SDK's retry quota, shared
	// by the instance's calls, is not spent on them).
	var many []event.Event
	for range 20 {
		many = append(many, newEvent(t, "a", map[string]any{}))
	}
	var mu sync.Mutex
	sent := map[string]bool{}
	client = db.FaultClient(func(op string, body []byte) *http.Response {
		if op != "PutItem" {
			return nil
		}
		mu.Lock()
		for _, e := range many {
			if bytes.Contains(body, []byte(e.ID)) {
				sent[e.ID] = true
			}
		}
		mu.Unlock()
		return ddbtest.AWSError("ProvisionedThroughputExceededException", "throughput exceeded")
	})
	for i, err := range store.New(client, table).PutBatch(ctx, "tenant-c", many) {
		assert.ErrorIs(t, err, event.ErrUnavailable, "event %d", i)
	}
	assert.Len(t, sent, 8, "the events in flight when the first came back (8 at once), no more")
}

// A batch whose context has ended sends nothing more: every event not
// yet sent is ErrUnavailable, and every event reported stored is in the
// table.
func TestPutBatchStopsWithTheContext(t *testing.T) {
	table := db.CreateTable(t, schema.Events())
	var evs []event.Event
	for range 20 {
		evs = append(evs, newEvent(t, "a", map[string]any{}))
	}
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	var calls atomic.Int32
	client := db.FaultClient(func(op string, _ []byte) *http.Response {
		calls.Add(1)
		return nil
	})
	for i, err := range store.New(client, table).PutBatch(ended, "tenant-a", evs) {
		require.ErrorIs(t, err, event.ErrUnavailable, "event %d", i)
		assert.Contains(t, err.Error(), context.Canceled.Error())
	}
	assert.Zero(t, calls.Load(), "nothing sent")
	assert.Empty(t, scan(t, table))

	// Ended while the first writes are under way: more than maxBatchPuts
	// events, so some wait for a place when it ends.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls.Store(0)
	client = db.FaultClient(func(op string, _ []byte) *http.Response {
		if calls.Add(1) == 1 {
			cancel()
		}
		return nil
	})
	errs := store.New(client, table).PutBatch(ctx, "tenant-a", evs)
	assert.Less(t, int(calls.Load()), len(evs), "the events still waiting are not sent")
	direct := store.New(db.Client, table)
	unavailable := 0
	for i, err := range errs {
		if err == nil {
			_, err := direct.Get(context.Background(), "tenant-a", evs[i].ID)
			assert.NoError(t, err, "event %d was reported stored", i)
		} else if assert.ErrorIs(t, err, event.ErrUnavailable, "event %d", i) {
			unavailable++
		}
	}
	assert.Positive(t, unavailable)
}
