package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/triggers-dev/triggers/internal/ddb/ddbtest"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/event/eventtest"
	itemconv "github.com/triggers-dev/triggers/internal/item"
	"github.com/triggers-dev/triggers/internal/store"
	"github.com/triggers-dev/triggers/schema"
)

// BenchmarkPutBatch stores batches of 25 events of 1 KB on DynamoDB
// Local: PutBatch (a conditional PutItem per event, 8 at once) beside
// one BatchWriteItem of the same items, which PutBatch used before it
// refused late copies (docs/runtime.md, Batches). An op is one batch. On
// DynamoDB Local the figures compare request overheads only (its latency
// is not DynamoDB's; docs/performance.md). Under make bench (-run '^$')
// TestMain starts no engine: the benchmark starts its own.
func BenchmarkPutBatch(b *testing.B) {
	ctx := context.Background()
	local := db
	if local == nil {
		var err error
		if local, err = ddbtest.StartWith(ctx, ddbtest.Options{NoStreams: true}); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = local.Stop() })
	}
	table := local.CreateTable(b, schema.Events())
	payload := eventtest.PayloadOf(b, map[string]any{"s": strings.Repeat("x", 1000)})
	batch := func() []event.Event {
		evs := make([]event.Event, 25)
		for i := range evs {
			e, err := event.New(event.CreateRequest{EventType: "order.paid", Payload: payload}, time.Now(), event.DefaultRetention, event.Metadata{})
			if err != nil {
				b.Fatal(err)
			}
			evs[i] = e
		}
		return evs
	}
	b.Run("conditional puts", func(b *testing.B) {
		st := store.New(local.Client, table)
		for b.Loop() {
			b.StopTimer()
			evs := batch()
			b.StartTimer()
			for _, err := range st.PutBatch(ctx, "tenant-bench", evs) {
				if err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("BatchWriteItem", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			var reqs []types.WriteRequest
			for _, e := range batch() {
				reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: itemconv.FromEvent("tenant-bench", e, schema.ProfileSeed)}})
			}
			b.StartTimer()
			out, err := local.Client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: reqs}})
			if err != nil || len(out.UnprocessedItems) > 0 {
				b.Fatal(err, out.UnprocessedItems)
			}
		}
	})
}
