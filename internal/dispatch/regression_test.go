package dispatch_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/dispatch"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/webhook"
)

// The defects found in webhook delivery, each as the test that failed on
// the code that had it.

// failingQueue refuses its first n sends, then records like queue.
type failingQueue struct {
	queue
	fail atomic.Int32
}

func (q *failingQueue) Send(ctx context.Context, t dispatch.Task, delay time.Duration) error {
	if q.fail.Add(-1) >= 0 {
		return errors.New("sqs: service unavailable")
	}
	return q.queue.Send(ctx, t, delay)
}

// Sending the retry task fails after the failed attempt was recorded: the
// message is handled again (SQS redelivers it) and the retry is queued
// then, exactly once; a third copy queues nothing. (The retry used to be
// lost: the copy found attempt 1 recorded and returned.)
func TestRetryNotLostWhenQueueingItFails(t *testing.T) {
	ctx := context.Background()
	rcv := newReceiver(t, http.StatusInternalServerError)
	fq := &failingQueue{}
	fq.fail.Store(1)
	w := newWorld(t, rcv, func(c *dispatch.Config) { c.Queue = fq })
	sub, _ := w.subscribe("tenant-a")
	e := w.event("tenant-a", "t")

	require.Error(t, w.d.HandleEvent(ctx, "tenant-a", e.ID), "the queue refused the retry: the message fails")
	a := w.attempts("tenant-a", e.ID)
	require.Len(t, a, 1)
	assert.Equal(t, "failed", a[0].Outcome)
	assert.NotEmpty(t, a[0].NextAttemptAt)
	assert.Empty(t, a[0].FollowUp)
	assert.Empty(t, fq.take())

	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID), "SQS hands the message over again")
	tasks := fq.take()
	require.Len(t, tasks, 1, "the retry is queued now")
	assert.Equal(t, dispatch.Task{Tenant: "tenant-a", EventID: e.ID, SubscriptionID: sub.ID, Attempt: 2, DueAt: w.clock().Add(5 * time.Second)}, tasks[0].task)
	assert.Equal(t, event.FollowUpQueued, w.attempts("tenant-a", e.ID)[0].FollowUp)
	assert.Len(t, rcv.requests(), 1, "attempt 1 was not made again")

	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))
	assert.Empty(t, fq.take(), "a third copy queues nothing")
	assert.Equal(t, event.Failed, w.status("tenant-a", e.ID).Status)
}

// The tenant deletes a failing subscription: its retry is dropped and the
// event stays failed. (It used to become delivered: a subscription gone
// counted as satisfied.)
func TestDeletingAFailingSubscriptionNeverDelivers(t *testing.T) {
	ctx := context.Background()
	rcv := newReceiver(t, http.StatusInternalServerError)
	w := newWorld(t, rcv)
	sub, _ := w.subscribe("tenant-a")
	e := w.event("tenant-a", "t")
	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))
	tasks := w.q.take()
	require.Len(t, tasks, 1)
	require.NoError(t, w.st.DeleteSubscription(ctx, "tenant-a", sub.ID))

	w.advance(5 * time.Second)
	require.NoError(t, w.d.HandleTask(ctx, tasks[0].task))
	got := w.status("tenant-a", e.ID)
	assert.Equal(t, event.Failed, got.Status, "never acknowledged by a receiver")
	assert.Equal(t, 0, got.RetryCount, "no retry was made")
	assert.Len(t, rcv.requests(), 1)
	assert.Contains(t, w.logs.String(), "webhook retry dropped: the subscription was deleted or disabled")
}

// retryAfterReceiver answers 503 with the given Retry-After, then 200.
func retryAfterReceiver(t *testing.T, retryAfter string) *receiver {
	r := &receiver{}
	first := true
	var mu sync.Mutex
	r.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		mu.Lock()
		f := first
		first = false
		mu.Unlock()
		r.mu.Lock()
		r.got = append(r.got, received{id: req.Header.Get(webhook.HeaderID), body: body})
		r.mu.Unlock()
		if f {
			w.Header().Set("Retry-After", retryAfter)
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// A receiver's Retry-After lengthens the wait before the next attempt, up
// to the schedule's longest step; it never shortens it.
func TestRetryAfterIsHonoured(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name       string
		retryAfter func(now time.Time) string
		want       time.Duration
	}{
		{"seconds, longer than the step", func(time.Time) string { return "120" }, 120 * time.Second},
		{"seconds, shorter than the step", func(time.Time) string { return "1" }, 5 * time.Second},
		{"an HTTP date", func(now time.Time) string { return now.Add(10 * time.Minute).UTC().Format(http.TimeFormat) }, 10 * time.Minute},
		{"beyond the longest step", func(time.Time) string { return "172800" }, 10 * time.Hour},
		{"garbage", func(time.Time) string { return "soon" }, 5 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w0 := time.Now().UTC().Truncate(time.Second)
			rcv := retryAfterReceiver(t, tc.retryAfter(w0))
			w := newWorld(t, rcv, func(c *dispatch.Config) { c.Now = func() time.Time { return w0 } })
			w.now = w0
			w.subscribe("tenant-a")
			e := w.event("tenant-a", "t")
			require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))
			tasks := w.q.take()
			require.Len(t, tasks, 1)
			assert.Equal(t, w0.Add(tc.want), tasks[0].task.DueAt)
			a := w.attempts("tenant-a", e.ID)
			require.Len(t, a, 1)
			assert.Equal(t, 503, a[0].StatusCode)
			assert.Equal(t, event.FormatTime(w0.Add(tc.want)), a[0].NextAttemptAt)
		})
	}
}

// An invocation too close to its deadline starts no attempt: the message
// is reported failed, nothing is claimed, nothing sent.
func TestNoAttemptStartsTooCloseToTheDeadline(t *testing.T) {
	rcv := newReceiver(t)
	w := newWorld(t, rcv)
	w.subscribe("tenant-a")
	e := w.event("tenant-a", "t")
	ctx, cancel := context.WithTimeout(context.Background(), webhook.DefaultTimeout+contract.WebhookStoreMargin-time.Second)
	defer cancel()
	resp, err := w.d.HandleSQS(ctx, events.SQSEvent{Records: []events.SQSMessage{deliveryMessage(t, "m1", "tenant-a", e)}})
	require.NoError(t, err)
	require.Len(t, resp.BatchItemFailures, 1)
	assert.Equal(t, "m1", resp.BatchItemFailures[0].ItemIdentifier)
	assert.Empty(t, w.attempts("tenant-a", e.ID), "nothing claimed")
	assert.Empty(t, rcv.requests())
	assert.Contains(t, w.logs.String(), "too little time left")
}

// concurrencyReceiver holds each request for hold and records the most
// requests it had at once.
type concurrencyReceiver struct {
	receiver
	inflight, max atomic.Int32
}

func newConcurrencyReceiver(t *testing.T, hold time.Duration) *concurrencyReceiver {
	r := &concurrencyReceiver{}
	r.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		n := r.inflight.Add(1)
		defer r.inflight.Add(-1)
		for {
			m := r.max.Load()
			if n <= m || r.max.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(hold)
		r.mu.Lock()
		r.got = append(r.got, received{id: req.Header.Get(webhook.HeaderID)})
		r.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// One message's attempts run in parallel, never more than Parallel at a
// time.
func TestARoundsAttemptsRunInParallelWithinTheBound(t *testing.T) {
	ctx := context.Background()
	rcv := newConcurrencyReceiver(t, 100*time.Millisecond)
	w := newWorld(t, &rcv.receiver, func(c *dispatch.Config) { c.Parallel = 3 })
	for range 7 {
		w.subscribe("tenant-a")
	}
	e := w.event("tenant-a", "t")
	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))
	assert.Len(t, rcv.requests(), 7)
	assert.LessOrEqual(t, rcv.max.Load(), int32(3), "at most Parallel at once")
	assert.Greater(t, rcv.max.Load(), int32(1), "in parallel")
	assert.Equal(t, event.Delivered, w.status("tenant-a", e.ID).Status)
}

// Failures in a row open the endpoint's circuit: the next event's attempt
// is not made but scheduled, with its task due when the circuit's open
// time ends (not counted as a failure); then one probe goes, and its
// success closes the circuit.
func TestCircuitBreakerDefersThenProbes(t *testing.T) {
	ctx := context.Background()
	rcv := newReceiver(t, 500, 500, 200)
	m := &metrics{}
	w := newWorld(t, rcv, func(c *dispatch.Config) {
		c.BreakerThreshold, c.BreakerCooldown, c.Metrics = 2, time.Minute, m
	})
	w.now = w.now.Truncate(time.Millisecond) // the circuit's times are stored in milliseconds
	sub, _ := w.subscribe("tenant-a")
	for range 2 {
		e := w.event("tenant-a", "t")
		require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))
	}
	w.q.take()
	got, err := w.st.GetSubscription(ctx, "tenant-a", sub.ID)
	require.NoError(t, err)
	assert.Equal(t, w.clock().Add(time.Minute), got.CircuitOpenUntil, "opened after 2 failures in a row")
	assert.Equal(t, []string{"tenant-a/" + sub.ID + "/failures"}, m.opened)

	e3 := w.event("tenant-a", "t")
	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e3.ID))
	assert.Len(t, rcv.requests(), 2, "nothing sent while the circuit is open")
	a := w.attempts("tenant-a", e3.ID)
	require.Len(t, a, 1)
	assert.Equal(t, event.OutcomeScheduled, a[0].Outcome)
	assert.Equal(t, event.FollowUpQueued, a[0].FollowUp)
	tasks := w.q.take()
	require.Len(t, tasks, 1)
	due := w.clock().Add(time.Minute + 3*time.Second) // the open time, plus a tenth of it times half (Rand 0.5)
	assert.Equal(t, dispatch.Task{Tenant: "tenant-a", EventID: e3.ID, SubscriptionID: sub.ID, Attempt: 1, DueAt: due}, tasks[0].task)
	assert.Equal(t, []string{"tenant-a/" + sub.ID + "/" + contract.DeferredCircuitOpen}, m.deferred)
	assert.Equal(t, event.Received, w.status("tenant-a", e3.ID).Status, "not settled while its attempt is scheduled")
	assert.Equal(t, []string{"failed", "failed"}, m.outcomes, "a deferred attempt is no failure")

	// The same message again: the attempt is scheduled and its task
	// queued already.
	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e3.ID))
	assert.Empty(t, w.q.take())

	w.advance(time.Minute + 3*time.Second)
	require.NoError(t, w.d.HandleTask(ctx, tasks[0].task))
	assert.Len(t, rcv.requests(), 3, "the probe")
	a = w.attempts("tenant-a", e3.ID)
	require.Len(t, a, 1)
	assert.Equal(t, "delivered", a[0].Outcome)
	assert.Equal(t, 1, a[0].Sends)
	assert.Equal(t, event.Delivered, w.status("tenant-a", e3.ID).Status)
	got, err = w.st.GetSubscription(ctx, "tenant-a", sub.ID)
	require.NoError(t, err)
	assert.True(t, got.CircuitOpenUntil.IsZero(), "closed by the probe's success")
	assert.Zero(t, got.ConsecutiveFailures)
}

// A request still unanswered after SlowAfter opens its endpoint's circuit
// while it runs; the request itself completes.
func TestSlowEndpointOpensItsCircuit(t *testing.T) {
	ctx := context.Background()
	rcv := newConcurrencyReceiver(t, 300*time.Millisecond)
	m := &metrics{}
	w := newWorld(t, &rcv.receiver, func(c *dispatch.Config) {
		c.SlowAfter, c.BreakerCooldown, c.Metrics = 50*time.Millisecond, 2*time.Minute, m
	})
	sub, _ := w.subscribe("tenant-a")
	e := w.event("tenant-a", "t")
	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))
	assert.Equal(t, []string{"tenant-a/" + sub.ID + "/slow"}, m.opened)
	assert.Contains(t, w.logs.String(), `"msg":"circuit opened"`)
	assert.Equal(t, event.Delivered, w.status("tenant-a", e.ID).Status)
	got, err := w.st.GetSubscription(ctx, "tenant-a", sub.ID)
	require.NoError(t, err)
	assert.True(t, got.CircuitOpenUntil.IsZero(), "its delivery, recorded after, closed it again")
}

// deliveryMessage is the delivery queue's message of e.
func deliveryMessage(t *testing.T, id, tenant string, e event.Event) events.SQSMessage {
	body, err := e.MarshalJSON()
	require.NoError(t, err)
	s := tenant
	return events.SQSMessage{MessageId: id, Body: string(body),
		MessageAttributes: map[string]events.SQSMessageAttribute{dispatch.AttrTenant: {StringValue: &s, DataType: "String"}}}
}
