package dispatch_test

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/webhook/dispatch"
)

// drainTasks runs every task the world's retry queue holds, and those
// they queue, in the order they come due, the clock advanced to each; it
// returns how many ran.
func drainTasks(t *testing.T, w *world) int {
	t.Helper()
	var todo []dispatch.Task
	handled := 0
	for {
		for _, q := range w.q.take() {
			todo = append(todo, q.task)
		}
		if len(todo) == 0 {
			return handled
		}
		require.Less(t, handled, 50, "the retry queue does not drain")
		slices.SortStableFunc(todo, func(a, b dispatch.Task) int { return a.DueAt.Compare(b.DueAt) })
		next := todo[0]
		todo = todo[1:]
		if d := next.DueAt.Sub(w.clock()); d > 0 {
			w.advance(d)
		}
		require.NoError(t, w.d.HandleTask(context.Background(), next))
		handled++
	}
}

// sentTo counts the requests rcv received for event id.
func sentTo(rcv *receiver, id string) int {
	n := 0
	for _, r := range rcv.requests() {
		if r.id == id {
			n++
		}
	}
	return n
}

// redeliverNow asks for redelivery round round of failed event e as the
// API route does: the round queued, then the event moved to retrying. It
// returns the round's task (left on the queue).
func redeliverNow(t *testing.T, w *world, e event.Event, round string) dispatch.Task {
	t.Helper()
	ctx := context.Background()
	got := w.status("tenant-a", e.ID)
	require.Equal(t, event.Failed, got.Status, "the route allows a redelivery")
	require.NoError(t, dispatch.Redeliver(w.q, w.st)(ctx, "tenant-a", got, round, w.clock()))
	require.NoError(t, w.st.StartRedelivery(ctx, "tenant-a", got, round, w.clock()))
	var task dispatch.Task
	for _, q := range w.q.take() {
		if q.task.Round == round {
			task = q.task
		}
		require.NoError(t, w.q.Send(ctx, q.task, q.delay))
	}
	require.Equal(t, round, task.Round, "the round is queued")
	return task
}

// settled asserts that every attempt of e is final (none left scheduled
// or pending), nothing is left parked behind sub's circuit, and e is
// delivered.
func settled(t *testing.T, w *world, sub event.Subscription, e event.Event) {
	t.Helper()
	for _, a := range w.attempts("tenant-a", e.ID) {
		assert.True(t, a.Final(), "attempt %d left %s", a.Number, a.Outcome)
	}
	parked, err := w.st.ListParked(context.Background(), "tenant-a", sub.ID, 10)
	require.NoError(t, err)
	assert.Empty(t, parked)
	assert.Equal(t, event.Delivered, w.status("tenant-a", e.ID).Status)
}

// An event failed, and its retry (attempt 2) was put off by the endpoint's
// rate cap: recorded scheduled, its task queued for the next second, the
// event still failed (a scheduled attempt settles nothing), so
// POST /v1/events/{id}/redeliver is allowed. The round's attempt to the
// subscription is that scheduled attempt 2: the round resumes it, and the
// receiver gets the event once for the round. Before, the round made
// attempt 3 (the last number + 1) and attempt 2's task made attempt 2
// too: the event sent twice (found by review).
func TestRedeliveryResumesAnAttemptPutOffByTheRateCap(t *testing.T) {
	ctx := context.Background()
	rcv := newReceiver(t, http.StatusInternalServerError)
	w := newWorld(t, rcv, func(c *dispatch.Config) {
		c.EndpointRate = 1
		c.Schedule = contract.RetrySchedule{5 * time.Second}
		c.SlowAfter = -1
	})
	w.now = w.now.Truncate(time.Second)
	sub, _ := w.subscribe("tenant-a")
	e := w.event("tenant-a", "t")
	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))
	retries := w.q.take()
	require.Len(t, retries, 1)
	require.Equal(t, event.Failed, w.status("tenant-a", e.ID).Status)

	// The retry comes due in a second another event's request used up.
	w.advance(5 * time.Second)
	other := w.event("tenant-a", "t")
	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", other.ID))
	require.NoError(t, w.d.HandleTask(ctx, retries[0].task))
	a := w.attempts("tenant-a", e.ID)
	require.Len(t, a, 2)
	require.Equal(t, event.OutcomeScheduled, a[1].Outcome, "attempt 2 put off by the rate cap")

	round := redeliverNow(t, w, e, "round-1")
	drainTasks(t, w)
	assert.Equal(t, 2, sentTo(rcv, e.ID), "attempt 1, then one request for the round")
	a = w.attempts("tenant-a", e.ID)
	assert.Len(t, a, 2, "the round made attempt 2, no attempt 3")
	assert.Equal(t, event.OutcomeDelivered, a[len(a)-1].Outcome)
	settled(t, w, sub, e)

	// The round's task again (SQS at least once), now that attempt 2 is
	// made: it finds its attempt, and sends nothing.
	require.NoError(t, w.d.HandleTask(ctx, round))
	assert.Equal(t, 2, sentTo(rcv, e.ID))
	assert.Len(t, w.attempts("tenant-a", e.ID), 2)
	assert.Empty(t, w.q.take())
}

// The same behind an open circuit: a recovery (POST
// /v1/subscriptions/{id}/recover) of an event whose schedule ended finds
// the circuit open, so its attempt 3 is recorded scheduled and parked
// behind the circuit; the event stays failed, and the tenant redelivers
// it. The round resumes the parked attempt 3, and the subscription's wake
// makes it once. Before, the round parked an attempt 4 beside it, and the
// wake made both.
func TestRedeliveryResumesAnAttemptParkedBehindTheCircuit(t *testing.T) {
	ctx := context.Background()
	rcv := newReceiver(t, http.StatusInternalServerError, http.StatusInternalServerError)
	w := newWorld(t, rcv, func(c *dispatch.Config) {
		c.Schedule = contract.RetrySchedule{time.Second}
		c.SlowAfter = -1
		c.BreakerThreshold = 1000
	})
	sub, _ := w.subscribe("tenant-a")
	e := w.event("tenant-a", "t")
	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))
	drainTasks(t, w)
	require.Len(t, w.attempts("tenant-a", e.ID), 2)
	require.Equal(t, event.Failed, w.status("tenant-a", e.ID).Status, "the schedule ended")

	_, err := w.st.OpenCircuit(ctx, "tenant-a", sub.ID, "", w.clock(), w.clock().Add(30*time.Second), 30*time.Second)
	require.NoError(t, err)
	require.NoError(t, dispatch.Recover(w.q)(ctx, "tenant-a", sub.ID, "recovery-1", w.clock().Add(-time.Hour), w.clock().Add(time.Minute), w.clock()))
	recovery := w.q.take()
	require.Len(t, recovery, 1)
	_, wakes := runPages(t, w, recovery[0].task)
	require.Len(t, wakes, 1, "the recovery's attempt parked, with a wake")
	a := w.attempts("tenant-a", e.ID)
	require.Len(t, a, 3)
	require.Equal(t, event.OutcomeScheduled, a[2].Outcome)
	for _, q := range wakes {
		require.NoError(t, w.q.Send(ctx, q.task, q.delay))
	}

	redeliverNow(t, w, e, "round-1")
	drainTasks(t, w)
	assert.Equal(t, 3, sentTo(rcv, e.ID), "attempts 1 and 2, then one request for the recovery and the round")
	a = w.attempts("tenant-a", e.ID)
	assert.Len(t, a, 3, "no attempt 4")
	settled(t, w, sub, e)
}
