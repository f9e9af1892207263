package store_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/ddb/ddbtest"
	"github.com/triggers-dev/triggers/internal/event"
	itemconv "github.com/triggers-dev/triggers/internal/item"
	"github.com/triggers-dev/triggers/internal/store"
	"github.com/triggers-dev/triggers/schema"
)

// stuckBatch is the real engine, except that BatchWriteItem never
// processes the requests for event id stuck: it writes the others and
// returns those as unprocessed, as DynamoDB does under partition
// throttling. It records how many requests each call carried.
type stuckBatch struct {
	store.API
	stuck string
	sizes []int
}

func (s *stuckBatch) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	var rest, left []types.WriteRequest
	var table string
	for tbl, reqs := range in.RequestItems {
		table = tbl
		s.sizes = append(s.sizes, len(reqs))
		for _, r := range reqs {
			if v, ok := r.PutRequest.Item[schema.AttrEventID].(*types.AttributeValueMemberS); ok && v.Value == s.stuck {
				left = append(left, r)
			} else {
				rest = append(rest, r)
			}
		}
	}
	if len(rest) > 0 {
		out, err := s.API.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: rest}}, optFns...)
		if err != nil || len(out.UnprocessedItems) > 0 {
			return out, err
		}
	}
	out := &dynamodb.BatchWriteItemOutput{}
	if len(left) > 0 {
		out.UnprocessedItems = map[string][]types.WriteRequest{table: left}
	}
	return out, nil
}

// Unprocessed items are sent again (and only they) until stored; an item
// left unprocessed after six rounds is unavailable (503) for that entry
// alone, and everything reported stored is in the table.
func TestPutBatchRetriesUnprocessedItems(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	evs := []event.Event{newEvent(t, "a", map[string]any{}), newEvent(t, "b", map[string]any{}), newEvent(t, "c", map[string]any{})}
	api := &stuckBatch{API: db.Client, stuck: evs[1].ID}
	errs := store.New(api, table).PutBatch(ctx, "tenant-a", evs)
	require.Len(t, errs, 3)
	assert.NoError(t, errs[0])
	require.ErrorIs(t, errs[1], event.ErrUnavailable)
	assert.Contains(t, errs[1].Error(), "item still unprocessed after 6 BatchWriteItem rounds")
	assert.NoError(t, errs[2])
	assert.Equal(t, []int{3, 1, 1, 1, 1, 1}, api.sizes, "requests per round")
	st := store.New(db.Client, table)
	for i, e := range evs {
		got, err := st.Get(ctx, "tenant-a", e.ID)
		if i == 1 {
			assert.ErrorIs(t, err, event.ErrNotFound)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, e, got)
	}

	// Unprocessed twice, then stored: no error at all.
	var calls, skip atomic.Int32
	skip.Store(2)
	client := db.FaultClient(func(op string, body []byte) *http.Response {
		if op != "BatchWriteItem" {
			return nil
		}
		calls.Add(1)
		if skip.Add(-1) >= 0 {
			var in map[string]json.RawMessage
			_ = json.Unmarshal(body, &in)
			return ddbtest.AWSJSON(map[string]json.RawMessage{"UnprocessedItems": in["RequestItems"]})
		}
		return nil
	})
	more := []event.Event{newEvent(t, "d", map[string]any{}), newEvent(t, "e", map[string]any{})}
	for i, err := range store.New(client, table).PutBatch(ctx, "tenant-b", more) {
		assert.NoError(t, err, "event %d", i)
	}
	assert.Equal(t, int32(3), calls.Load())
	for _, e := range more {
		got, err := st.Get(ctx, "tenant-b", e.ID)
		require.NoError(t, err)
		assert.Equal(t, e, got)
	}
}

// The retry wait ends with the request's context: what is left is
// unavailable, not lost silently.
func TestPutBatchStopsWithTheContext(t *testing.T) {
	table := db.CreateTable(t, schema.Events())
	evs := []event.Event{newEvent(t, "a", map[string]any{}), newEvent(t, "b", map[string]any{})}
	ctx, cancel := context.WithCancel(context.Background())
	api := &cancelAfterBatch{stuckBatch: stuckBatch{API: db.Client, stuck: evs[0].ID}, cancel: cancel}
	errs := store.New(api, table).PutBatch(ctx, "tenant-a", evs)
	require.ErrorIs(t, errs[0], event.ErrUnavailable)
	assert.Contains(t, errs[0].Error(), context.Canceled.Error())
	assert.NoError(t, errs[1])
	assert.Equal(t, []int{2}, api.sizes, "no round after the context ended")
}

type cancelAfterBatch struct {
	stuckBatch
	cancel func()
}

func (c *cancelAfterBatch) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	out, err := c.stuckBatch.BatchWriteItem(ctx, in, optFns...)
	c.cancel()
	return out, err
}

// A batch DynamoDB refuses as a whole (one item too large) is stored one
// event at a time: each entry gets its own answer. Other errors fail
// every entry with the same error, and nothing is written.
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

	var calls atomic.Int32
	client := db.FaultClient(func(op string, _ []byte) *http.Response {
		if op != "BatchWriteItem" {
			return nil
		}
		calls.Add(1)
		return ddbtest.AWSError("ProvisionedThroughputExceededException", "throughput exceeded")
	})
	errs = store.New(client, table).PutBatch(ctx, "tenant-a", []event.Event{newEvent(t, "t", map[string]any{}), newEvent(t, "t", map[string]any{})})
	for i, err := range errs {
		assert.ErrorIs(t, err, event.ErrUnavailable, "event %d", i)
	}
	assert.Equal(t, int32(3), calls.Load(), "the SDK's attempts, and no fallback to single writes")
	assert.Len(t, scan(t, table), 1)
}

// A batch DynamoDB answers with a 5xx may have been written: it is not
// sent again (the SDK would retry it blindly), each event is stored alone
// with the conditional PutItem instead, and every event gets its answer.
func TestPutBatchAfterAServerErrorStoresEachEventAlone(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	var batches, puts atomic.Int32
	client := db.FaultClient(func(op string, _ []byte) *http.Response {
		switch op {
		case "BatchWriteItem":
			batches.Add(1)
			return ddbtest.AWSServerError("InternalServerError", "internal server error")
		case "PutItem":
			puts.Add(1)
		}
		return nil
	})
	evs := []event.Event{newEvent(t, "a", map[string]any{}), newEvent(t, "b", map[string]any{}), newEvent(t, "c", map[string]any{})}
	for i, err := range store.New(client, table).PutBatch(ctx, "tenant-a", evs) {
		assert.NoError(t, err, "event %d", i)
	}
	assert.Equal(t, int32(1), batches.Load(), "the batch is sent once")
	assert.Equal(t, int32(3), puts.Load(), "then each event alone")
	st := store.New(db.Client, table)
	for _, e := range evs {
		got, err := st.Get(ctx, "tenant-a", e.ID)
		require.NoError(t, err)
		assert.Equal(t, e, got)
	}
}
