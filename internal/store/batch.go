// Batch writes: one conditional PutItem per event, a few at once.

package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/triggers-dev/triggers/internal/event"
)

// PutBatch stores up to 25 events, each with Put's conditional PutItem,
// maxBatchPuts at once. It returns one error per event (nil when stored):
// each event gets its own answer (an item too large is ErrInvalidItem for
// that entry alone, throttling that outlasts the SDK's retries
// ErrUnavailable), and an event not yet sent, or still being written,
// when ctx ends is ErrUnavailable. Once one event is ErrUnavailable, the
// events not yet sent are not sent (ErrUnavailable too): under
// throttling each PutItem's retries draw on the SDK's retry quota, which
// the function instance's other calls share, and a batch sending all 25
// would take 25 events' worth of it (found by review); at most
// maxBatchPuts are in flight when the first comes back.
//
// It does not use BatchWriteItem, which has no conditions: a batch whose
// attempt timed out may still reach DynamoDB afterwards (held on the
// network past the SDK's retry), and would then put the events' first
// versions back over whatever changed them since (an ack, a delivery's
// status: the event in the inbox again). Put's condition refuses such a
// late copy, and recognises a resend whose first answer was lost as its
// own write. Each PutItem costs the write units the same item costs in
// a BatchWriteItem (docs/capacity.md); only the number of requests grows.
func (st *Store) PutBatch(ctx context.Context, tenant string, events []event.Event) []error {
	errs := make([]error, len(events))
	sem := make(chan struct{}, maxBatchPuts)
	var wg sync.WaitGroup
	var unavailable atomic.Bool
	for i := range events {
		if err := acquire(ctx, sem); err != nil {
			errs[i] = fmt.Errorf("put event: %w: %v", event.ErrUnavailable, err)
			continue
		}
		if unavailable.Load() {
			<-sem
			errs[i] = fmt.Errorf("put event: %w: not sent, as an earlier event of the batch found DynamoDB unavailable", event.ErrUnavailable)
			continue
		}
		wg.Go(func() {
			defer func() { <-sem }()
			err := st.Put(ctx, tenant, events[i])
			if err != nil && ctx.Err() != nil && !errors.Is(err, event.ErrUnavailable) && !errors.Is(err, event.ErrInvalidItem) {
				// Cut short by the request's end: its outcome is unknown,
				// as after a timeout.
				err = fmt.Errorf("%w: %w", event.ErrUnavailable, err)
			}
			if errors.Is(err, event.ErrUnavailable) {
				unavailable.Store(true) // before the place is given back
			}
			errs[i] = err
		})
	}
	wg.Wait()
	return errs
}

// maxBatchPuts bounds the PutItem calls of one PutBatch in flight: the
// SDK's HTTP client keeps 10 idle connections per host, so a batch reuses
// its connections.
const maxBatchPuts = 8

// acquire takes a place in sem, or returns ctx's cause once it has ended
// (first, if both are ready).
func acquire(ctx context.Context, sem chan struct{}) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	select {
	case sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
