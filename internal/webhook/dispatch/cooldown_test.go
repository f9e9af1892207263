package dispatch_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/webhook"
	"github.com/triggers-dev/triggers/internal/webhook/dispatch"
)

// newBarrierReceiver answers 500 to every request, each only once n
// requests have arrived: n attempts in flight at once. (After 8 s at most,
// under the webhook client's timeout: a guard against a hang. With a
// second, attempts slowed by a busy machine could arrive after the first
// failures were recorded and find the circuit open.)
func newBarrierReceiver(t *testing.T, n int) *receiver {
	r := &receiver{}
	var wg sync.WaitGroup
	wg.Add(n)
	all := make(chan struct{})
	go func() { wg.Wait(); close(all) }()
	var once sync.Map
	r.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if _, seen := once.LoadOrStore(req.Header.Get(webhook.HeaderID), true); !seen {
			wg.Done()
		}
		select {
		case <-all:
		case <-time.After(8 * time.Second):
		}
		r.mu.Lock()
		r.got = append(r.got, received{id: req.Header.Get(webhook.HeaderID)})
		r.mu.Unlock()
		w.WriteHeader(http.StatusInternalServerError)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// burst delivers n events at once, in one batch, to one subscription of a
// receiver that fails them all once all n are in flight (a breaker
// threshold of 2, a Cooldown of a minute, no slow watch).
func burst(t *testing.T, n int) (*world, *receiver, event.Subscription) {
	t.Helper()
	rcv := newBarrierReceiver(t, n)
	w := newWorld(t, rcv, func(c *dispatch.Config) {
		c.BreakerThreshold, c.BreakerCooldown, c.SlowAfter = 2, time.Minute, -1
		c.SlowLaneAfter = -1 // the barrier's wait is no slow answer
	})
	w.now = w.now.Truncate(time.Millisecond) // the circuit's times are stored in milliseconds
	sub, _ := w.subscribe("tenant-a")
	var batch events.SQSEvent
	for i := range n {
		e := w.event("tenant-a", "t")
		batch.Records = append(batch.Records, deliveryMessage(t, "m"+strconv.Itoa(i), "tenant-a", e))
	}
	res, err := w.d.HandleSQS(context.Background(), batch)
	require.NoError(t, err)
	require.Empty(t, res.BatchItemFailures)
	return w, rcv, sub
}

// Failures that were in flight together when the circuit opened are one
// run of failures, not failed probes: the circuit opens for Cooldown, as
// docs/delivery.md promises ("doubling with each failed probe"), not for
// Cooldown doubled once per failure past the threshold (6 concurrent
// failures with a threshold of 2 opened it for 16 times Cooldown; a burst
// of 20 for the full hour: found by review).
func TestConcurrentFailuresOpenTheCircuitForOneCooldown(t *testing.T) {
	ctx := context.Background()
	const n = 6
	w, rcv, sub := burst(t, n)
	require.Len(t, rcv.requests(), n, "every attempt was made: all were in flight before any failure was recorded")

	got, err := w.st.GetSubscription(ctx, "tenant-a", sub.ID)
	require.NoError(t, err)
	assert.Equal(t, n, got.ConsecutiveFailures)
	assert.Equal(t, w.clock().Add(time.Minute), got.CircuitOpenUntil, "open for one Cooldown: no probe has failed")
}

// After such a burst, the first failed probe reopens the circuit for
// twice the opening before it, not for Cooldown doubled once per failure
// of the burst: 6 failures at a threshold of 2 made the probe's failure
// the 7th in a row, and it reopened the circuit for 32 times Cooldown
// (found by review). Each further failed probe doubles it again.
func TestFailedProbeAfterABurstDoublesTheOpening(t *testing.T) {
	ctx := context.Background()
	const n = 6
	w, rcv, sub := burst(t, n)
	require.Len(t, rcv.requests(), n)

	// The retries come due while the circuit is open: they park behind
	// it, and its wake makes them once it lets requests through. The
	// first is the probe, and fails (the receiver answers 500).
	retries := w.q.take()
	require.Len(t, retries, n)
	w.advance(5 * time.Second)
	for _, r := range retries {
		require.NoError(t, w.d.HandleTask(ctx, r.task))
	}
	require.Len(t, rcv.requests(), n, "parked, not made")
	for probe, want := range []time.Duration{2 * time.Minute, 4 * time.Minute} {
		var wake *dispatch.Task
		for _, q := range w.q.take() {
			if q.task.Wake != "" {
				wake = &q.task
			}
		}
		require.NotNil(t, wake, "probe %d: a wake is queued", probe+1)
		got, err := w.st.GetSubscription(ctx, "tenant-a", sub.ID)
		require.NoError(t, err)
		w.advance(got.CircuitOpenUntil.Sub(w.clock()))
		wake.DueAt = w.clock()
		before := len(rcv.requests())
		require.NoError(t, w.d.HandleTask(ctx, *wake))
		require.Len(t, rcv.requests(), before+1, "probe %d: one probe was made", probe+1)
		got, err = w.st.GetSubscription(ctx, "tenant-a", sub.ID)
		require.NoError(t, err)
		assert.Equal(t, w.clock().Add(want), got.CircuitOpenUntil, "probe %d failed: reopened for twice the opening before", probe+1)
		assert.Equal(t, want, got.CircuitCooldown)
	}
}

// stopAfterFinish is the store as a process sees it that stops right
// after recording its first attempt's outcome: the call took effect, the
// invocation goes no further (its message fails and comes back).
type stopAfterFinish struct {
	dispatch.Store
	stopped atomic.Bool
}

func (s *stopAfterFinish) FinishAttempt(ctx context.Context, tenant, eventID string, a event.Attempt, owner string) error {
	if err := s.Store.FinishAttempt(ctx, tenant, eventID, a, owner); err != nil {
		return err
	}
	if s.stopped.CompareAndSwap(false, true) {
		return errors.New("the process stopped")
	}
	return nil
}

// A failed probe's reopening survives a stop between the probe's outcome
// and the reopening: the message handled again reopens the circuit for
// twice the opening before, as the uninterrupted probe does, and a copy
// handled after that does not double it again. (Before, the reopening
// came only from the probe's own invocation: after the stop the circuit
// stayed half-open, and another probe went once the first one's hold
// ended.)
func TestFailedProbeReopensAfterAStop(t *testing.T) {
	ctx := context.Background()
	rcv := newReceiver(t, http.StatusInternalServerError, http.StatusInternalServerError)
	stop := &stopAfterFinish{}
	w := newWorld(t, rcv, func(c *dispatch.Config) {
		c.BreakerThreshold, c.BreakerCooldown, c.SlowAfter = 5, time.Minute, -1
		stop.Store = c.Store
		c.Store = stop
	})
	w.now = w.now.Truncate(time.Millisecond) // the circuit's times are stored in milliseconds
	sub, _ := w.subscribe("tenant-a")
	// Opened for 10 minutes, which have passed: half-open.
	_, err := w.st.OpenCircuit(ctx, "tenant-a", sub.ID, "", w.clock().Add(-10*time.Minute), w.clock(), 10*time.Minute)
	require.NoError(t, err)
	e := w.event("tenant-a", "t")

	require.Error(t, w.d.HandleEvent(ctx, "tenant-a", e.ID), "the process stopped after the probe's outcome")
	require.Len(t, rcv.requests(), 1, "the probe")
	for copyN := range 2 {
		require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID), "SQS hands the message over again (copy %d)", copyN+1)
		got, err := w.st.GetSubscription(ctx, "tenant-a", sub.ID)
		require.NoError(t, err)
		assert.Equal(t, w.clock().Add(20*time.Minute), got.CircuitOpenUntil, "copy %d: reopened for twice the opening before", copyN+1)
		assert.Equal(t, 20*time.Minute, got.CircuitCooldown, "copy %d", copyN+1)
	}
	assert.Len(t, rcv.requests(), 1, "the probe was not made again")
}

// A failed probe's reopening is decided at the probe's time: a success of
// a request started after the probe (after a stop between the probe's
// outcome and the reopening, another probe once the first one's hold
// lapsed; or an instance that read the subscription before the circuit
// opened) keeps the circuit closed, whether the reopening comes right
// after the success or from the probe's message handled again after the
// stop. (Before, the opening was decided at the time of the call: either
// way the circuit the success had closed opened again for twice the
// cooldown, and every attempt waited.)
func TestFailedProbeDoesNotReopenACircuitASuccessClosedSince(t *testing.T) {
	for _, stopped := range []bool{false, true} {
		t.Run(map[bool]string{false: "right after", true: "after a stop"}[stopped], func(t *testing.T) {
			ctx := context.Background()
			rcv := newReceiver(t, http.StatusInternalServerError)
			stop := &stopAfterFinish{}
			around := &aroundFirstFailure{}
			w := newWorld(t, rcv, func(c *dispatch.Config) {
				c.BreakerThreshold, c.BreakerCooldown, c.SlowAfter = 5, time.Minute, -1
				around.Store = c.Store
				c.Store = around
				if stopped {
					stop.Store = c.Store
					c.Store = stop
				}
			})
			w.now = w.now.Truncate(time.Millisecond)
			probeAt := w.clock()
			around.after = func(ctx context.Context, st dispatch.Store, tenant, id string) error {
				// A request started 30 s after the probe (past its hold
				// and the skew margin) succeeds, and the reopening comes
				// a second after that.
				if w.clock().After(probeAt.Add(30 * time.Second)) {
					return errors.New("the clock went past the success's time")
				}
				w.advance(probeAt.Add(30 * time.Second).Sub(w.clock()))
				_, err := st.SubscriptionSucceeded(ctx, tenant, id, "", w.clock())
				w.advance(time.Second)
				return err
			}
			sub, _ := w.subscribe("tenant-a")
			_, err := w.st.OpenCircuit(ctx, "tenant-a", sub.ID, "", w.clock().Add(-10*time.Minute), w.clock(), 10*time.Minute)
			require.NoError(t, err)
			e := w.event("tenant-a", "t")

			if stopped {
				require.Error(t, w.d.HandleEvent(ctx, "tenant-a", e.ID), "the process stopped after the probe's outcome")
			}
			require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))
			require.Len(t, rcv.requests(), 1, "the probe")
			require.Equal(t, 1, around.calls(), "the success was recorded before the reopening")
			got, err := w.st.GetSubscription(ctx, "tenant-a", sub.ID)
			require.NoError(t, err)
			assert.True(t, got.CircuitOpenUntil.IsZero(), "the circuit the success closed stays closed: open until %v", got.CircuitOpenUntil)
			assert.True(t, got.ProbeUntil.IsZero(), "no probe holds it")
			as := w.attempts("tenant-a", e.ID)
			require.Len(t, as, 1)
			assert.Equal(t, event.OutcomeFailed, as[0].Outcome)
			assert.Equal(t, event.FollowUpQueued, as[0].FollowUp, "the next attempt is queued as any failure's")
		})
	}
}

// The opening after Threshold failures in a row is decided at the start of
// the run that reached it: a success that ended the run since (a request
// that started after the run began got through) keeps the circuit closed,
// even when this failure started after the success (found by review: one
// failure after a success is not Threshold failures in a row); a success
// that did not end it (older than the run, which a later failure began)
// does not refuse it.
func TestThresholdOpeningIsDecidedAtTheFailure(t *testing.T) {
	for _, tc := range []struct {
		name      string
		threshold int
		// before and after run around the first failure's record, with
		// t0 its attempt's time.
		before, after func(ctx context.Context, st dispatch.Store, tenant, id string, t0 time.Time) error
		open          bool
	}{{
		name: "a later request's success", threshold: 1,
		after: func(ctx context.Context, st dispatch.Store, tenant, id string, t0 time.Time) error {
			_, err := st.SubscriptionSucceeded(ctx, tenant, id, "", t0.Add(time.Second))
			return err
		},
		open: false,
	}, {
		name: "a success that ended the run before this failure", threshold: 2,
		before: func(ctx context.Context, st dispatch.Store, tenant, id string, t0 time.Time) error {
			_, err := st.SubscriptionFailed(ctx, tenant, id, "", t0.Add(-2*time.Second), time.Hour, "r")
			return err
		},
		after: func(ctx context.Context, st dispatch.Store, tenant, id string, t0 time.Time) error {
			closed, err := st.SubscriptionSucceeded(ctx, tenant, id, "", t0.Add(-time.Second))
			if err == nil && !closed {
				return errors.New("the success did not end the run")
			}
			return err
		},
		open: false,
	}, {
		name: "a run begun by a later failure", threshold: 2,
		before: func(ctx context.Context, st dispatch.Store, tenant, id string, t0 time.Time) error {
			_, err := st.SubscriptionFailed(ctx, tenant, id, "", t0.Add(2*time.Second), time.Hour, "r")
			return err
		},
		after: func(ctx context.Context, st dispatch.Store, tenant, id string, t0 time.Time) error {
			closed, err := st.SubscriptionSucceeded(ctx, tenant, id, "", t0.Add(time.Second))
			if closed {
				return errors.New("the success between the two failures ended the run")
			}
			return err
		},
		open: true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			rcv := newReceiver(t, http.StatusInternalServerError)
			around := &aroundFirstFailure{}
			w := newWorld(t, rcv, func(c *dispatch.Config) {
				c.BreakerThreshold, c.BreakerCooldown, c.SlowAfter = tc.threshold, time.Minute, -1
				around.Store = c.Store
				c.Store = around
			})
			w.now = w.now.Truncate(time.Millisecond)
			t0 := w.clock()
			if tc.before != nil {
				around.before = func(ctx context.Context, st dispatch.Store, tenant, id string) error {
					return tc.before(ctx, st, tenant, id, t0)
				}
			}
			around.after = func(ctx context.Context, st dispatch.Store, tenant, id string) error {
				err := tc.after(ctx, st, tenant, id, t0)
				w.advance(3 * time.Second) // the opening comes after both
				return err
			}
			sub, _ := w.subscribe("tenant-a")
			e := w.event("tenant-a", "t")
			require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))
			require.Equal(t, 1, around.calls())
			got, err := w.st.GetSubscription(ctx, "tenant-a", sub.ID)
			require.NoError(t, err)
			if tc.open {
				assert.Equal(t, w.clock().Add(time.Minute), got.CircuitOpenUntil, "the run reached the threshold after the success: open for the cooldown")
			} else {
				assert.True(t, got.CircuitOpenUntil.IsZero(), "a success ended the run: closed, open until %v", got.CircuitOpenUntil)
			}
		})
	}
}

// aroundFirstFailure runs before and after (when set) around the record
// of the subscription's first failure, on the store it wraps: another
// instance's records, between the outcome and its follow-up's opening of
// the circuit.
type aroundFirstFailure struct {
	dispatch.Store
	before, after func(ctx context.Context, st dispatch.Store, tenant, id string) error
	n             atomic.Int32
}

func (s *aroundFirstFailure) SubscriptionFailed(ctx context.Context, tenant, id, url string, at time.Time, after time.Duration, reason string) (event.FailureRun, error) {
	first := s.n.Add(1) == 1
	if first && s.before != nil {
		if err := s.before(ctx, s.Store, tenant, id); err != nil {
			return event.FailureRun{}, err
		}
	}
	run, err := s.Store.SubscriptionFailed(ctx, tenant, id, url, at, after, reason)
	if err == nil && first && s.after != nil {
		err = s.after(ctx, s.Store, tenant, id)
	}
	return run, err
}

func (s *aroundFirstFailure) calls() int { return int(s.n.Load()) }
