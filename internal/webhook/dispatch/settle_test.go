package dispatch_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/store"
	"github.com/triggers-dev/triggers/internal/webhook/dispatch"
)

// settleStore moves the event to failed right after an attempt is
// recorded, when armed (a workflow engine's PATCH racing the delivery),
// and can fail Settle (the store unavailable).
type settleStore struct {
	dispatch.Store
	patchToFailed atomic.Bool
	failSettle    atomic.Bool
	settles       atomic.Int32
}

func (s *settleStore) FinishAttempt(ctx context.Context, tenant, eventID string, a event.Attempt, owner string) error {
	if err := s.Store.FinishAttempt(ctx, tenant, eventID, a, owner); err != nil {
		return err
	}
	if s.patchToFailed.Load() {
		// The client's PATCH (the API's TransitionOnce).
		_, err := s.Store.(*store.Store).TransitionOnce(ctx, tenant, eventID, []event.Status{event.Received, event.Retrying}, event.Failed)
		return err
	}
	return nil
}

func (s *settleStore) Settle(ctx context.Context, tenant, id string, from, to event.Status, latest []event.Attempt) error {
	s.settles.Add(1)
	if s.failSettle.Load() {
		return fmt.Errorf("settle: %w", event.ErrUnavailable)
	}
	return s.Store.Settle(ctx, tenant, id, from, to, latest)
}

// An event that is failed when its subscriptions' latest attempts call
// for delivered (moved to failed while the delivery was being recorded)
// reaches delivered in two steps, through retrying, in one settle.
func TestSettleReachesDeliveredThroughRetrying(t *testing.T) {
	ctx := context.Background()
	rcv := newReceiver(t, 200)
	var s *settleStore
	w := newWorld(t, rcv, func(c *dispatch.Config) {
		s = &settleStore{Store: c.Store}
		c.Store = s
	})
	w.subscribe("tenant-a")
	e := w.event("tenant-a", "t")
	s.patchToFailed.Store(true)
	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))
	assert.Equal(t, event.Delivered, w.status("tenant-a", e.ID).Status, "failed -> retrying -> delivered")
	assert.EqualValues(t, 2, s.settles.Load(), "two conditional steps")
}

// A Settle the store refuses (unavailable, not a lost race) fails the
// message, to be handled again; handled again, the event settles.
func TestSettleFailureFailsTheMessage(t *testing.T) {
	ctx := context.Background()
	rcv := newReceiver(t, 200)
	var s *settleStore
	w := newWorld(t, rcv, func(c *dispatch.Config) {
		s = &settleStore{Store: c.Store}
		c.Store = s
	})
	w.subscribe("tenant-a")
	e := w.event("tenant-a", "t")
	s.failSettle.Store(true)
	require.ErrorIs(t, w.d.HandleEvent(ctx, "tenant-a", e.ID), event.ErrUnavailable)
	assert.Equal(t, event.Received, w.status("tenant-a", e.ID).Status, "not settled yet")
	s.failSettle.Store(false)
	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID), "SQS delivers the message again")
	assert.Equal(t, event.Delivered, w.status("tenant-a", e.ID).Status)
	assert.Len(t, rcv.requests(), 1, "the delivery was recorded: not sent twice")
}

// getCounter counts the event reads.
type getCounter struct {
	dispatch.Store
	gets atomic.Int32
}

func (s *getCounter) Get(ctx context.Context, tenant, id string) (event.Event, error) {
	s.gets.Add(1)
	return s.Store.Get(ctx, tenant, id)
}

// A settle that finds an attempt scheduled (here while its endpoint's
// circuit is open) has nothing to do and does not read the event: the
// round reads it once, to deliver it.
func TestSettleWithAScheduledAttemptReadsNoEvent(t *testing.T) {
	ctx := context.Background()
	rcv := newReceiver(t, 500)
	var s *getCounter
	w := newWorld(t, rcv, func(c *dispatch.Config) {
		c.BreakerThreshold, c.BreakerCooldown = 1, time.Minute
		s = &getCounter{Store: c.Store}
		c.Store = s
	})
	w.now = w.now.Truncate(time.Millisecond) // the circuit's times are stored in milliseconds
	w.subscribe("tenant-a")
	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", w.event("tenant-a", "t").ID), "fails once: the circuit opens")
	e := w.event("tenant-a", "t")
	s.gets.Store(0)
	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))
	assert.Len(t, rcv.requests(), 1, "nothing sent while the circuit is open")
	a := w.attempts("tenant-a", e.ID)
	require.Len(t, a, 1)
	require.Equal(t, event.OutcomeScheduled, a[0].Outcome)
	assert.EqualValues(t, 1, s.gets.Load(), "event reads")
	assert.Equal(t, event.Received, w.status("tenant-a", e.ID).Status)
}
