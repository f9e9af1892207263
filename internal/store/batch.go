// Batch writes: BatchWriteItem with retries of unprocessed items.

package store

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/triggers-dev/triggers/internal/backoff"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/schema"
)

// PutBatch stores up to 25 events with BatchWriteItem, retrying
// unprocessed items with backoff. It returns one error per event (nil when
// stored). If DynamoDB rejects the whole batch as invalid (one item too
// large, say), each event is stored alone so the others still succeed.
//
// A batch is sent again only when DynamoDB refused it (an answer of 4xx:
// throttling), never when its outcome is unknown (a lost response, a
// timeout, a 5xx): BatchWriteItem has no conditions, so sending it again
// would put the events' first versions back over whatever changed them
// meanwhile (an ack, a delivery's status). Then each event is stored alone
// with Put's conditional write, which recognises an event already stored
// as its own.
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
		}, retryRefusalsOnly)
		if err != nil {
			unknown := !refused(err) && ctx.Err() == nil
			err = classify("batch write events", err)
			if errors.Is(err, event.ErrInvalidItem) || unknown {
				// Each event alone, a few at once: one after the other, a
				// DynamoDB that times out would hold the request for 25
				// events' attempts (found by review).
				sem := make(chan struct{}, maxSinglePuts)
				var wg sync.WaitGroup
				for _, i := range pending {
					sem <- struct{}{}
					wg.Go(func() {
						defer func() { <-sem }()
						errs[i] = st.Put(ctx, tenant, events[i])
					})
				}
				wg.Wait()
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

// maxSinglePuts bounds the PutItem calls in flight when PutBatch stores
// its events one at a time.
const maxSinglePuts = 8

// refused reports whether err is DynamoDB's answer refusing the call (a
// 4xx: throttling, a validation error), after which nothing of a
// BatchWriteItem was written; a 5xx, a lost response or a timeout leaves
// its outcome unknown.
func refused(err error) bool {
	var re *smithyhttp.ResponseError
	return errors.As(err, &re) && re.HTTPStatusCode() >= 400 && re.HTTPStatusCode() < 500
}

// retryRefusalsOnly makes the SDK retry a call only after an answer that
// refused it (refused), not after one whose outcome is unknown: for
// BatchWriteItem, which has no conditions (PutBatch).
func retryRefusalsOnly(o *dynamodb.Options) {
	if r, ok := o.Retryer.(aws.RetryerV2); ok {
		o.Retryer = refusalsOnly{r}
		return
	}
	o.Retryer = aws.NopRetryer{}
}

// refusalsOnly is a retryer that retries what its RetryerV2 retries, when
// the error is a refusal.
type refusalsOnly struct{ aws.RetryerV2 }

// IsErrorRetryable reports whether err is a refusal the wrapped retryer
// retries.
func (r refusalsOnly) IsErrorRetryable(err error) bool {
	return refused(err) && r.RetryerV2.IsErrorRetryable(err)
}
