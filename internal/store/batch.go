// Batch writes: BatchWriteItem with retries of unprocessed items.

package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/triggers-dev/triggers/internal/backoff"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/schema"
)

// PutBatch stores up to 25 events with BatchWriteItem, retrying
// unprocessed items with backoff. It returns one error per event (nil when
// stored). If DynamoDB rejects the whole batch as invalid (one item too
// large, say), each event is stored alone so the others still succeed.
func (st *Store) PutBatch(ctx context.Context, tenant string, events []event.Event) []error {
	errs := make([]error, len(events))
	if len(events) == 0 {
		return errs
	}
	pending := map[string]int{} // sort key -> index
	var reqs []types.WriteRequest
	for i, e := range events {
		pending[e.SortKey()] = i
		reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: st.itemFor(st.partitionFor(ctx, tenant, e.ID), e)}})
	}
	const rounds = 6
	for round := 0; len(reqs) > 0; round++ {
		out, err := st.db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{
			RequestItems: map[string][]types.WriteRequest{st.table: reqs},
		})
		if err != nil {
			err = classify("batch write events", err)
			if errors.Is(err, event.ErrInvalidItem) {
				for _, i := range pending {
					errs[i] = st.Put(ctx, tenant, events[i])
				}
				return errs
			}
			for _, i := range pending {
				errs[i] = err
			}
			return errs
		}
		// Everything not returned as unprocessed is stored.
		reqs = out.UnprocessedItems[st.table]
		left := make(map[string]int, len(reqs))
		for _, r := range reqs {
			if r.PutRequest == nil {
				continue
			}
			k := getS(r.PutRequest.Item, schema.AttrTimestampEventID)
			left[k] = pending[k]
		}
		pending = left
		if len(reqs) == 0 {
			break
		}
		if round+1 >= rounds {
			for _, i := range pending {
				errs[i] = fmt.Errorf("%w: item still unprocessed after %d BatchWriteItem rounds", event.ErrUnavailable, rounds)
			}
			break
		}
		if err := st.sleep(ctx, backoff.Delay(retryBase, round+1)); err != nil {
			for _, i := range pending {
				errs[i] = fmt.Errorf("%w: %v", event.ErrUnavailable, err)
			}
			break
		}
	}
	return errs
}
