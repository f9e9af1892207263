package dispatch_test

import (
	"cmp"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/webhook"
	"github.com/triggers-dev/triggers/internal/webhook/dispatch"
)

// laneReceiver is a TLS endpoint that answers 200 after delay and counts
// the requests in flight (and the most at once) and each request by
// webhook-id and path (the subscription).
type laneReceiver struct {
	srv      *httptest.Server
	inflight atomic.Int32
	max      atomic.Int32
	mu       sync.Mutex
	got      map[string]int // "<webhook-id> <path>" -> requests
}

func newLaneReceiver(t *testing.T, delay time.Duration) *laneReceiver {
	r := &laneReceiver{got: map[string]int{}}
	r.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		n := r.inflight.Add(1)
		defer r.inflight.Add(-1)
		for m := r.max.Load(); n > m && !r.max.CompareAndSwap(m, n); m = r.max.Load() {
		}
		time.Sleep(delay)
		r.mu.Lock()
		r.got[req.Header.Get(webhook.HeaderID)+" "+req.URL.Path]++
		r.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *laneReceiver) requests() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for k, v := range r.got {
		out[k] = v
	}
	return out
}

// A tenant whose endpoints answer successfully but slowly holds at most
// TenantSlowConcurrency requests at once, across every message handled
// at once: its other attempts are put off (tenant_busy), not failed, and
// made later, each exactly once. Another tenant's fast endpoint is
// delivered to meanwhile, while the slow tenant's backlog still waits.
func TestSlowTenantIsHeldToItsSlowLane(t *testing.T) {
	ctx := context.Background()
	const (
		slowSubs = 4
		burst    = 5
		lane     = 2
	)
	slowRcv := newLaneReceiver(t, 400*time.Millisecond)
	fastRcv := newLaneReceiver(t, 0)
	w := newWorld(t, &receiver{srv: slowRcv.srv}, func(c *dispatch.Config) {
		c.SlowLaneAfter = 250 * time.Millisecond
		c.TenantSlowConcurrency = lane
		c.SlowAfter = -1
	})
	subscribe := func(tenant string, rcv *laneReceiver, name string) event.Subscription {
		id, err := event.NewSubscriptionID(nil)
		require.NoError(t, err)
		sub := event.Subscription{ID: id, URL: rcv.srv.URL + "/" + name, EventTypes: []string{}, CreatedAt: event.FormatTime(w.clock()),
			Secrets: []string{webhook.NewSecret().Encode()}}
		require.NoError(t, w.st.CreateSubscription(ctx, tenant, sub))
		return sub
	}
	for i := range slowSubs {
		subscribe("tenant-a", slowRcv, "a"+string(rune('0'+i)))
	}
	subscribe("tenant-b", fastRcv, "b")
	w.advance(time.Second)

	// A first event: A's endpoints answer slowly and are marked slow.
	warm := w.event("tenant-a", "t")
	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", warm.ID))
	subs, err := w.st.ListSubscriptions(ctx, "tenant-a")
	require.NoError(t, err)
	for _, s := range subs {
		require.True(t, s.SlowUntil.After(w.clock()), "subscription %s answered after 400 ms and is not marked slow", s.URL)
	}
	slowRcv.max.Store(0)

	// A burst of A's events and B's events, every message at once (as
	// the function's invocations would take them).
	var aEvents, bEvents []event.Event
	for range burst {
		aEvents = append(aEvents, w.event("tenant-a", "t"))
		bEvents = append(bEvents, w.event("tenant-b", "t"))
	}
	var wg sync.WaitGroup
	for i := range burst {
		wg.Go(func() { assert.NoError(t, w.d.HandleEvent(ctx, "tenant-a", aEvents[i].ID)) })
		wg.Go(func() { assert.NoError(t, w.d.HandleEvent(ctx, "tenant-b", bEvents[i].ID)) })
	}
	wg.Wait()

	// B is delivered while A's backlog waits.
	for _, e := range bEvents {
		assert.Equal(t, event.Delivered, w.status("tenant-b", e.ID).Status, "B's event %s while A's backlog waits", e.ID)
	}
	waiting := 0
	for _, e := range aEvents {
		for _, a := range w.attempts("tenant-a", e.ID) {
			if a.Outcome == event.OutcomeScheduled {
				waiting++
			}
		}
	}
	require.Positive(t, waiting, "none of A's %d attempts was put off: the slow lane did not hold them", burst*slowSubs)
	assert.Contains(t, w.logs.String(), `"reason":"`+contract.DeferredTenantBusy+`"`)

	// Drain A's backlog on the virtual clock: every task due at once is
	// handled at once.
	type pending struct {
		task dispatch.Task
		due  time.Time
	}
	var queue []pending
	enqueue := func() {
		for _, q := range w.q.take() {
			queue = append(queue, pending{q.task, w.clock().Add(q.delay)})
		}
	}
	enqueue()
	// The put-off attempts are parked behind their subscriptions, as an
	// open circuit's are: the retry queue holds their subscriptions'
	// wakes, not a task per attempt (they were a task each, and a tenant
	// far above its lane's rate loaded the retry queue every tenant
	// shares with them: the slow-neighbour load scenario). Parkers at the
	// same instant may each send a wake (the wake marker's pending
	// window); once a wake is confirmed, later parkers send none.
	parked := 0
	for _, s := range subs {
		p, err := w.st.ListParked(ctx, "tenant-a", s.ID, 100)
		require.NoError(t, err)
		parked += len(p)
	}
	for _, p := range queue {
		assert.NotEmpty(t, p.task.Wake, "a retry-queue task that is no wake: %+v", p.task)
	}
	assert.Equal(t, waiting, parked, "every put-off attempt is parked")
	handled := 0
	for len(queue) > 0 {
		require.Less(t, handled, 20*burst*slowSubs, "the backlog does not drain")
		slices.SortStableFunc(queue, func(a, b pending) int { return a.due.Compare(b.due) })
		if d := queue[0].due.Sub(w.clock()); d > 0 {
			w.advance(d)
		}
		var due []pending
		for len(queue) > 0 && !queue[0].due.After(w.clock()) {
			due, queue = append(due, queue[0]), queue[1:]
		}
		handled += len(due)
		var wg sync.WaitGroup
		for _, p := range due {
			wg.Go(func() { assert.NoError(t, w.d.HandleTask(ctx, p.task)) })
		}
		wg.Wait()
		enqueue()
	}

	assert.LessOrEqual(t, slowRcv.max.Load(), int32(lane), "A's requests in flight at once, past its slow lane of %d", lane)
	got := slowRcv.requests()
	for _, e := range aEvents {
		assert.Equal(t, event.Delivered, w.status("tenant-a", e.ID).Status)
		assert.Zero(t, w.status("tenant-a", e.ID).RetryCount, "a put-off counted as a failure and retry")
		for _, a := range w.attempts("tenant-a", e.ID) {
			assert.Equal(t, 1, a.Number, "attempt %d of %s: a put-off took a retry from the schedule", a.Number, e.ID)
			assert.Equal(t, event.OutcomeDelivered, a.Outcome)
		}
		for i := range slowSubs {
			assert.Equal(t, 1, got[e.ID+" /a"+string(rune('0'+i))], "requests of %s to a%d", e.ID, i)
		}
	}
	for k, n := range got {
		assert.Equal(t, 1, n, "%s was sent %d times", k, n)
		assert.True(t, strings.HasPrefix(k, warm.ID) || slices.ContainsFunc(aEvents, func(e event.Event) bool { return strings.HasPrefix(k, e.ID) }), "unexpected request %s", k)
	}
	t.Logf("%d of A's attempts put off at first; %d retry-queue handlings to drain them", waiting, handled)
}

// Fast endpoints never touch the slow lane: without a slow answer no
// subscription is marked, and no slot is taken.
func TestFastEndpointsNeverTakeTheSlowLane(t *testing.T) {
	ctx := context.Background()
	rcv := newReceiver(t)
	counting := &laneCountingStore{}
	w := newWorld(t, rcv, func(c *dispatch.Config) {
		counting.Store = c.Store
		c.Store = counting
		c.SlowLaneAfter = time.Minute // no answer of this test is that slow
	})
	w.subscribe("tenant-a")
	for range 3 {
		e := w.event("tenant-a", "t")
		require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))
		assert.Equal(t, event.Delivered, w.status("tenant-a", e.ID).Status)
	}
	assert.Zero(t, counting.calls.Load(), "slow-lane store calls on the fast path")
}

// The slow lane turned off (SlowLaneAfter < 0) touches nothing: a slow
// answer marks nothing, and a subscription marked slow before (the lane
// was on then) takes no slot.
func TestSlowLaneOffTouchesNothing(t *testing.T) {
	ctx := context.Background()
	rcv := newReceiver(t)
	counting := &laneCountingStore{}
	w := newWorld(t, rcv, func(c *dispatch.Config) {
		counting.Store = c.Store
		c.Store = counting
		c.SlowLaneAfter = -1
	})
	sub, _ := w.subscribe("tenant-a")
	deliver := func() {
		e := w.event("tenant-a", "t")
		require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))
		assert.Equal(t, event.Delivered, w.status("tenant-a", e.ID).Status)
	}
	deliver()
	assert.Zero(t, counting.calls.Load(), "slow-lane store calls with the lane off, for an endpoint not marked slow")
	require.NoError(t, w.st.MarkSlow(ctx, "tenant-a", sub.ID, sub.URL, w.clock().Add(time.Hour)))
	deliver()
	assert.Zero(t, counting.calls.Load(), "slow-lane store calls with the lane off, for an endpoint marked slow before")
}

// A mark that has ended leaves the slow lane: the endpoint's attempts
// take no slot once its slow_until has passed.
func TestEndedSlowMarkTakesNoSlot(t *testing.T) {
	ctx := context.Background()
	rcv := newReceiver(t)
	counting := &laneCountingStore{}
	w := newWorld(t, rcv, func(c *dispatch.Config) {
		counting.Store = c.Store
		c.Store = counting
		c.SlowLaneAfter = time.Minute // no answer of this test is that slow
	})
	sub, _ := w.subscribe("tenant-a")
	require.NoError(t, w.st.MarkSlow(ctx, "tenant-a", sub.ID, sub.URL, w.clock().Add(time.Minute)))
	w.advance(time.Minute) // the mark ends now
	e := w.event("tenant-a", "t")
	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))
	assert.Equal(t, event.Delivered, w.status("tenant-a", e.ID).Status)
	assert.Zero(t, counting.calls.Load(), "slow-lane store calls for an endpoint whose slow mark has ended")
}

// A request that got no answer (timed out) does not mark its endpoint
// slow, however long it took: an endpoint that hangs is the circuit
// breaker's (SlowAfter, failures), and the slow lane is for endpoints
// that answer, slowly.
func TestUnansweredRequestDoesNotMarkSlow(t *testing.T) {
	ctx := context.Background()
	rcv := newReceiver(t)
	w := newWorld(t, rcv, func(c *dispatch.Config) {
		c.Client.Timeout = 300 * time.Millisecond
		c.SlowLaneAfter = 100 * time.Millisecond
		c.SlowAfter = -1
	})
	sub, _ := w.subscribe("tenant-a")
	release := make(chan struct{})
	rcv.mu.Lock()
	rcv.hold = release
	rcv.mu.Unlock()
	t.Cleanup(func() { close(release) })
	e := w.event("tenant-a", "t")
	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))
	as := w.attempts("tenant-a", e.ID)
	require.Len(t, as, 1)
	require.Equal(t, event.OutcomeFailed, as[0].Outcome, "the request timed out")
	require.Zero(t, as[0].StatusCode)
	got, err := w.st.GetSubscription(ctx, "tenant-a", sub.ID)
	require.NoError(t, err)
	assert.True(t, got.SlowUntil.IsZero(), "an unanswered request marked its endpoint slow until %v", got.SlowUntil)
}

// A steadily slow endpoint costs one MarkSlow write per half of
// SlowLaneFor, not one per request: a slow answer while the mark read
// with the subscription still has more than half of SlowLaneFor to run
// writes nothing; one with less moves the mark to SlowLaneFor from now.
func TestSlowMarkIsRenewedOncePerHalfWindow(t *testing.T) {
	ctx := context.Background()
	rcv := newLaneReceiver(t, 150*time.Millisecond)
	counting := &laneCountingStore{}
	w := newWorld(t, &receiver{srv: rcv.srv}, func(c *dispatch.Config) {
		counting.Store = c.Store
		c.Store = counting
		c.SlowLaneAfter = 100 * time.Millisecond
		c.SlowAfter = -1
	})
	sub, _ := w.subscribe("tenant-a")
	mark := func() time.Time {
		got, err := w.st.GetSubscription(ctx, "tenant-a", sub.ID)
		require.NoError(t, err)
		return got.SlowUntil
	}
	deliver := func() {
		e := w.event("tenant-a", "t")
		require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))
		require.Equal(t, event.Delivered, w.status("tenant-a", e.ID).Status)
	}
	deliver() // unmarked: the slow answer marks it
	first := w.clock().Add(dispatch.SlowLaneFor).Truncate(time.Millisecond)
	assert.EqualValues(t, 1, counting.marks.Load(), "MarkSlow calls after the first slow answer")
	assert.True(t, mark().Equal(first), "SlowUntil = %v, want %v", mark(), first)

	w.advance(dispatch.SlowLaneFor/2 - time.Second) // more than half of the mark left
	deliver()
	assert.EqualValues(t, 1, counting.marks.Load(), "MarkSlow calls while the mark had more than half of SlowLaneFor left")
	assert.True(t, mark().Equal(first), "SlowUntil = %v, want %v", mark(), first)

	w.advance(2 * time.Second) // less than half left
	deliver()
	assert.EqualValues(t, 2, counting.marks.Load(), "MarkSlow calls once the mark had less than half of SlowLaneFor left")
	assert.True(t, mark().Equal(w.clock().Add(dispatch.SlowLaneFor).Truncate(time.Millisecond)), "SlowUntil = %v, want SlowLaneFor from now", mark())
}

// The default SlowLaneAfter (Config's zero value) is DefaultSlowLaneAfter,
// 1 s: an answer under it marks nothing, one after it marks the endpoint
// slow.
func TestDefaultSlowLaneAfter(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		delay time.Duration
		marks int32
	}{{0, 0}, {dispatch.DefaultSlowLaneAfter + 100*time.Millisecond, 1}} {
		rcv := newLaneReceiver(t, tt.delay)
		counting := &laneCountingStore{}
		w := newWorld(t, &receiver{srv: rcv.srv}, func(c *dispatch.Config) {
			counting.Store = c.Store
			c.Store = counting
		})
		w.subscribe("tenant-a")
		e := w.event("tenant-a", "t")
		require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))
		require.Equal(t, event.Delivered, w.status("tenant-a", e.ID).Status)
		assert.Equal(t, tt.marks, counting.marks.Load(), "MarkSlow calls after an answer in %v with the default SlowLaneAfter", tt.delay)
	}
}

// laneCountingStore counts the slow lane's store calls (calls), and
// MarkSlow's alone (marks).
type laneCountingStore struct {
	dispatch.Store
	calls atomic.Int32
	marks atomic.Int32
}

func (s *laneCountingStore) MarkSlow(ctx context.Context, tenant, id, url string, until time.Time) error {
	s.calls.Add(1)
	s.marks.Add(1)
	return s.Store.MarkSlow(ctx, tenant, id, url, until)
}

func (s *laneCountingStore) AcquireSlowSlot(ctx context.Context, tenant, token string, now, until time.Time, limit int) (bool, error) {
	s.calls.Add(1)
	return s.Store.AcquireSlowSlot(ctx, tenant, token, now, until, limit)
}

func (s *laneCountingStore) ReleaseSlowSlot(ctx context.Context, tenant, token string) error {
	s.calls.Add(1)
	return s.Store.ReleaseSlowSlot(ctx, tenant, token)
}

// A slot whose holder died (taken, never released) keeps the tenant's
// slow lane full until its hold ends, the request timeout plus the store
// margin later, and the skew margin past that: an attempt meanwhile is
// put off (scheduled, tenant_busy), not failed, also once the hold has
// just ended; once the skew margin has passed too the next taker reclaims
// the slot and the attempt is made.
func TestSlowLaneSlotOfADeadHolderFreesAfterItsHold(t *testing.T) {
	ctx := context.Background()
	rcv := newReceiver(t)
	w := newWorld(t, rcv, func(c *dispatch.Config) { c.TenantSlowConcurrency = 1 })
	sub, _ := w.subscribe("tenant-a")
	require.NoError(t, w.st.MarkSlow(ctx, "tenant-a", sub.ID, sub.URL, w.clock().Add(time.Hour)))
	timeout := webhook.DefaultTimeout
	ok, err := w.st.AcquireSlowSlot(ctx, "tenant-a", "dead-holder", w.clock(), w.clock().Add(timeout+contract.WebhookStoreMargin), 1)
	require.NoError(t, err)
	require.True(t, ok)

	e := w.event("tenant-a", "t")
	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))
	assert.Empty(t, rcv.requests(), "a request while the dead holder's slot is held")
	as := w.attempts("tenant-a", e.ID)
	require.Len(t, as, 1)
	assert.Equal(t, event.OutcomeScheduled, as[0].Outcome, "put off, not failed")
	assert.Equal(t, event.Received, w.status("tenant-a", e.ID).Status)
	assert.Contains(t, w.logs.String(), `"reason":"`+contract.DeferredTenantBusy+`"`)

	// Its task comes back while the hold runs: put off again, longer.
	tasks := w.q.take()
	require.Len(t, tasks, 1)
	first := tasks[0].delay
	w.advance(first)
	require.NoError(t, w.d.HandleTask(ctx, tasks[0].task))
	assert.Empty(t, rcv.requests())
	tasks = w.q.take()
	require.Len(t, tasks, 1)
	assert.Greater(t, tasks[0].delay, first, "the second wait is not longer than the first")

	// Its hold has just ended (the skew margin has not passed since): put
	// off again.
	w.advance(timeout + contract.WebhookStoreMargin - first)
	tasks[0].task.DueAt = w.clock()
	require.NoError(t, w.d.HandleTask(ctx, tasks[0].task))
	assert.Empty(t, rcv.requests(), "the dead holder's slot was reclaimed as its hold ended, within the skew margin")
	tasks = w.q.take()
	require.Len(t, tasks, 1)

	// After the hold and the skew margin: the slot is reclaimed, the
	// attempt made, once.
	w.advance(event.HoldSkewMargin)
	tasks[0].task.DueAt = w.clock()
	require.NoError(t, w.d.HandleTask(ctx, tasks[0].task))
	require.Len(t, rcv.requests(), 1)
	as = w.attempts("tenant-a", e.ID)
	require.Len(t, as, 1)
	assert.Equal(t, event.OutcomeDelivered, as[0].Outcome)
	assert.Equal(t, 1, as[0].Number, "the put-offs took no retry from the schedule")
	assert.Equal(t, event.Delivered, w.status("tenant-a", e.ID).Status)
	assert.Zero(t, w.status("tenant-a", e.ID).RetryCount)
	// Its own slot was given back: the lane takes another holder.
	ok, err = w.st.AcquireSlowSlot(ctx, "tenant-a", "next", w.clock(), w.clock().Add(time.Minute), 1)
	require.NoError(t, err)
	assert.True(t, ok, "the attempt's slot was not released")
}

// lateSecrets is a Secrets whose Open takes late (the clock's offset
// moved on by late, as a KMS call that was slow) the first time; the
// others open at once.
type lateSecrets struct {
	late    time.Duration
	advance func(time.Duration)
	done    atomic.Bool
}

func (s *lateSecrets) Open(_ context.Context, _, _, stored string) (webhook.Secret, error) {
	if s.done.CompareAndSwap(false, true) {
		s.advance(s.late)
	}
	return webhook.ParseSecret(stored)
}

// An attempt whose steps before its request (opening the secrets, the
// claim, the move to retrying) took longer than the store margin started
// its request with less than the request timeout left of its slow-lane
// hold: the request ran past the hold's end, another attempt reclaimed
// the slot meanwhile, and the tenant had more requests in flight than its
// lane (found by review). The request is now bounded by the hold: it
// ends (failed, retried as any timeout) before its slot can be
// reclaimed. On the real clock (plus an offset the slow secrets move on):
// the bound is a deadline.
func TestSlowLaneRequestNeverOutlivesItsHold(t *testing.T) {
	most, first := holdRace(t, func(c *dispatch.Config) { c.TenantSlowConcurrency = 1 },
		func(w *world, sub event.Subscription, now time.Time) {
			require.NoError(t, w.st.MarkSlow(context.Background(), "tenant-a", sub.ID, sub.URL, now.Add(time.Hour)))
		})
	assert.LessOrEqual(t, most, int32(1), "requests of tenant-a in flight at once, past its slow lane of 1: the first ran past its hold")
	if first.Outcome == event.OutcomeFailed {
		assert.Contains(t, first.Error, "hold", "the cut request's error says why")
		assert.NotEmpty(t, first.NextAttemptAt, "the cut request is retried")
	}
}

// The same for a half-open circuit's probe (the slow lane off): its hold
// was taken before the secrets, the claim and the move to retrying too,
// so with those slow a second probe was made while the first was in
// flight (found by helper 62's review). The probe's request is bounded by
// its hold as well: one probe at a time.
func TestProbeRequestNeverOutlivesItsHold(t *testing.T) {
	most, first := holdRace(t, func(c *dispatch.Config) { c.SlowLaneAfter = -1 },
		func(w *world, sub event.Subscription, now time.Time) {
			// Opened for a minute, which has passed: half-open.
			_, err := w.st.OpenCircuit(context.Background(), "tenant-a", sub.ID, "", now.Add(-61*time.Second), now.Add(-time.Second), time.Minute)
			require.NoError(t, err)
		})
	assert.LessOrEqual(t, most, int32(1), "probes in flight at once: the first ran past its hold")
	if first.Outcome == event.OutcomeFailed {
		assert.Contains(t, first.Error, "hold", "the cut request's error says why")
	}
}

// blockingEndpoint is a TLS endpoint that signals each request's arrival
// on arrived and answers 200 only once the test ends (or its client goes
// first).
func blockingEndpoint(t *testing.T) (rcv *receiver, arrived chan struct{}) {
	arrived, release := make(chan struct{}, 10), make(chan struct{})
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.ReadAll(req.Body)
		arrived <- struct{}{}
		select {
		case <-release:
		case <-req.Context().Done():
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	return &receiver{srv: srv}, arrived
}

// With a Client that has no Timeout of its own, the request of an
// attempt holding a slow-lane slot is bounded by the hold alone (the
// store margin, 3 s, from the slot's taking): it ends with the hold,
// failed and retried, rather than hang on with the slot reclaimable.
func TestRequestOfAClientWithoutTimeoutEndsWithItsHold(t *testing.T) {
	ctx := context.Background()
	rcv, _ := blockingEndpoint(t)
	w := newWorld(t, rcv, func(c *dispatch.Config) {
		c.Client.Timeout = 0
		c.TenantSlowConcurrency = 1
		c.SlowAfter = -1
	})
	sub, _ := w.subscribe("tenant-a")
	require.NoError(t, w.st.MarkSlow(ctx, "tenant-a", sub.ID, sub.URL, w.clock().Add(time.Hour)))
	e := w.event("tenant-a", "t")
	done := make(chan error, 1)
	go func() { done <- w.d.HandleEvent(ctx, "tenant-a", e.ID) }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(3 * contract.WebhookStoreMargin):
		t.Fatalf("the request was still in flight %v after its slot's hold of %v began", 3*contract.WebhookStoreMargin, contract.WebhookStoreMargin)
	}
	as := w.attempts("tenant-a", e.ID)
	require.Len(t, as, 1)
	assert.Equal(t, event.OutcomeFailed, as[0].Outcome)
	assert.Contains(t, as[0].Error, "hold", "the cut request's error says why")
	assert.NotEmpty(t, as[0].NextAttemptAt, "the cut request is retried")
}

// slowLaneFree reports whether tenant-a's slow lane of one slot is free
// at w's clock: it takes the slot and gives it back.
func slowLaneFree(t *testing.T, w *world) bool {
	t.Helper()
	ctx := context.Background()
	ok, err := w.st.AcquireSlowSlot(ctx, "tenant-a", "lane-check", w.clock(), w.clock().Add(time.Minute), 1)
	require.NoError(t, err)
	if ok {
		require.NoError(t, w.st.ReleaseSlowSlot(ctx, "tenant-a", "lane-check"))
	}
	return ok
}

// slowWorld is a world whose tenant-a has one subscription, marked slow
// for an hour, and a slow lane of one slot.
func slowWorld(t *testing.T, rcv *receiver, mutate ...func(*dispatch.Config)) (*world, event.Subscription) {
	t.Helper()
	w := newWorld(t, rcv, append([]func(*dispatch.Config){func(c *dispatch.Config) { c.TenantSlowConcurrency = 1 }}, mutate...)...)
	sub, _ := w.subscribe("tenant-a")
	require.NoError(t, w.st.MarkSlow(context.Background(), "tenant-a", sub.ID, sub.URL, w.clock().Add(time.Hour)))
	return w, sub
}

// An attempt that takes its slot and then has too little of its
// invocation left for the request (errNoTime) gives the slot back at
// once: the slot is released on every way out before the request, not
// held until its hold ends.
func TestSlowLaneSlotGoesBackWhenTheAttemptCannotStart(t *testing.T) {
	rcv := newReceiver(t)
	w, _ := slowWorld(t, rcv)
	e := w.event("tenant-a", "t")
	// Less than the request timeout plus the store margin left.
	ctx, cancel := context.WithTimeout(context.Background(), webhook.DefaultTimeout)
	defer cancel()
	require.Error(t, w.d.HandleEvent(ctx, "tenant-a", e.ID), "the attempt had no time to start")
	assert.Empty(t, rcv.requests())
	assert.True(t, slowLaneFree(t, w), "the attempt that could not start kept its slow-lane slot")
}

// A slot is given back even when the invocation's context ends during
// the request (a stop, the deadline): the release does not use the ended
// context, else it fails and the slot stays held until its hold ends.
func TestSlowLaneSlotGoesBackWhenTheContextEnds(t *testing.T) {
	rcv, arrived := blockingEndpoint(t)
	w, _ := slowWorld(t, rcv, func(c *dispatch.Config) { c.SlowAfter = -1 })
	e := w.event("tenant-a", "t")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- w.d.HandleEvent(ctx, "tenant-a", e.ID) }()
	select {
	case <-arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("the request never arrived")
	}
	require.False(t, slowLaneFree(t, w), "the request in flight holds no slot")
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("HandleEvent did not return after its context ended")
	}
	assert.True(t, slowLaneFree(t, w), "the slot of the attempt whose context ended is still held")
}

// finishGate holds FinishAttempt (the recording of an attempt's outcome)
// until release is closed, after signalling entered.
type finishGate struct {
	dispatch.Store
	entered chan struct{}
	release chan struct{}
}

func (s *finishGate) FinishAttempt(ctx context.Context, tenant, eventID string, a event.Attempt, owner string) error {
	s.entered <- struct{}{}
	<-s.release
	return s.Store.FinishAttempt(ctx, tenant, eventID, a, owner)
}

// The slot is given back once the request is answered, before the
// attempt's store writes (its outcome, its follow-ups): a slow store does
// not keep the tenant's slow lane held.
func TestSlowLaneSlotGoesBackOnceTheRequestIsAnswered(t *testing.T) {
	ctx := context.Background()
	gate := &finishGate{entered: make(chan struct{}, 1), release: make(chan struct{})}
	w, _ := slowWorld(t, newReceiver(t), func(c *dispatch.Config) {
		gate.Store = c.Store
		c.Store = gate
	})
	e := w.event("tenant-a", "t")
	done := make(chan error, 1)
	go func() { done <- w.d.HandleEvent(ctx, "tenant-a", e.ID) }()
	select {
	case <-gate.entered:
	case <-time.After(10 * time.Second):
		close(gate.release)
		t.Fatal("the attempt's outcome was never recorded")
	}
	free := slowLaneFree(t, w)
	close(gate.release)
	require.NoError(t, <-done)
	assert.True(t, free, "the slot was still held while the answered attempt was being recorded")
	assert.Equal(t, event.Delivered, w.status("tenant-a", e.ID).Status)
}

// probeRacer lets another instance take the probe just before each of the
// dispatcher's AcquireProbe calls: it wins the probe between the
// subscription's read and the attempt's asking. held lists the ends of
// the holds it took.
type probeRacer struct {
	dispatch.Store
	mu    sync.Mutex
	holds []time.Time
}

func (s *probeRacer) AcquireProbe(ctx context.Context, tenant, id string, now, until time.Time) (bool, error) {
	ok, err := s.Store.AcquireProbe(ctx, tenant, id, now, until)
	if err != nil {
		return false, err
	}
	if ok {
		s.mu.Lock()
		s.holds = append(s.holds, until)
		s.mu.Unlock()
	}
	return s.Store.AcquireProbe(ctx, tenant, id, now, until)
}

func (s *probeRacer) held() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.holds)
}

// A slow endpoint's attempt while its circuit is half-open takes a slot
// first, then asks for the probe; when another attempt holds the probe it
// is put off (probe_busy) and gives the slot back at once, not when the
// slot's hold ends.
func TestSlowLaneSlotGoesBackWhenTheProbeIsHeld(t *testing.T) {
	ctx := context.Background()
	rcv := newReceiver(t)
	w, sub := slowWorld(t, rcv, func(c *dispatch.Config) { c.Store = &probeRacer{Store: c.Store} })
	_, err := w.st.OpenCircuit(ctx, "tenant-a", sub.ID, "", w.clock().Add(-time.Minute), w.clock(), time.Minute) // half-open now
	require.NoError(t, err)
	e := w.event("tenant-a", "t")
	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))
	assert.Empty(t, rcv.requests(), "sent while another attempt holds the probe")
	as := w.attempts("tenant-a", e.ID)
	require.Len(t, as, 1)
	assert.Equal(t, event.OutcomeScheduled, as[0].Outcome)
	assert.Contains(t, w.logs.String(), `"reason":"`+contract.DeferredProbeBusy+`"`)
	assert.True(t, slowLaneFree(t, w), "the attempt put off by the held probe kept its slow-lane slot")
}

// An attempt put off by a full lane waits about a second, then its
// subscription's wakes that find the lane full wait double each time
// (Task.Refused), at most MaxSlowLaneWait, jittered between half of it and
// all of it (Rand gives 0.5 here: three quarters of it). Each wait is
// the subscription's wake, due when the wait ends.
func TestSlowLaneWaitDoublesUpToItsBound(t *testing.T) {
	ctx := context.Background()
	rcv := newReceiver(t)
	w, _ := slowWorld(t, rcv)
	ok, err := w.st.AcquireSlowSlot(ctx, "tenant-a", "long-holder", w.clock(), w.clock().Add(24*time.Hour), 1)
	require.NoError(t, err)
	require.True(t, ok)
	e := w.event("tenant-a", "t")
	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))
	var waits []time.Duration
	for i := range 8 {
		tasks := w.q.take()
		require.Len(t, tasks, 1)
		require.NotEmpty(t, tasks[0].task.Wake, "the put-off attempt's wake")
		assert.Equal(t, i, tasks[0].task.Refused, "wakes in a row that found the lane full before this one")
		waits = append(waits, tasks[0].delay)
		w.advance(tasks[0].delay)
		require.NoError(t, w.d.HandleTask(ctx, tasks[0].task))
	}
	ms := time.Millisecond
	want := []time.Duration{750 * ms, 1500 * ms, 3 * time.Second, 6 * time.Second, 12 * time.Second,
		dispatch.MaxSlowLaneWait * 3 / 4, dispatch.MaxSlowLaneWait * 3 / 4, dispatch.MaxSlowLaneWait * 3 / 4}
	assert.Equal(t, want, waits, "the waits of an attempt put off by a full lane, then of 7 wakes that found it full")
	assert.Empty(t, rcv.requests())
	as := w.attempts("tenant-a", e.ID)
	require.Len(t, as, 1)
	assert.Equal(t, 1, as[0].Deferrals, "put off once by its event; a wake that finds the lane full makes nothing, so puts nothing off again")
}

// New refuses a negative TenantSlowConcurrency, naming it (0 takes the
// default).
func TestNewRefusesANegativeTenantSlowConcurrency(t *testing.T) {
	_, err := dispatch.New(dispatch.Config{Store: &laneCountingStore{}, Queue: &recordingQueue{}, TenantSlowConcurrency: -1})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Config.TenantSlowConcurrency -1 is negative")
	_, err = dispatch.New(dispatch.Config{Store: &laneCountingStore{}, Queue: &recordingQueue{}})
	assert.NoError(t, err, "the zero value takes the default")
}

// holdRace makes two events' attempts to one subscription of tenant-a,
// the second 4 s into the first's request, whose secrets took 10 s of its
// 13 s hold (the request timeout, 10 s, + the store margin) to open, so
// that its hold has ended by the clock (the real one plus an offset the
// slow secrets move on) while its request is in flight, and the second
// comes the skew margin (event.HoldSkewMargin) later still by the clock,
// so that it may reclaim the first's hold. mutate sets the dispatcher up,
// arm the subscription (what the hold is of). It returns the most
// requests in flight at once and the first event's attempt.
func holdRace(t *testing.T, mutate func(*dispatch.Config), arm func(w *world, sub event.Subscription, now time.Time)) (int32, event.Attempt) {
	t.Helper()
	ctx := context.Background()
	const timeout = 10 * time.Second
	var inflight, most, seen atomic.Int32
	answer := make(chan struct{})
	var answerOnce sync.Once
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.ReadAll(req.Body) // read: the server then sees its client go
		n := inflight.Add(1)
		defer inflight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		if seen.Add(1) == 1 {
			select { // the first answers when told to, or ends with its client
			case <-answer:
			case <-req.Context().Done():
				return
			}
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { answerOnce.Do(func() { close(answer) }) })
	var mu sync.Mutex
	var offset time.Duration
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return time.Now().Add(offset)
	}
	advance := func(d time.Duration) {
		mu.Lock()
		offset += d
		mu.Unlock()
	}
	// Opening the secrets takes 10 s of the hold's 10 s + 3 s: 3 s are
	// left for the claim, the move to retrying, the TLS handshake and the
	// request. (With 1 s left, a busy machine could spend it before the
	// request reached the endpoint, and the test failed as if the request
	// had never started.)
	secrets := &lateSecrets{late: timeout + contract.WebhookStoreMargin - 3*time.Second, advance: advance}
	w := newWorld(t, &receiver{srv: srv}, func(c *dispatch.Config) {
		c.Now = clock
		c.Client.Timeout = timeout
		c.SlowAfter = -1
		c.Secrets = secrets
		mutate(c)
	})
	w.clock = clock
	sub, _ := w.subscribe("tenant-a")
	arm(w, sub, clock())

	first, second := w.event("tenant-a", "t"), w.event("tenant-a", "t")
	done := make(chan error, 1)
	go func() { done <- w.d.HandleEvent(ctx, "tenant-a", first.ID) }()
	require.Eventually(t, func() bool { return seen.Load() >= 1 }, 30*time.Second, 5*time.Millisecond, "the first request never started")

	// 4 s into the first request (within its 10 s timeout): its hold
	// (taken before the slow secrets) has ended by the clock, and the
	// clock moves on by the skew margin, past which the second may
	// reclaim the hold. (Without that move the margin alone kept the
	// second off, and neither test saw its request outlive its hold: a
	// mutant that bounded no request by its hold lived, 2026-11-27.)
	time.Sleep(4 * time.Second)
	advance(event.HoldSkewMargin)
	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", second.ID))
	answerOnce.Do(func() { close(answer) })
	require.NoError(t, <-done)
	as := w.attempts("tenant-a", first.ID)
	require.Len(t, as, 1)
	return most.Load(), as[0]
}

// A PATCH of a subscription's url to another server starts its breaker
// closed, and with it the wake marker of the old circuit's wake (due when
// that circuit would have closed, up to MaxBreakerCooldown later): an
// attempt the slow lane puts off afterwards is parked with a wake of its
// own, due within MaxSlowLaneWait, not left behind the old wake. Before,
// the PATCH kept the marker, so the put-off (parked since 9c65b2d, a
// task of its own before) sent no wake and waited for the old one: an
// hour and more after a few failed probes.
func TestPutOffAfterURLPatchIsNotLeftBehindTheOldCircuitsWake(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, newReceiver(t), func(c *dispatch.Config) {
		c.SlowLaneAfter = 250 * time.Millisecond
		c.TenantSlowConcurrency = 1
		c.SlowAfter = -1
	})
	sub, _ := w.subscribe("tenant-a")
	_, err := w.st.OpenCircuit(ctx, "tenant-a", sub.ID, "", w.clock(), w.clock().Add(time.Hour), time.Hour)
	require.NoError(t, err)
	old := w.event("tenant-a", "t")
	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", old.ID))
	var oldWakes int
	for _, q := range w.q.take() {
		if q.task.Wake != "" {
			oldWakes++
			require.True(t, q.task.DueAt.After(w.clock().Add(time.Hour-time.Second)), "the open circuit's wake is due when it closes: %+v", q.task)
		}
	}
	require.Equal(t, 1, oldWakes, "the attempt put off by the open circuit queued its wake")

	// The tenant moves the subscription to another server; the new one
	// answers slowly and its tenant's one slow-lane slot is taken.
	moved := newReceiver(t).srv.URL + "/hooks"
	_, err = w.st.UpdateSubscription(ctx, "tenant-a", sub.ID, event.SubscriptionPatch{URL: &moved}, w.clock())
	require.NoError(t, err)
	require.NoError(t, w.st.MarkSlow(ctx, "tenant-a", sub.ID, moved, w.clock().Add(dispatch.SlowLaneFor)))
	took, err := w.st.AcquireSlowSlot(ctx, "tenant-a", "another-request", w.clock(), w.clock().Add(time.Minute), 1)
	require.NoError(t, err)
	require.True(t, took)

	e := w.event("tenant-a", "t")
	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))
	a := w.attempts("tenant-a", e.ID)
	require.Len(t, a, 1)
	require.Equal(t, event.OutcomeScheduled, a[0].Outcome, "the full lane put the attempt off")
	assert.Contains(t, w.logs.String(), `"reason":"`+contract.DeferredTenantBusy+`"`)
	var wakes []dispatch.Task
	for _, q := range w.q.take() {
		if q.task.Wake != "" {
			wakes = append(wakes, q.task)
		}
	}
	require.Len(t, wakes, 1, "the put-off attempt is parked with no wake of its own: it waits for the old circuit's, due in an hour")
	assert.False(t, wakes[0].DueAt.After(w.clock().Add(dispatch.MaxSlowLaneWait)), "its wake is due within MaxSlowLaneWait: %+v", wakes[0])

	// That wake makes the parked attempts once the lane has a slot: one
	// per wake with the lane's one slot, the next wake queued at once.
	require.NoError(t, w.st.ReleaseSlowSlot(ctx, "tenant-a", "another-request"))
	w.advance(dispatch.MaxSlowLaneWait)
	require.NoError(t, w.d.HandleTask(ctx, wakes[0]))
	next := w.q.take()
	require.Len(t, next, 1, "the wake that made one attempt queued the next")
	assert.Zero(t, next[0].delay, "the next wake is due at once: the slot is free again")
	require.NoError(t, w.d.HandleTask(ctx, next[0].task))
	assert.Empty(t, w.q.take(), "nothing left parked")
	assert.Equal(t, event.Delivered, w.status("tenant-a", e.ID).Status)
	assert.Equal(t, event.Delivered, w.status("tenant-a", old.ID).Status)
}

// A wake of a subscription in its tenant's slow lane (circuit closed)
// takes the lane's free slots one after the other and stops at the first
// refused: it makes as many parked attempts as it got slots, at once, and
// leaves the rest parked, none of them put off again. Before, it made the
// first attempt alone and then the rest at once, each asking the lane:
// one subscription's drain rate was halved, and every attempt refused was
// put off and parked again (a write, a parking and a wake's claim each).
// A wake that finds the lane full makes nothing and comes back later
// each time it is refused again (as an attempt put off again would);
// one that made attempts comes back at once, its slots free again.
func TestWakeFillsTheLanesFreeSlotsAndStopsAtTheFirstRefused(t *testing.T) {
	ctx := context.Background()
	rcv := newLaneReceiver(t, 100*time.Millisecond)
	w := newWorld(t, &receiver{srv: rcv.srv}, func(c *dispatch.Config) {
		c.TenantSlowConcurrency = 3
		c.SlowAfter = -1
	})
	sub, _ := w.subscribe("tenant-a")
	require.NoError(t, w.st.MarkSlow(ctx, "tenant-a", sub.ID, sub.URL, w.clock().Add(time.Hour)))
	hold := func(holders ...string) {
		for _, h := range holders {
			ok, err := w.st.AcquireSlowSlot(ctx, "tenant-a", h, w.clock(), w.clock().Add(time.Hour), 3)
			require.NoError(t, err)
			require.True(t, ok, "holder %s", h)
		}
	}
	release := func(holders ...string) {
		for _, h := range holders {
			require.NoError(t, w.st.ReleaseSlowSlot(ctx, "tenant-a", h))
		}
	}
	// Put off by the full lane or behind the wake the first put-off queued.
	putOffs := func() int {
		return strings.Count(w.logs.String(), `"reason":"`+contract.DeferredTenantBusy+`"`) +
			strings.Count(w.logs.String(), `"reason":"`+contract.DeferredBehindWake+`"`)
	}
	wakes := func() []queued {
		var out []queued
		for _, q := range w.q.take() {
			require.NotEmpty(t, q.task.Wake, "only wakes are queued: %+v", q.task)
			out = append(out, q)
		}
		return out
	}

	// The lane is full: five events' attempts are put off and parked
	// behind one wake.
	hold("h1", "h2", "h3")
	var ids []string
	for range 5 {
		e := w.event("tenant-a", "t")
		ids = append(ids, e.ID)
		require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))
	}
	require.Equal(t, 5, putOffs())
	q := wakes()
	require.Len(t, q, 1)

	// Two slots free: the wake makes two attempts, at once, and puts
	// none off.
	release("h1", "h2")
	w.advance(q[0].delay)
	require.NoError(t, w.d.HandleTask(ctx, q[0].task))
	assert.Len(t, rcv.requests(), 2, "requests made: as many as the lane had slots free")
	assert.EqualValues(t, 2, rcv.max.Load(), "the two went at once")
	assert.Equal(t, 5, putOffs(), "attempts put off again by the wake")
	q = wakes()
	require.Len(t, q, 1, "the next wake, for the three left parked")
	assert.Zero(t, q[0].delay, "due at once: the wake's slots are free again")
	assert.Zero(t, q[0].task.Refused)

	// The lane is full again (other subscriptions' attempts took it): the wakes make
	// nothing, put nothing off, and come back ever later.
	hold("h4", "h5")
	var delays []time.Duration
	for refused := 1; refused <= 2; refused++ {
		require.NoError(t, w.d.HandleTask(ctx, q[0].task))
		assert.Len(t, rcv.requests(), 2, "no request while the lane is full")
		assert.Equal(t, 5, putOffs())
		q = wakes()
		require.Len(t, q, 1)
		assert.Equal(t, refused, q[0].task.Refused)
		delays = append(delays, q[0].delay)
		w.advance(q[0].delay)
	}
	assert.Greater(t, delays[1], delays[0], "a wake refused again waits longer")
	assert.LessOrEqual(t, delays[1], dispatch.MaxSlowLaneWait)

	// The lane frees: the rest are made, each once, under attempt 1.
	release("h3", "h4", "h5")
	require.NoError(t, w.d.HandleTask(ctx, q[0].task))
	assert.Empty(t, w.q.take(), "nothing left parked, no wake")
	assert.Len(t, rcv.requests(), 5)
	for k, n := range rcv.requests() {
		assert.Equal(t, 1, n, "requests of %s", k)
	}
	for _, id := range ids {
		assert.Equal(t, event.Delivered, w.status("tenant-a", id).Status)
		as := w.attempts("tenant-a", id)
		require.Len(t, as, 1)
		assert.Equal(t, 1, as[0].Number)
	}
	ok, err := w.st.AcquireSlowSlot(ctx, "tenant-a", "after", w.clock(), w.clock().Add(time.Minute), 3)
	require.NoError(t, err)
	assert.True(t, ok, "the wakes gave their slots back")
}

// A wake of a subscription in the slow lane whose circuit is half-open
// sends its probe alone, as any half-open wake: the lane's free slots
// are not filled at once (each of those attempts would find the probe
// held and be put off again). A failed probe opens the circuit again and
// leaves the rest parked, none put off.
func TestHalfOpenSlowLaneWakeSendsItsProbeAlone(t *testing.T) {
	ctx := context.Background()
	rcv := newReceiver(t, http.StatusInternalServerError)
	w := newWorld(t, rcv, func(c *dispatch.Config) {
		c.TenantSlowConcurrency = 3
		c.SlowAfter = -1
		c.BreakerThreshold = 1
		c.BreakerCooldown = time.Minute
	})
	sub, _ := w.subscribe("tenant-a")
	require.NoError(t, w.st.MarkSlow(ctx, "tenant-a", sub.ID, sub.URL, w.clock().Add(time.Hour)))
	_, err := w.st.OpenCircuit(ctx, "tenant-a", sub.ID, "", w.clock(), w.clock().Add(time.Minute), time.Minute)
	require.NoError(t, err)
	for range 3 {
		require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", w.event("tenant-a", "t").ID))
	}
	var wake []queued
	for _, q := range w.q.take() {
		if q.task.Wake != "" {
			wake = append(wake, q)
		}
	}
	require.Len(t, wake, 1, "the open circuit's one wake")
	before := w.logs.String()

	w.advance(wake[0].delay)
	require.NoError(t, w.d.HandleTask(ctx, wake[0].task))
	require.Len(t, rcv.requests(), 1, "the probe alone")
	after := strings.TrimPrefix(w.logs.String(), before)
	assert.NotContains(t, after, `"reason":"`+contract.DeferredProbeBusy+`"`, "attempts put off behind the wake's own probe")
	assert.NotContains(t, after, `"reason":"`+contract.DeferredTenantBusy+`"`)
	assert.NotContains(t, after, `"reason":"`+contract.DeferredBehindWake+`"`, "the wake's attempts queued behind a wake")
	got, err := w.st.GetSubscription(ctx, "tenant-a", sub.ID)
	require.NoError(t, err)
	assert.True(t, got.CircuitOpenUntil.After(w.clock()), "the failed probe opened the circuit again")
	parked, err := w.st.ListParked(ctx, "tenant-a", sub.ID, 10)
	require.NoError(t, err)
	assert.Len(t, parked, 2, "the rest stay parked")
}

// slowAcquireStore is a store whose AcquireSlowSlot takes slow by the
// clock (advance moves it on), recording each call's now and until.
type slowAcquireStore struct {
	dispatch.Store
	slow    time.Duration
	advance func(time.Duration)
	mu      sync.Mutex
	holds   [][2]time.Time // now, until
}

func (s *slowAcquireStore) AcquireSlowSlot(ctx context.Context, tenant, token string, now, until time.Time, limit int) (bool, error) {
	s.advance(s.slow)
	s.mu.Lock()
	s.holds = append(s.holds, [2]time.Time{now, until})
	s.mu.Unlock()
	return s.Store.AcquireSlowSlot(ctx, tenant, token, now, until, limit)
}

// A wake that takes several slots one after the other holds each from
// when it is taken, for the request timeout plus the store margin: the
// wake's steps before a slot (the slots before it, slow under throttling)
// do not shorten the time its attempt has before its request is cut at
// the hold's end (found by review: every slot's hold ran from the wake's
// start).
func TestWakeHoldsEachSlotFromItsTaking(t *testing.T) {
	ctx := context.Background()
	rcv := newReceiver(t)
	st := &slowAcquireStore{slow: time.Second}
	w := newWorld(t, rcv, func(c *dispatch.Config) {
		c.TenantSlowConcurrency = 3
		c.SlowAfter = -1
		st.Store = c.Store
		c.Store = st
	})
	st.advance = w.advance
	d := w.d
	sub, _ := w.subscribe("tenant-a")
	require.NoError(t, w.st.MarkSlow(ctx, "tenant-a", sub.ID, sub.URL, w.clock().Add(time.Hour)))
	ok, err := w.st.AcquireSlowSlot(ctx, "tenant-a", "full", w.clock(), w.clock().Add(time.Hour), 3)
	require.NoError(t, err)
	require.True(t, ok)
	for _, h := range []string{"full2", "full3"} {
		ok, err := w.st.AcquireSlowSlot(ctx, "tenant-a", h, w.clock(), w.clock().Add(time.Hour), 3)
		require.NoError(t, err)
		require.True(t, ok)
	}
	for range 3 {
		require.NoError(t, d.HandleEvent(ctx, "tenant-a", w.event("tenant-a", "t").ID))
	}
	var wake []queued
	for _, q := range w.q.take() {
		if q.task.Wake != "" {
			wake = append(wake, q)
		}
	}
	require.Len(t, wake, 1)
	for _, h := range []string{"full", "full2", "full3"} {
		require.NoError(t, w.st.ReleaseSlowSlot(ctx, "tenant-a", h))
	}
	w.advance(wake[0].delay)
	st.mu.Lock()
	st.holds = nil
	st.mu.Unlock()
	require.NoError(t, d.HandleTask(ctx, wake[0].task))
	require.Len(t, rcv.requests(), 3, "the wake made the three parked attempts")
	st.mu.Lock()
	defer st.mu.Unlock()
	require.GreaterOrEqual(t, len(st.holds), 3)
	for i, h := range st.holds[:3] {
		assert.Equal(t, webhook.DefaultTimeout+contract.WebhookStoreMargin, h[1].Sub(h[0]), "slot %d's hold", i)
		if i > 0 {
			assert.Equal(t, time.Second, h[0].Sub(st.holds[i-1][0]), "slot %d is taken a second (of the slow store) after the one before it, and held from then", i)
		}
	}
}

// While a subscription's wake is queued behind its full slow lane, a new
// attempt to it joins the parked attempts instead of asking the lane for
// a slot, also once the lane has a slot free: the wake then makes them
// oldest event first, the new one last. Before, the new attempt took the
// slot that freed, ahead of the attempts put off before it, so a
// saturated lane served the newest attempts first.
func TestNewAttemptQueuesBehindTheParkedOnes(t *testing.T) {
	ctx := context.Background()
	rcv := newReceiver(t)
	counting := &laneCountingStore{}
	m := &metrics{}
	w, sub := slowWorld(t, rcv, func(c *dispatch.Config) {
		counting.Store = c.Store
		c.Store = counting
		c.SlowAfter = -1
		c.Metrics = m
	})
	reasons := func() []string {
		m.mu.Lock()
		defer m.mu.Unlock()
		return slices.Clone(m.deferred)
	}
	busy := "tenant-a/" + sub.ID + "/" + contract.DeferredTenantBusy
	behind := "tenant-a/" + sub.ID + "/" + contract.DeferredBehindWake

	// Another holder fills the lane of one slot: two events' attempts are
	// put off and parked behind one wake (the first refused by the lane,
	// the second behind the wake the first queued).
	ok, err := w.st.AcquireSlowSlot(ctx, "tenant-a", "other", w.clock(), w.clock().Add(time.Hour), 1)
	require.NoError(t, err)
	require.True(t, ok)
	var ids []string
	for range 2 {
		e := w.event("tenant-a", "t")
		ids = append(ids, e.ID)
		require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))
		w.advance(time.Millisecond)
	}
	require.Equal(t, []string{busy, behind}, reasons())
	q := w.q.take()
	require.Len(t, q, 1)
	require.NotEmpty(t, q[0].task.Wake)

	// The lane frees before the wake is due. A new event's attempt joins
	// the parked ones: no slot asked for, no request, no second wake.
	require.NoError(t, w.st.ReleaseSlowSlot(ctx, "tenant-a", "other"))
	calls := counting.calls.Load()
	e3 := w.event("tenant-a", "t")
	ids = append(ids, e3.ID)
	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e3.ID))
	assert.Empty(t, rcv.requests(), "the new attempt went ahead of the parked ones")
	assert.Equal(t, calls, counting.calls.Load(), "the new attempt asked the slow lane for a slot")
	assert.Equal(t, []string{busy, behind, behind}, reasons(), "the new attempt is put off behind the wake (not tenant_busy: the lane is free)")
	assert.Equal(t, 2, strings.Count(w.logs.String(), `"reason":"`+contract.DeferredBehindWake+`"`), "the log lines' reason")
	assert.Empty(t, w.q.take(), "a second wake was queued")
	as := w.attempts("tenant-a", e3.ID)
	require.Len(t, as, 1)
	assert.Equal(t, event.OutcomeScheduled, as[0].Outcome)
	assert.Equal(t, event.FormatTime(q[0].task.DueAt.Truncate(time.Millisecond)), as[0].NextAttemptAt, "due when the wake is")

	// The wake makes them one at a time (one slot), oldest event first,
	// each once.
	for i := range ids {
		require.Len(t, q, 1, "the wake after request %d", i)
		w.advance(q[0].delay)
		require.NoError(t, w.d.HandleTask(ctx, q[0].task))
		got := rcv.requests()
		require.Len(t, got, i+1)
		assert.Equal(t, ids[i], got[i].id, "request %d", i+1)
		q = w.q.take()
	}
	assert.Empty(t, q, "nothing left parked, no wake")
	for _, id := range ids {
		assert.Equal(t, event.Delivered, w.status("tenant-a", id).Status)
	}
}

// A new attempt waits only for a wake due within the lane's longest wait
// (MaxSlowLaneWait, the latest a lane's wake is due) and overdue by no
// more than that: a wake due later (a circuit's, left queued by a success
// that closed the circuit when a fault kept the wake due now it queues from
// being sent) is not waited for, nor one long overdue (its
// invocation may have died; its marker stays live for minutes), nor any
// while the circuit is half-open (the new attempt may be the probe). An
// attempt that waits takes no place in its endpoint's rate cap (the
// wake's attempt takes it; found by review).
func TestNewAttemptWaitsOnlyForAWakeDueSoon(t *testing.T) {
	ctx := context.Background()
	const grace = 5 * time.Minute // dispatch's wakeGrace: a marker ends that long after its wake is due
	for _, tt := range []struct {
		due      time.Duration
		halfOpen bool
		waits    bool
		reason   string
	}{
		{0, false, true, "a wake due now"},
		{10 * time.Second, false, true, "a wake due in 10 s"},
		{dispatch.MaxSlowLaneWait, false, true, "a wake due at the lane's longest wait"},
		{dispatch.MaxSlowLaneWait + time.Millisecond, false, false, "a wake due just past the lane's longest wait"},
		{2 * time.Minute, false, false, "a circuit's wake due in 2 minutes"},
		{-10 * time.Second, false, true, "a wake overdue by 10 s"},
		{-dispatch.MaxSlowLaneWait - time.Second, false, false, "a wake overdue by more than the lane's longest wait"},
		{10 * time.Second, true, false, "a wake due in 10 s, the circuit half-open"},
	} {
		rcv := newReceiver(t)
		m := &metrics{}
		w, sub := slowWorld(t, rcv, func(c *dispatch.Config) { c.SlowAfter = -1; c.EndpointRate = 1; c.Metrics = m })
		if tt.halfOpen {
			halfOpen(t, w, sub)
		}
		queuedWake(t, w, sub.ID, "queued", w.clock().Add(tt.due+grace))
		e := w.event("tenant-a", "t")
		require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))
		if tt.waits {
			assert.Empty(t, rcv.requests(), "%s: the new attempt did not wait", tt.reason)
			as := w.attempts("tenant-a", e.ID)
			require.Len(t, as, 1)
			assert.Equal(t, event.OutcomeScheduled, as[0].Outcome, tt.reason)
			ahead, err := w.st.TakeRateToken(ctx, "tenant-a", sub.ID, w.clock(), 1)
			require.NoError(t, err)
			assert.Zero(t, ahead, "%s: the attempt that waited took the endpoint's place in this second", tt.reason)
			assert.Equal(t, []string{"tenant-a/" + sub.ID + "/" + contract.DeferredBehindWake}, m.deferred, tt.reason)
			continue
		}
		assert.Len(t, rcv.requests(), 1, "%s: the new attempt waited", tt.reason)
		assert.Empty(t, m.deferred, tt.reason)
		assert.Equal(t, event.Delivered, w.status("tenant-a", e.ID).Status, tt.reason)
	}
}

// halfOpen opens sub's circuit until a second ago: it is half-open, the
// next attempt its probe.
func halfOpen(t *testing.T, w *world, sub event.Subscription) {
	t.Helper()
	opened, err := w.st.OpenCircuit(context.Background(), "tenant-a", sub.ID, sub.URL, w.clock().Add(-61*time.Second), w.clock().Add(-time.Second), time.Minute)
	require.NoError(t, err)
	require.True(t, opened)
}

// queuedWake sets subscription subID's wake marker as if the wake of
// owner, live until until, were queued (claimed and confirmed).
func queuedWake(t *testing.T, w *world, subID, owner string, until time.Time) {
	t.Helper()
	ctx := context.Background()
	claimed, err := w.st.ClaimWake(ctx, "tenant-a", subID, owner, "", false, until, w.clock())
	require.NoError(t, err)
	require.True(t, claimed)
	confirmed, err := w.st.ConfirmWake(ctx, "tenant-a", subID, owner)
	require.NoError(t, err)
	require.True(t, confirmed)
}

// A delivery that closes the circuit queues a wake due now in place of a
// queued one due later, except, for a subscription in its tenant's slow
// lane, one due within MaxSlowLaneWait: the lane's wake, which carries the
// subscription's wait for a turn.
func TestClosingTheCircuitSparesTheLanesWake(t *testing.T) {
	ctx := context.Background()
	const grace = 5 * time.Minute // dispatch's wakeGrace
	for _, tt := range []struct {
		lane     bool
		due      time.Duration
		replaced bool
		reason   string
	}{
		{true, 10 * time.Second, false, "in the lane, a wake due in 10 s"},
		{true, dispatch.MaxSlowLaneWait, false, "in the lane, a wake due at the lane's longest wait"},
		{true, dispatch.MaxSlowLaneWait + time.Second, true, "in the lane, a wake due past the lane's longest wait"},
		{false, 10 * time.Second, true, "not in the lane, a wake due in 10 s"},
	} {
		rcv := newReceiver(t)
		var w *world
		var sub event.Subscription
		if tt.lane {
			w, sub = slowWorld(t, rcv, func(c *dispatch.Config) { c.SlowAfter = -1 })
		} else {
			w = newWorld(t, rcv, func(c *dispatch.Config) { c.SlowAfter = -1 })
			sub, _ = w.subscribe("tenant-a")
		}
		w.now = w.now.Truncate(time.Millisecond).Add(time.Second) // the store keeps milliseconds; after the subscription's creation
		halfOpen(t, w, sub)
		queuedWake(t, w, sub.ID, "queued", w.clock().Add(tt.due+grace))

		e := w.event("tenant-a", "t")
		require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))
		require.Equal(t, event.Delivered, w.status("tenant-a", e.ID).Status, "%s: the probe", tt.reason)
		got, err := w.st.GetSubscription(ctx, "tenant-a", sub.ID)
		require.NoError(t, err)
		require.True(t, got.CircuitOpenUntil.IsZero(), "%s: closed by the probe", tt.reason)
		tasks := w.q.take()
		if !tt.replaced {
			assert.Empty(t, tasks, tt.reason)
			assert.Equal(t, w.clock().Add(tt.due+grace), got.WakeQueuedUntil, "%s: the queued wake's marker stays", tt.reason)
			continue
		}
		if assert.Len(t, tasks, 1, tt.reason) {
			assert.Equal(t, w.clock(), tasks[0].task.DueAt, tt.reason)
			assert.NotEqual(t, "queued", tasks[0].task.Wake, tt.reason)
		}
		assert.Equal(t, w.clock().Add(grace), got.WakeQueuedUntil, "%s: the wake due now holds the marker", tt.reason)
	}
}

// slowLaneWorld is a world whose tenant-a has a subscription to each of
// types, all marked slow for an hour, and a slow lane of slots slots,
// every one held by another holder for an hour (freeLane frees them);
// configure, if not nil, sets the rest of the dispatcher's config.
func slowLaneWorld(t *testing.T, rcv *receiver, slots int, configure func(*dispatch.Config), types ...string) (*world, []event.Subscription) {
	t.Helper()
	ctx := context.Background()
	w := newWorld(t, rcv, func(c *dispatch.Config) {
		c.TenantSlowConcurrency = slots
		c.SlowAfter = -1
		if configure != nil {
			configure(c)
		}
	})
	var subs []event.Subscription
	for _, typ := range types {
		sub, _ := w.subscribe("tenant-a", typ)
		require.NoError(t, w.st.MarkSlow(ctx, "tenant-a", sub.ID, sub.URL, w.clock().Add(time.Hour)))
		subs = append(subs, sub)
	}
	for i := range slots {
		ok, err := w.st.AcquireSlowSlot(ctx, "tenant-a", laneHolder(i), w.clock(), w.clock().Add(time.Hour), slots)
		require.NoError(t, err)
		require.True(t, ok)
	}
	return w, subs
}

// laneHolder names the i-th of the other holders slowLaneWorld fills the
// lane with.
func laneHolder(i int) string { return "other" + strconv.Itoa(i+1) }

// freeLane releases the slots slowLaneWorld's other holders hold.
func freeLane(t *testing.T, w *world, slots int) {
	t.Helper()
	for i := range slots {
		require.NoError(t, w.st.ReleaseSlowSlot(context.Background(), "tenant-a", laneHolder(i)))
	}
}

// twoSlowSubscriptions is slowLaneWorld with two subscriptions, to event
// types typ1 and typ2, and a lane of one slot.
func twoSlowSubscriptions(t *testing.T, rcv *receiver, typ1, typ2 string) (w *world, sub1, sub2 event.Subscription) {
	t.Helper()
	w, subs := slowLaneWorld(t, rcv, 1, nil, typ1, typ2)
	return w, subs[0], subs[1]
}

// assertLaneLeftClear asserts that no subscription is left waiting on
// tenant-a's slow lane and that its slots are free.
func assertLaneLeftClear(t *testing.T, w *world) {
	t.Helper()
	assert.Empty(t, laneWaiters(t, w), "waiters left on the lane")
	assert.True(t, slowLaneFree(t, w), "the wakes gave their slots back")
}

// laneWaiters returns the subscriptions waiting on tenant-a's slow lane.
func laneWaiters(t *testing.T, w *world) []event.LaneWaiter {
	t.Helper()
	ws, err := w.st.LaneWaiters(context.Background(), "tenant-a", w.clock(), 10)
	require.NoError(t, err)
	return ws
}

// wakeOf returns the one wake queued for sub among qs, and when it is due.
func wakeOf(t *testing.T, w *world, qs []queued, sub string) (dispatch.Task, time.Time) {
	t.Helper()
	var found []queued
	for _, q := range qs {
		if q.task.SubscriptionID == sub {
			found = append(found, q)
		}
	}
	require.Len(t, found, 1, "wakes queued for %s: %+v", sub, qs)
	require.NotEmpty(t, found[0].task.Wake)
	return found[0].task, w.clock().Add(found[0].delay)
}

// startHeld runs run (a task or a message handled) in the background
// with rcv holding its first request unanswered: it returns once that
// request has come, with the function that lets it be answered and
// returns run's error.
func startHeld(t *testing.T, rcv *receiver, run func() error) (finish func() error) {
	t.Helper()
	release := make(chan struct{})
	rcv.mu.Lock()
	rcv.hold = release
	rcv.mu.Unlock()
	done := make(chan error, 1)
	go func() { done <- run() }()
	require.Eventually(t, func() bool { return rcvHolding(rcv) }, 10*time.Second, 5*time.Millisecond, "the request never came")
	return func() error {
		close(release)
		return <-done
	}
}

// taskRun is run for startHeld: w handles task.
func taskRun(w *world, task dispatch.Task) func() error {
	return func() error { return w.d.HandleTask(context.Background(), task) }
}

// Subscriptions of one tenant that share its slow lane take turns: a wake
// that finds the lane full waits on the lane, and the wake that frees the
// slots next hands the turn to the subscription that has waited longest
// (its wake due at once) and waits its own turn, instead of coming back
// at once and taking the slots again while the other's refused wakes come
// back ever later (the slow-neighbour load scenario measured one endpoint
// getting 3-4 times another's share). Here with a lane of one slot, two
// subscriptions with three parked attempts each: the deliveries alternate,
// each attempt made once, and no waiter is left behind.
func TestSlowLaneSubscriptionsTakeTurns(t *testing.T) {
	ctx := context.Background()
	rcv := newReceiver(t)
	w, _, subY := twoSlowSubscriptions(t, rcv, "x", "y")
	name := map[string]string{}
	for i := range 3 {
		for _, typ := range []string{"x", "y"} {
			e := w.event("tenant-a", typ)
			name[e.ID] = typ + strconv.Itoa(i+1)
			require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))
			w.advance(time.Millisecond)
		}
	}
	r := newWakeRunner(t, w)
	r.collect()
	require.Len(t, r.pending, 2, "one wake per subscription")

	// Y's wake comes while the lane is full: refused, it waits on the lane.
	r.runOf(subY.ID)
	waiters := laneWaiters(t, w)
	require.Len(t, waiters, 1)
	assert.Equal(t, subY.ID, waiters[0].SubscriptionID)
	assert.Equal(t, 1, waiters[0].Refused)

	// The lane frees: the wakes run as they come due.
	freeLane(t, w, 1)
	r.drain(40)
	var order []string
	for _, r := range rcv.requests() {
		order = append(order, name[r.id])
	}
	assert.Equal(t, []string{"x1", "y1", "x2", "y2", "x3", "y3"}, order, "the subscriptions did not take turns")
	assertLaneLeftClear(t, w)
}

// The wake a hand-over replaced still comes (a queued message cannot be
// taken back): when it comes while the wake that replaced it is making
// its attempts (the marker taken), it finds no marker, runs, is refused
// by the lane its own subscription holds, and queues the subscription's
// next wake for later, its backoff grown with its refused count. The
// wake that holds the slots must not then wait for that one: at the end
// of its batch its next wake, due at once, replaces it. (Found by review:
// the next wake at once was refused by the replaced wake's successor's
// marker, and the lane stood idle, with the subscription's backlog
// parked, until that wake came, 12 s here, up to 30 s.)
func TestReplacedWakeDoesNotHoldBackTheTurn(t *testing.T) {
	ctx := context.Background()
	rcv := newReceiver(t)
	w, subX, subA := twoSlowSubscriptions(t, rcv, "x", "a")
	for _, typ := range []string{"x", "x", "a"} {
		e := w.event("tenant-a", typ)
		require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))
		w.advance(time.Millisecond)
	}
	run := func(task dispatch.Task, due time.Time) {
		t.Helper()
		if due.After(w.clock()) {
			w.advance(due.Sub(w.clock()))
		}
		require.NoError(t, w.d.HandleTask(ctx, task))
	}
	first := w.q.take()
	wakeX, dueX := wakeOf(t, w, first, subX.ID)
	wakeA, dueA := wakeOf(t, w, first, subA.ID)

	// X's wakes find the lane full three times in a row: X waits on the
	// lane, its next wake 6 s away.
	for range 3 {
		run(wakeX, dueX)
		wakeX, dueX = wakeOf(t, w, w.q.take(), subX.ID)
	}
	require.Equal(t, 3, wakeX.Refused)
	replaced, replacedDue := wakeX, dueX

	// The lane frees: A's wake makes A's attempt and hands X the turn.
	freeLane(t, w, 1)
	run(wakeA, dueA)
	handed, handedDue := wakeOf(t, w, w.q.take(), subX.ID)
	require.NotEqual(t, replaced.Wake, handed.Wake, "a wake handed the turn")
	require.False(t, handedDue.After(w.clock()), "the handed wake is due at once")

	// X's handed wake makes X's first attempt; while its request is in
	// flight, the replaced wake comes: refused, it queues X's next wake
	// for later.
	finish := startHeld(t, rcv, taskRun(w, handed))
	run(replaced, replacedDue)
	late, lateDue := wakeOf(t, w, w.q.take(), subX.ID)
	require.Greater(t, lateDue.Sub(w.clock()), 10*time.Second, "the replaced wake's successor (refused %d) is due in %v", late.Refused, lateDue.Sub(w.clock()))
	require.NoError(t, finish())
	require.Len(t, rcv.requests(), 2, "A's attempt and X's first")

	// X's second attempt is still parked, the lane free, no one else
	// waiting: X's next wake is due at once.
	assert.True(t, slowLaneFree(t, w), "the lane is free")
	next, nextDue := late, lateDue
	if qs := w.q.take(); len(qs) > 0 {
		next, nextDue = wakeOf(t, w, qs, subX.ID)
	}
	assert.False(t, nextDue.After(w.clock()), "X's next wake is due in %v, the lane idle meanwhile", nextDue.Sub(w.clock()))
	run(next, nextDue)
	if late.Wake != next.Wake {
		run(late, lateDue) // replaced in turn: it stops at the marker
	}
	assert.Len(t, rcv.requests(), 3, "X's second attempt")
	waiters := laneWaiters(t, w)
	assert.Empty(t, waiters, "waiters left on the lane")
}

// gatedUnpark is the store with the removals of two parked attempts of
// one subscription ordered between two wakes making them at once: the
// first wake's removals wait; the second's removal of the first attempt
// comes after the first wake's, its removal of the second before.
type gatedUnpark struct {
	dispatch.Store
	sub     string
	mu      sync.Mutex
	calls   map[string]int
	first   string
	gate    map[string]chan struct{} // closed: the first wake's removal goes
	done    map[string]chan struct{} // closed: the first wake's removal went
	waiting chan string
}

// arm orders the removals of sub's parked attempts first and second.
func (g *gatedUnpark) arm(sub, first, second string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.sub, g.first = sub, first
	g.calls = map[string]int{}
	g.gate = map[string]chan struct{}{}
	g.done = map[string]chan struct{}{}
	g.waiting = make(chan string, 2)
	for _, id := range []string{first, second} {
		g.gate[id] = make(chan struct{})
		g.done[id] = make(chan struct{})
	}
}

func (g *gatedUnpark) UnparkAttempt(ctx context.Context, tenant, subID string, p event.Parked) (bool, error) {
	g.mu.Lock()
	gate, ok := g.gate[p.EventID]
	n := 0
	if ok {
		g.calls[p.EventID]++
		n = g.calls[p.EventID]
	}
	g.mu.Unlock()
	if subID != g.sub || !ok || n > 2 {
		return g.Store.UnparkAttempt(ctx, tenant, subID, p)
	}
	if n == 1 { // the first wake
		g.waiting <- p.EventID
		<-gate
		defer close(g.done[p.EventID])
		return g.Store.UnparkAttempt(ctx, tenant, subID, p)
	}
	// The second wake.
	if p.EventID == g.first {
		close(gate)
		<-g.done[p.EventID]
		return g.Store.UnparkAttempt(ctx, tenant, subID, p)
	}
	defer close(gate)
	return g.Store.UnparkAttempt(ctx, tenant, subID, p)
}

// Two wakes of one subscription can run at once: the wake a hand-over
// replaced comes while the wake that replaced it makes its attempts (the
// marker taken, so it runs too), as does a copy of a wake message SQS
// hands out twice. Both take the same page; an attempt the other wake
// made and removed is no longer parked, which is not "parked again" (whose
// parker queued a wake): the wake goes on and queues the next for the
// attempts past its page. (Found by review: each wake found one of its
// two attempts removed by the other, both stopped, and the third attempt
// stayed parked with no wake to come.)
func TestConcurrentWakesLeaveNoAttemptBehind(t *testing.T) {
	ctx := context.Background()
	rcv := newReceiver(t)
	var gated *gatedUnpark
	var ids []string
	w, subs := slowLaneWorld(t, rcv, 2, func(c *dispatch.Config) {
		c.Parallel = 2
		gated = &gatedUnpark{Store: c.Store}
		c.Store = gated
	}, "x", "a")
	subX, subA := subs[0], subs[1]
	for _, typ := range []string{"x", "x", "x", "a"} {
		e := w.event("tenant-a", typ)
		if typ == "x" {
			ids = append(ids, e.ID)
		}
		require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))
		w.advance(time.Millisecond)
	}
	gated.arm(subX.ID, ids[0], ids[1])
	run := func(task dispatch.Task, due time.Time) error {
		if due.After(w.clock()) {
			w.advance(due.Sub(w.clock()))
		}
		return w.d.HandleTask(ctx, task)
	}
	first := w.q.take()
	wakeX, dueX := wakeOf(t, w, first, subX.ID)
	wakeA, dueA := wakeOf(t, w, first, subA.ID)
	require.NoError(t, run(wakeX, dueX)) // refused: X waits on the lane
	replaced, replacedDue := wakeOf(t, w, w.q.take(), subX.ID)
	freeLane(t, w, 2)
	require.NoError(t, run(wakeA, dueA)) // A's attempt; the turn handed to X
	handed, handedDue := wakeOf(t, w, w.q.take(), subX.ID)
	require.NotEqual(t, replaced.Wake, handed.Wake)

	// The handed wake makes X's first two attempts; their removals wait.
	done := make(chan error, 1)
	go func() { done <- run(handed, handedDue) }()
	for range 2 {
		select {
		case <-gated.waiting:
		case err := <-done:
			t.Fatalf("the handed wake ended before removing its attempts: %v", err)
		case <-time.After(10 * time.Second):
			t.Fatal("the handed wake never came to removing its attempts")
		}
	}
	// The replaced wake comes meanwhile and takes the same page.
	require.NoError(t, run(replaced, replacedDue))
	require.NoError(t, <-done)
	require.Len(t, rcv.requests(), 3, "A's attempt and X's first two, once each")

	// X's third attempt is made by a wake still to come.
	newWakeRunner(t, w).drain(20)
	parked, err := w.st.ListParked(ctx, "tenant-a", subX.ID, 10)
	require.NoError(t, err)
	assert.Empty(t, parked, "attempts left parked with no wake to come")
	got := map[string]int{}
	for _, r := range rcv.requests() {
		got[r.id]++
	}
	for i, id := range ids {
		assert.Equal(t, 1, got[id], "requests of X's attempt %d", i+1)
	}
}

// A wake that finds the attempt of its page being made by another wake of
// the subscription running at the same time (a copy of its message, which
// SQS may hand out twice, or the wake a slow-lane hand-over replaced)
// leaves it parked and queues a standby wake, an attempt's time later, in
// case the other wake's instance dies. The standby must not hold back the
// other wake's successor, which that wake queues at once for the attempts
// past its page. (Found by review: the standby's marker refused it, and
// the backlog waited for the standby with free slots in the lane, 13 s
// here.)
func TestAStandbyWakeDoesNotHoldBackTheNextWake(t *testing.T) {
	ctx := context.Background()
	rcv := newReceiver(t)
	w, subs := slowLaneWorld(t, rcv, 2, func(c *dispatch.Config) { c.Parallel = 1 }, "x")
	sub := subs[0]
	var ids []string
	for range 2 {
		e := w.event("tenant-a", "x")
		ids = append(ids, e.ID)
		require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))
		w.advance(time.Millisecond)
	}
	wake, due := wakeOf(t, w, w.q.take(), sub.ID)
	freeLane(t, w, 2)
	w.advance(due.Sub(w.clock()))

	// The wake makes the first attempt (its page is one); while the
	// request is in flight, a copy of its message comes, takes the
	// lane's other slot, finds the attempt being made, and queues a
	// standby wake.
	finish := startHeld(t, rcv, taskRun(w, wake))
	require.NoError(t, w.d.HandleTask(ctx, wake))
	standby, standbyDue := wakeOf(t, w, w.q.take(), sub.ID)
	require.Greater(t, standbyDue.Sub(w.clock()), 10*time.Second, "the standby comes an attempt's time later")
	require.NoError(t, finish())
	require.Len(t, rcv.requests(), 1)

	// The wake's successor, for the second attempt, is due at once.
	next, nextDue := wakeOf(t, w, w.q.take(), sub.ID)
	assert.False(t, nextDue.After(w.clock()), "the next wake is due in %v, the lane free meanwhile", nextDue.Sub(w.clock()))
	require.NoError(t, w.d.HandleTask(ctx, next))
	require.Len(t, rcv.requests(), 2, "the second attempt, at once")
	w.advance(standbyDue.Sub(w.clock()))
	require.NoError(t, w.d.HandleTask(ctx, standby), "the standby still comes, and finds nothing to do")
	assert.Empty(t, w.q.take(), "nothing more queued")
	for i, r := range rcv.requests() {
		assert.Equal(t, ids[i], r.id, "request %d", i+1)
	}
	parked, err := w.st.ListParked(ctx, "tenant-a", sub.ID, 10)
	require.NoError(t, err)
	assert.Empty(t, parked)
	assert.True(t, slowLaneFree(t, w))
}

// wakeRunner runs the wakes queued in a world one at a time, as they come
// due, advancing the world's clock to each (and by a millisecond after
// each: no two wakes run at the same moment).
type wakeRunner struct {
	t       *testing.T
	w       *world
	pending []queued // delay: from the world's clock at zero
	at      time.Time
}

func newWakeRunner(t *testing.T, w *world) *wakeRunner {
	return &wakeRunner{t: t, w: w, at: w.clock()}
}

// collect takes the tasks queued since the last call, all of them wakes.
func (r *wakeRunner) collect() {
	r.t.Helper()
	for _, q := range r.w.q.take() {
		require.NotEmpty(r.t, q.task.Wake, "only wakes are queued: %+v", q.task)
		q.delay = r.w.clock().Add(q.delay).Sub(r.at)
		r.pending = append(r.pending, q)
	}
}

// drain runs the wakes queued (and those they queue) by when they are
// due until none is left, at most most of them.
func (r *wakeRunner) drain(most int) {
	r.t.Helper()
	r.collect()
	for n := 0; len(r.pending) > 0; n++ {
		require.Less(r.t, n, most, "the wakes never end")
		r.runNext()
	}
}

// runNext runs the wake due first, then collects what it queued.
func (r *wakeRunner) runNext() {
	r.t.Helper()
	slices.SortStableFunc(r.pending, func(a, b queued) int { return cmp.Compare(a.delay, b.delay) })
	r.run(0)
}

// runOf runs subscription sub's wake (the one due first), then collects
// what it queued.
func (r *wakeRunner) runOf(sub string) {
	r.t.Helper()
	slices.SortStableFunc(r.pending, func(a, b queued) int { return cmp.Compare(a.delay, b.delay) })
	i := slices.IndexFunc(r.pending, func(q queued) bool { return q.task.SubscriptionID == sub })
	require.GreaterOrEqual(r.t, i, 0, "no wake of %s queued", sub)
	r.run(i)
}

func (r *wakeRunner) run(i int) {
	r.t.Helper()
	next := r.pending[i]
	r.pending = slices.Delete(r.pending, i, i+1)
	if due := r.at.Add(next.delay); due.After(r.w.clock()) {
		r.w.advance(due.Sub(r.w.clock()))
	}
	require.NoError(r.t, r.w.d.HandleTask(context.Background(), next.task))
	r.collect()
	r.w.advance(time.Millisecond) // a wake takes a moment: the next one starts later
}

// Turns go round more than two subscriptions, in a lane of more than one
// slot: three subscriptions with three parked attempts each share a lane
// of two slots, a wake making up to two attempts at once; two of them
// were refused three times in a row while the lane was full. A wake that
// ends its batch hands the turn to the subscription that has waited
// longest, so no subscription's deliveries get ahead of another's by more
// than a batch while both have attempts parked (without the hand-over,
// x's wakes made its three attempts first); each attempt is made once,
// and no waiter is left behind.
func TestSlowLaneTurnsGoRoundThreeSubscriptionsOnTwoSlots(t *testing.T) {
	ctx := context.Background()
	rcv := newReceiver(t)
	types := []string{"x", "y", "z"}
	w, all := slowLaneWorld(t, rcv, 2, func(c *dispatch.Config) { c.Parallel = 2 }, types...)
	subOf := map[string]string{} // event id -> event type
	subs := map[string]string{}  // event type -> subscription id
	for i, typ := range types {
		subs[typ] = all[i].ID
	}
	for range 3 {
		for _, typ := range types {
			e := w.event("tenant-a", typ)
			subOf[e.ID] = typ
			require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))
			w.advance(time.Millisecond)
		}
	}
	// Y's and z's wakes find the lane full three times in a row: they
	// wait on it, their next wakes 4-8 s away.
	r := newWakeRunner(t, w)
	r.collect()
	require.Len(t, r.pending, 3, "one wake per subscription")
	for range 3 {
		r.runOf(subs["y"])
		r.runOf(subs["z"])
	}
	waiters := laneWaiters(t, w)
	require.Len(t, waiters, 2)

	// The lane frees: the wakes run as they come due.
	freeLane(t, w, 2)
	r.drain(60)
	count := map[string]int{}
	var order []string
	for _, req := range rcv.requests() {
		typ := subOf[req.id]
		count[typ]++
		order = append(order, typ)
		lo, hi := count[typ], count[typ]
		for _, other := range types {
			lo, hi = min(lo, count[other]), max(hi, count[other])
		}
		if lo < 3 {
			assert.LessOrEqual(t, hi-lo, 2, "a subscription got ahead by more than a batch: %v", order)
		}
	}
	for _, typ := range types {
		assert.Equal(t, 3, count[typ], "deliveries to %s: %v", typ, order)
	}
	assert.Len(t, rcv.requests(), 9, "each attempt once: %v", order)
	t.Logf("deliveries: %v", order)
	assertLaneLeftClear(t, w)
}

// The turn goes to the subscription that has waited longest in time, not
// to the lowest subscription id among those refused as often: a wake that
// ends its batch and waits its turn waits from then on. Three
// subscriptions a < b < c (by id) on one slot: c, then b, find the lane
// full; when it frees, a's wake makes a's first attempt and hands the
// turn to c, which has waited longest; c to b; b to a (a has waited
// since its batch ended, c since just now). The deliveries go round in
// that order. (Ties of the refused count went to the lowest id: b handed
// the turn back to a, which had waited a moment, while c, waiting
// longer, came back only with its own wake.)
func TestSlowLaneTurnGoesToTheLongestWaiting(t *testing.T) {
	ctx := context.Background()
	rcv := newReceiver(t)
	w, subs := slowLaneWorld(t, rcv, 1, nil, "t1", "t2", "t3")
	slices.SortFunc(subs, func(x, y event.Subscription) int { return strings.Compare(x.ID, y.ID) })
	names := map[string]string{} // event type -> a, b, c by subscription id
	for i, sub := range subs {
		names[sub.EventTypes[0]] = string(rune('a' + i))
	}
	name := map[string]string{} // event id -> a1, b2, ...
	for i := range 2 {
		for _, sub := range subs {
			e := w.event("tenant-a", sub.EventTypes[0])
			name[e.ID] = names[sub.EventTypes[0]] + strconv.Itoa(i+1)
			require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))
			w.advance(time.Millisecond)
		}
	}
	r := newWakeRunner(t, w)
	r.collect()
	require.Len(t, r.pending, 3, "one wake per subscription")
	r.runOf(subs[2].ID) // c waits
	w.advance(100 * time.Millisecond)
	r.runOf(subs[1].ID) // then b
	waiters := laneWaiters(t, w)
	require.Len(t, waiters, 2)

	w.advance(100 * time.Millisecond) // a's wake ends its batch after b began to wait
	freeLane(t, w, 1)
	r.drain(40)
	var order []string
	for _, req := range rcv.requests() {
		order = append(order, name[req.id])
	}
	assert.Equal(t, []string{"a1", "c1", "b1", "a2", "c2", "b2"}, order, "the turns did not go to the longest waiting")
	waiters = laneWaiters(t, w)
	assert.Empty(t, waiters, "waiters left on the lane")
}

// Two wakes that free slots at the same moment read the same waiters: the
// first hands the longest waiter its turn, and the second, whose claim
// that waiter's newer wake refuses, hands the turn to the next waiter
// instead of to no one (it queued its own next wake at once, and the
// next waiter waited for its own wake).
func TestRefusedTurnGoesToTheNextWaiter(t *testing.T) {
	ctx := context.Background()
	rcv := newReceiver(t)
	w, subs := slowLaneWorld(t, rcv, 1, nil, "t1", "t2", "t3")
	slices.SortFunc(subs, func(x, y event.Subscription) int { return strings.Compare(x.ID, y.ID) })
	a, b, c := subs[0], subs[1], subs[2]
	for _, sub := range subs {
		require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", w.event("tenant-a", sub.EventTypes[0]).ID))
		w.advance(time.Millisecond)
	}
	r := newWakeRunner(t, w)
	r.collect()
	r.runOf(c.ID) // c waits
	w.advance(100 * time.Millisecond)
	r.runOf(b.ID) // then b
	waiters := laneWaiters(t, w)
	require.Len(t, waiters, 2)
	byID := map[string]event.LaneWaiter{}
	for _, lw := range waiters {
		byID[lw.SubscriptionID] = lw
	}
	// Another wake, freeing slots at the same moment, has handed c the
	// turn: c's wake is replaced by a newer one; c's record, read by both
	// wakes, is not removed yet.
	const grace = 5 * time.Minute // dispatch's wakeGrace
	cUntil := w.clock().Add(grace)
	claimed, err := w.st.ClaimWake(ctx, "tenant-a", c.ID, "handed-by-another", byID[c.ID].Owner, false, cUntil, w.clock())
	require.NoError(t, err)
	require.True(t, claimed)
	confirmed, err := w.st.ConfirmWake(ctx, "tenant-a", c.ID, "handed-by-another")
	require.NoError(t, err)
	require.True(t, confirmed)

	freeLane(t, w, 1)
	r.runOf(a.ID) // a's wake makes its attempt and hands the turn over
	require.Len(t, rcv.requests(), 1)
	var handed []dispatch.Task
	for _, q := range r.pending {
		if q.task.SubscriptionID == b.ID && !q.task.DueAt.After(w.clock()) {
			handed = append(handed, q.task)
		}
	}
	require.Len(t, handed, 1, "b, the next waiter, was handed the turn: its wake due now")
	assert.Equal(t, byID[b.ID].Since, handed[0].WaitingSince.UTC(), "with its wait")
	assert.Empty(t, laneWaiters(t, w), "both records spent: c's refused, b's handed")
	got, err := w.st.GetSubscription(ctx, "tenant-a", c.ID)
	require.NoError(t, err)
	assert.Equal(t, cUntil.Truncate(time.Millisecond).UTC(), got.WakeQueuedUntil.UTC(), "c's newer wake is left as it was")
}

// A subscription handed the turn keeps its wait: when the lane fills
// again before its handed wake runs (a new attempt took the freed slot),
// that wake is refused and the subscription waits on, since its first
// refused wake, not since now, so the next hand-over still finds it the
// longest waiting.
func TestAHandedTurnKeepsItsWait(t *testing.T) {
	ctx := context.Background()
	rcv := newReceiver(t)
	w, subA, subC := twoSlowSubscriptions(t, rcv, "a", "c")
	for _, typ := range []string{"a", "a", "c"} {
		e := w.event("tenant-a", typ)
		require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))
		w.advance(time.Millisecond)
	}
	r := newWakeRunner(t, w)
	r.collect()
	r.runOf(subC.ID) // refused: c waits
	waiters := laneWaiters(t, w)
	require.Len(t, waiters, 1)
	since := waiters[0].Since
	require.False(t, since.IsZero())

	// The lane frees: a's wake makes a's first attempt and hands c the
	// turn; the lane fills again before c's handed wake runs.
	w.advance(time.Second)
	freeLane(t, w, 1)
	r.runOf(subA.ID)
	require.Len(t, rcv.requests(), 1)
	ok, err := w.st.AcquireSlowSlot(ctx, "tenant-a", laneHolder(0), w.clock(), w.clock().Add(time.Hour), 1)
	require.NoError(t, err)
	require.True(t, ok)
	var handed dispatch.Task
	for _, q := range r.pending {
		if q.task.SubscriptionID == subC.ID {
			handed = q.task
		}
	}
	require.Equal(t, since, handed.WaitingSince.UTC(), "the handed wake carries c's wait")
	r.runOf(subC.ID) // refused again

	waiters = laneWaiters(t, w)
	got := map[string]event.LaneWaiter{}
	for _, lw := range waiters {
		got[lw.SubscriptionID] = lw
	}
	require.Contains(t, got, subC.ID)
	assert.Equal(t, since, got[subC.ID].Since, "c waits since its first refused wake")
	assert.Equal(t, 2, got[subC.ID].Refused)
	require.Contains(t, got, subA.ID, "a waits its turn after its batch")
	assert.True(t, got[subC.ID].Since.Before(got[subA.ID].Since), "c has waited longer than a")
}
