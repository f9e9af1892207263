package dispatch_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/webhook/dispatch"
)

// failingSends fails the retry queue's next fail sends.
type failingSends struct {
	*recordingQueue
	fail int
}

func (q *failingSends) Send(ctx context.Context, t dispatch.Task, d time.Duration) error {
	if q.fail > 0 {
		q.fail--
		return errors.New("injected: SQS unavailable")
	}
	return q.recordingQueue.Send(ctx, t, d)
}

// failingParks fails the store's next fail ParkAttempt calls.
type failingParks struct {
	dispatch.Store
	fail int
}

func (s *failingParks) ParkAttempt(ctx context.Context, tenant, subID string, p event.Parked, ttl int64) error {
	if s.fail > 0 {
		s.fail--
		return errors.New("injected: DynamoDB unavailable")
	}
	return s.Store.ParkAttempt(ctx, tenant, subID, p, ttl)
}

// The first attempt failed and the send of its retry failed, so SQS hands
// the event's message over again; meanwhile the tenant narrowed the
// subscription's event_types. The round still resumes its attempt to that
// subscription and queues the retry: only a first attempt goes by the
// filter (docs/delivery.md, "Changing a subscription"). It was dropped,
// and the event stayed failed with a next_attempt_at in the past (found by
// review).
func TestRetryQueuedAfterAFilterChangeAndAFault(t *testing.T) {
	ctx := context.Background()
	rcv := newReceiver(t, http.StatusInternalServerError, http.StatusOK)
	q := &failingSends{recordingQueue: &recordingQueue{}, fail: 1}
	w := newWorld(t, rcv, func(c *dispatch.Config) { c.Queue = q })
	sub, _ := w.subscribe("tenant-a", "order.paid")
	e := w.event("tenant-a", "order.paid")

	require.Error(t, w.d.HandleEvent(ctx, "tenant-a", e.ID), "the retry's send failed: the message comes back")
	a := w.attempts("tenant-a", e.ID)
	require.Len(t, a, 1)
	require.Equal(t, event.OutcomeFailed, a[0].Outcome)
	require.NotEmpty(t, a[0].NextAttemptAt)

	types := []string{"user.created"}
	_, err := w.st.UpdateSubscription(ctx, "tenant-a", sub.ID, event.SubscriptionPatch{EventTypes: &types}, w.clock())
	require.NoError(t, err)

	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))
	tasks := q.take()
	require.Len(t, tasks, 1, "attempt 2 is queued")
	assert.Equal(t, sub.ID, tasks[0].task.SubscriptionID)
	assert.Equal(t, 2, tasks[0].task.Attempt)
	assert.Len(t, rcv.requests(), 1, "attempt 1 is not sent again")

	// The retry goes out when due and delivers, whatever the filter says
	// now.
	w.advance(tasks[0].task.DueAt.Sub(w.clock()))
	require.NoError(t, w.d.HandleTask(ctx, tasks[0].task))
	assert.Equal(t, event.Delivered, w.status("tenant-a", e.ID).Status)
	assert.Len(t, rcv.requests(), 2)
}

// The circuit is open, so the first attempt is recorded scheduled; parking
// it failed, and the tenant narrowed the filter before SQS handed the
// message over again. The round resumes the scheduled attempt and parks
// it, with a wake: it was left scheduled for good, the event received,
// out of reach of both redeliver and recover (found by review).
func TestScheduledAttemptParkedAfterAFilterChangeAndAFault(t *testing.T) {
	ctx := context.Background()
	rcv := newReceiver(t, http.StatusOK)
	w := newWorld(t, rcv, func(c *dispatch.Config) { c.Store = &failingParks{Store: c.Store, fail: 1} })
	sub, _ := w.subscribe("tenant-a", "order.paid")
	_, err := w.st.OpenCircuit(ctx, "tenant-a", sub.ID, "", w.clock(), w.clock().Add(30*time.Second), 30*time.Second)
	require.NoError(t, err)
	e := w.event("tenant-a", "order.paid")

	require.Error(t, w.d.HandleEvent(ctx, "tenant-a", e.ID), "parking failed: the message comes back")
	a := w.attempts("tenant-a", e.ID)
	require.Len(t, a, 1)
	require.Equal(t, event.OutcomeScheduled, a[0].Outcome)

	types := []string{"user.created"}
	_, err = w.st.UpdateSubscription(ctx, "tenant-a", sub.ID, event.SubscriptionPatch{EventTypes: &types}, w.clock())
	require.NoError(t, err)
	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))

	parked, err := w.st.ListParked(ctx, "tenant-a", sub.ID, 10)
	require.NoError(t, err)
	require.Len(t, parked, 1, "the scheduled attempt is parked behind the circuit")
	assert.Equal(t, parked[0].EventID, e.ID)
	tasks := w.q.take()
	require.Len(t, tasks, 1, "with its wake")
	require.NotEmpty(t, tasks[0].task.Wake)

	// Once the circuit's cooldown is over the wake makes it.
	w.advance(time.Minute)
	require.NoError(t, w.d.HandleTask(ctx, tasks[0].task))
	assert.Len(t, rcv.requests(), 1)
	assert.Equal(t, event.Delivered, w.status("tenant-a", e.ID).Status)
}

// The same for a redelivery round: the subscription's circuit is open,
// so the round's attempt is recorded scheduled, and parking it failed; the
// tenant narrowed the filter before SQS handed the round's task over
// again. The round resumes its own attempt and parks it, with a wake (a
// redelivery's attempt has no retries of its own: a failed one has
// nothing to lose, a scheduled one had).
func TestRedeliveryAttemptParkedAfterAFilterChangeAndAFault(t *testing.T) {
	ctx := context.Background()
	rcv := newReceiver(t, 503, 503, 200)
	var parks *failingParks
	w := newWorld(t, rcv, func(c *dispatch.Config) {
		parks = &failingParks{Store: c.Store}
		c.Store = parks
		c.Schedule = contract.RetrySchedule{time.Second}
	})
	sub, _ := w.subscribe("tenant-a", "order.paid")
	e := w.event("tenant-a", "order.paid")
	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))
	tasks := w.q.take()
	require.Len(t, tasks, 1)
	w.advance(time.Second)
	require.NoError(t, w.d.HandleTask(ctx, tasks[0].task))
	got := w.status("tenant-a", e.ID)
	require.Equal(t, event.Failed, got.Status, "the schedule ended")

	require.NoError(t, dispatch.Redeliver(w.q, w.st)(ctx, "tenant-a", got, "round-1", w.clock()))
	require.NoError(t, w.st.StartRedelivery(ctx, "tenant-a", got, "round-1", w.clock()))
	tasks = w.q.take()
	require.Len(t, tasks, 1)
	round := tasks[0].task
	_, err := w.st.OpenCircuit(ctx, "tenant-a", sub.ID, "", w.clock(), w.clock().Add(30*time.Second), 30*time.Second)
	require.NoError(t, err)
	parks.fail = 1
	require.Error(t, w.d.HandleTask(ctx, round), "parking failed: the round's task comes back")
	a := w.attempts("tenant-a", e.ID)
	require.Len(t, a, 3)
	require.Equal(t, "round-1", a[2].Round)
	require.Equal(t, event.OutcomeScheduled, a[2].Outcome)

	types := []string{"user.created"}
	_, err = w.st.UpdateSubscription(ctx, "tenant-a", sub.ID, event.SubscriptionPatch{EventTypes: &types}, w.clock())
	require.NoError(t, err)
	require.NoError(t, w.d.HandleTask(ctx, round))
	parked, err := w.st.ListParked(ctx, "tenant-a", sub.ID, 10)
	require.NoError(t, err)
	require.Len(t, parked, 1, "the round's scheduled attempt is parked")
	assert.Equal(t, event.Parked{EventID: e.ID, Number: 3, Token: parked[0].Token}, parked[0])
	tasks = w.q.take()
	require.Len(t, tasks, 1, "with its wake")
	require.NotEmpty(t, tasks[0].task.Wake)

	w.advance(time.Minute)
	require.NoError(t, w.d.HandleTask(ctx, tasks[0].task))
	assert.Len(t, rcv.requests(), 3)
	assert.Equal(t, event.Delivered, w.status("tenant-a", e.ID).Status)
}
