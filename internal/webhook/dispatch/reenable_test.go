package dispatch_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/webhook/dispatch"
)

// Re-enabling a disabled subscription (PATCH disabled false) makes its
// next delivery a single probe: an attempt that comes while the probe is
// under way is parked behind it, and made by the wake the probe's success
// queues, due at once. A failed probe opens the circuit again: the next
// event's attempt is parked, not sent, until the circuit lets requests
// through.
func TestReenableProbesFirst(t *testing.T) {
	ctx := context.Background()
	rcv := newReceiver(t, http.StatusOK, http.StatusOK, http.StatusInternalServerError, http.StatusOK, http.StatusOK)
	w := newWorld(t, rcv, func(c *dispatch.Config) { c.SlowAfter = -1 })
	sub, _ := w.subscribe("tenant-a")
	_, err := w.st.UpdateSubscription(ctx, "tenant-a", sub.ID, event.SubscriptionPatch{Disabled: aws.Bool(true)}, w.clock())
	require.NoError(t, err)
	w.advance(time.Second)
	missed := w.event("tenant-a", "t")
	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", missed.ID))
	assert.Empty(t, rcv.requests(), "nothing is sent to a disabled subscription")

	// Re-enabled: the circuit is half-open.
	w.advance(time.Second)
	got, err := w.st.UpdateSubscription(ctx, "tenant-a", sub.ID, event.SubscriptionPatch{Disabled: aws.Bool(false)}, w.clock())
	require.NoError(t, err)
	require.True(t, got.HalfOpen(w.clock()))

	// The probe (e1) hangs at the receiver while e2 arrives: e2 waits.
	e1, e2 := w.event("tenant-a", "t"), w.event("tenant-a", "t")
	finishProbe := startHeld(t, rcv, func() error { return w.d.HandleEvent(ctx, "tenant-a", e1.ID) })
	require.Empty(t, rcv.requests(), "the probe is held at the receiver")
	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e2.ID))
	tasks := w.q.take()
	require.Len(t, tasks, 1, "one wake task, no attempt sent")
	wake := tasks[0].task
	assert.NotEmpty(t, wake.Wake)
	parked, err := w.st.ListParked(ctx, "tenant-a", sub.ID, 10)
	require.NoError(t, err)
	require.Len(t, parked, 1)
	assert.Equal(t, e2.ID, parked[0].EventID, "parked behind the probe")
	require.NoError(t, finishProbe())
	require.Len(t, rcv.requests(), 1)
	assert.Equal(t, e1.ID, rcv.requests()[0].id, "the probe went first, alone")
	sub2, err := w.st.GetSubscription(ctx, "tenant-a", sub.ID)
	require.NoError(t, err)
	assert.True(t, sub2.CircuitOpenUntil.IsZero(), "a delivered probe closes the circuit")

	// The probe's success queued a wake due now in place of the one e2's
	// parking queued: it makes the parked attempt.
	tasks = w.q.take()
	require.Len(t, tasks, 1, "the wake due now")
	assert.Equal(t, w.clock(), tasks[0].task.DueAt)
	assert.NotEqual(t, wake.Wake, tasks[0].task.Wake)
	require.NoError(t, w.d.HandleTask(ctx, tasks[0].task))
	require.Len(t, rcv.requests(), 2)
	assert.Equal(t, e2.ID, rcv.requests()[1].id)
	assert.Equal(t, event.Delivered, w.status("tenant-a", e2.ID).Status)
	assert.Equal(t, event.Delivered, w.status("tenant-a", e1.ID).Status)
	parked, err = w.st.ListParked(ctx, "tenant-a", sub.ID, 10)
	require.NoError(t, err)
	assert.Empty(t, parked)
	assert.Empty(t, w.q.take())
	// The wake e2's parking queued finds nothing left.
	w.advance(wake.DueAt.Sub(w.clock()))
	require.NoError(t, w.d.HandleTask(ctx, wake))
	assert.Len(t, rcv.requests(), 2)
	assert.Empty(t, w.q.take())

	// Disabled and re-enabled again; this time the probe fails (500).
	_, err = w.st.UpdateSubscription(ctx, "tenant-a", sub.ID, event.SubscriptionPatch{Disabled: aws.Bool(true)}, w.clock())
	require.NoError(t, err)
	w.advance(time.Second)
	_, err = w.st.UpdateSubscription(ctx, "tenant-a", sub.ID, event.SubscriptionPatch{Disabled: aws.Bool(false)}, w.clock())
	require.NoError(t, err)
	e3 := w.event("tenant-a", "t")
	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e3.ID))
	require.Len(t, rcv.requests(), 3)
	sub3, err := w.st.GetSubscription(ctx, "tenant-a", sub.ID)
	require.NoError(t, err)
	assert.True(t, sub3.CircuitOpenUntil.After(w.clock()), "a failed probe opens the circuit again")
	assert.Equal(t, 1, sub3.ConsecutiveFailures, "the failure count started again at the re-enable")
	assert.False(t, sub3.Disabled)
	retry := w.q.take()
	require.Len(t, retry, 1, "e3's retry")

	e4 := w.event("tenant-a", "t")
	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e4.ID))
	assert.Len(t, rcv.requests(), 3, "nothing sent while the circuit is open")
	parked, err = w.st.ListParked(ctx, "tenant-a", sub.ID, 10)
	require.NoError(t, err)
	require.Len(t, parked, 1)
	assert.Equal(t, e4.ID, parked[0].EventID)
	wakes := w.q.take()
	require.Len(t, wakes, 1)

	// Once the circuit lets requests through, the wake's probe (e4)
	// succeeds, then e3's retry goes.
	w.advance(wakes[0].task.DueAt.Sub(w.clock()))
	require.NoError(t, w.d.HandleTask(ctx, wakes[0].task))
	require.Len(t, rcv.requests(), 4)
	assert.Equal(t, e4.ID, rcv.requests()[3].id)
	if d := retry[0].task.DueAt.Sub(w.clock()); d > 0 {
		w.advance(d)
	}
	require.NoError(t, w.d.HandleTask(ctx, retry[0].task))
	require.Len(t, rcv.requests(), 5)
	assert.Equal(t, e3.ID, rcv.requests()[4].id)
	assert.Equal(t, event.Delivered, w.status("tenant-a", e3.ID).Status)
	assert.Equal(t, event.Received, w.status("tenant-a", missed.ID).Status, "an event of the disabled time was never attempted")
}

func rcvHolding(r *receiver) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hold == nil
}
