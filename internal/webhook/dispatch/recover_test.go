package dispatch_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/webhook/dispatch"
)

// runPages runs recovery page task t and every page it queues, and
// returns how many pages ran; other tasks queued meanwhile are returned
// too.
func runPages(t *testing.T, w *world, task dispatch.Task) (pages int, other []queued) {
	t.Helper()
	todo := []dispatch.Task{task}
	for len(todo) > 0 {
		require.NoError(t, w.d.HandleTask(context.Background(), todo[0]))
		todo = todo[1:]
		pages++
		for _, q := range w.q.take() {
			if q.task.Recover != nil {
				assert.Zero(t, q.delay)
				todo = append(todo, q.task)
			} else {
				other = append(other, q)
			}
		}
		require.Less(t, pages, 20, "the recovery does not end")
	}
	return pages, other
}

// A recovery of one subscription over [since, until) delivers again, to
// that subscription only, each event whose latest attempt to it failed
// with the schedule over: attempt latest+1, in the recovery's round, a
// page of the subscription's attempt list at a time. Delivered events,
// events whose retry is still to come, and events outside the range are
// left alone; a copy of any page sends nothing again.
func TestRecoverSubscription(t *testing.T) {
	ctx := context.Background()
	const fail = http.StatusInternalServerError
	// Subscription A's receiver: e0 fails twice, e1 twice, e2 delivered,
	// e3 fails twice, e4 once; then the recovery's two requests.
	rcv := newReceiver(t, fail, fail, fail, fail, http.StatusOK, fail, fail, fail, http.StatusOK, http.StatusOK)
	w := newWorld(t, rcv, func(c *dispatch.Config) {
		c.Schedule = contract.RetrySchedule{time.Second}
		c.RecoverPage = 2
		c.SlowAfter = -1
		c.BreakerThreshold = 1000 // B's failures never open its circuit
	})
	a, _ := w.subscribe("tenant-a")
	// Subscription B (another endpoint) fails everything.
	rcvB := newReceiver(t, fail, fail, fail, fail, fail, fail, fail, fail, fail, fail, fail, fail)
	b := event.Subscription{ID: "sub_bbbbbbbbbbbbbbbbbbbbbbbbbb", URL: rcvB.srv.URL + "/b", EventTypes: []string{}, CreatedAt: event.FormatTime(w.clock()), Secrets: []string{a.Secrets[0]}}
	require.NoError(t, w.st.CreateSubscription(ctx, "tenant-a", b))

	// deliver runs e's first round and, when retries is set, its retries.
	deliver := func(e event.Event, retries bool) []queued {
		require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))
		tasks := w.q.take()
		if !retries {
			return tasks
		}
		w.advance(time.Second)
		for _, q := range tasks {
			require.NoError(t, w.d.HandleTask(ctx, q.task))
		}
		require.Empty(t, w.q.take(), "the schedule had one retry")
		return nil
	}
	w.advance(time.Second)
	e0 := w.event("tenant-a", "t")
	deliver(e0, true)
	w.advance(time.Minute)
	since := w.clock()
	e1 := w.event("tenant-a", "t")
	deliver(e1, true)
	w.advance(time.Second)
	e2 := w.event("tenant-a", "t")
	deliver(e2, true)
	w.advance(time.Second)
	e3 := w.event("tenant-a", "t")
	deliver(e3, true)
	w.advance(time.Second)
	e4 := w.event("tenant-a", "t")
	pending := deliver(e4, false)
	require.Len(t, pending, 2, "e4's retries to A and B are still to come")
	require.Len(t, rcv.requests(), 8)
	bBefore := len(rcvB.requests())
	for _, e := range []event.Event{e0, e1, e3} {
		require.Equal(t, event.Failed, w.status("tenant-a", e.ID).Status)
	}
	rc := map[string]int{}
	for _, e := range []event.Event{e1, e3} {
		rc[e.ID] = w.status("tenant-a", e.ID).RetryCount
	}
	w.advance(time.Second)
	until := w.clock()

	require.NoError(t, dispatch.Recover(w.q)(ctx, "tenant-a", a.ID, "rec-1", since, until, w.clock()))
	first := w.q.take()
	require.Equal(t, []queued{{dispatch.Task{Tenant: "tenant-a", SubscriptionID: a.ID, DueAt: w.clock(),
		Recover: &dispatch.Recovery{ID: "rec-1", From: event.IDFloor(since), To: event.IDFloor(until)}}, 0}}, first)
	pages, other := runPages(t, w, first[0].task)
	assert.Equal(t, 3, pages, "A's list in range holds 6 entries, 2 a page; e1's two are one page")
	assert.Empty(t, other)

	got := rcv.requests()
	require.Len(t, got, 10)
	assert.Equal(t, []string{e1.ID, e3.ID}, []string{got[8].id, got[9].id}, "e1 and e3 again, once each")
	for _, r := range got {
		assert.NoError(t, r.verified)
	}
	assert.Len(t, rcvB.requests(), bBefore, "nothing to another subscription")
	for _, e := range []event.Event{e1, e3} {
		as := w.attempts("tenant-a", e.ID)
		var toA []event.Attempt
		for _, x := range as {
			if x.SubscriptionID == a.ID {
				toA = append(toA, x)
			}
		}
		require.Len(t, toA, 3)
		assert.Equal(t, event.OutcomeDelivered, toA[2].Outcome)
		assert.Equal(t, "rec-1", toA[2].Round)
		// B's latest attempt still failed: the event stays failed.
		assert.Equal(t, event.Failed, w.status("tenant-a", e.ID).Status)
		assert.Equal(t, rc[e.ID]+1, w.status("tenant-a", e.ID).RetryCount, "failed -> retrying once more")
	}
	assert.Len(t, w.attempts("tenant-a", e2.ID), 3, "e2 was delivered to A: not recovered")
	assert.Len(t, w.attempts("tenant-a", e4.ID), 2, "e4's retry is still to come: not recovered")
	assert.Len(t, w.attempts("tenant-a", e0.ID), 4, "e0 is before since")

	// Every page again, as SQS may hand a message over twice: nothing is
	// sent again.
	pages, other = runPages(t, w, first[0].task)
	assert.Equal(t, 3, pages)
	assert.Empty(t, other)
	assert.Len(t, rcv.requests(), 10)
	assert.Len(t, w.attempts("tenant-a", e1.ID), 5)

	// A recovery of a deleted subscription ends at once.
	require.NoError(t, w.st.DeleteSubscription(ctx, "tenant-a", b.ID))
	require.NoError(t, dispatch.Recover(w.q)(ctx, "tenant-a", b.ID, "rec-2", since, until, w.clock()))
	pages, _ = runPages(t, w, w.q.take()[0].task)
	assert.Equal(t, 1, pages)
	assert.Len(t, rcvB.requests(), bBefore)
}

// A retry that came due while its subscription was disabled is dropped;
// once the subscription is re-enabled, a recovery makes that attempt (its
// number, so the dropped retry and the recovery never both send), and
// the recovery of a subscription disabled again does nothing.
func TestRecoverAfterDisabled(t *testing.T) {
	ctx := context.Background()
	rcv := newReceiver(t, http.StatusInternalServerError, http.StatusOK)
	w := newWorld(t, rcv, func(c *dispatch.Config) { c.SlowAfter = -1 })
	sub, _ := w.subscribe("tenant-a")
	since := w.clock()
	e := w.event("tenant-a", "t")
	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))
	retry := w.q.take()
	require.Len(t, retry, 1)
	_, err := w.st.UpdateSubscription(ctx, "tenant-a", sub.ID, event.SubscriptionPatch{Disabled: aws.Bool(true)}, w.clock())
	require.NoError(t, err)
	w.advance(retry[0].task.DueAt.Sub(w.clock()))
	require.NoError(t, w.d.HandleTask(ctx, retry[0].task))
	require.Len(t, w.attempts("tenant-a", e.ID), 1, "the retry was dropped")
	assert.Equal(t, event.Failed, w.status("tenant-a", e.ID).Status)

	// Disabled: the recovery does nothing.
	require.NoError(t, dispatch.Recover(w.q)(ctx, "tenant-a", sub.ID, "rec-1", since, w.clock(), w.clock()))
	pages, _ := runPages(t, w, w.q.take()[0].task)
	assert.Equal(t, 1, pages)
	assert.Len(t, rcv.requests(), 1)

	_, err = w.st.UpdateSubscription(ctx, "tenant-a", sub.ID, event.SubscriptionPatch{Disabled: aws.Bool(false)}, w.clock())
	require.NoError(t, err)
	// Soon after its due time the retry may still come: not recovered.
	require.NoError(t, dispatch.Recover(w.q)(ctx, "tenant-a", sub.ID, "rec-2", since, w.clock(), w.clock()))
	runPages(t, w, w.q.take()[0].task)
	assert.Len(t, rcv.requests(), 1)
	// Long overdue: dropped; the recovery makes attempt 2.
	w.advance(2 * time.Hour)
	require.NoError(t, dispatch.Recover(w.q)(ctx, "tenant-a", sub.ID, "rec-3", since, w.clock(), w.clock()))
	runPages(t, w, w.q.take()[0].task)
	require.Len(t, rcv.requests(), 2)
	as := w.attempts("tenant-a", e.ID)
	require.Len(t, as, 2)
	assert.Equal(t, event.Attempt{Number: 2, Outcome: event.OutcomeDelivered, Round: "rec-3"}, event.Attempt{Number: as[1].Number, Outcome: as[1].Outcome, Round: as[1].Round})
	assert.Equal(t, event.Delivered, w.status("tenant-a", e.ID).Status)
	// The dropped retry's task, late: the same attempt, not sent again.
	require.NoError(t, w.d.HandleTask(ctx, retry[0].task))
	assert.Len(t, rcv.requests(), 2)
}

// A recovered attempt that fails again ends failed with the schedule over:
// a copy of its page recognises the attempt by the recovery's round and
// sends nothing more; another recovery tries once more.
func TestRecoverCopyAfterFailure(t *testing.T) {
	ctx := context.Background()
	const fail = http.StatusServiceUnavailable
	rcv := newReceiver(t, fail, fail, fail, http.StatusOK)
	w := newWorld(t, rcv, func(c *dispatch.Config) { c.Schedule = contract.RetrySchedule{time.Second}; c.SlowAfter = -1 })
	sub, _ := w.subscribe("tenant-a")
	since := w.clock()
	e := w.event("tenant-a", "t")
	require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))
	w.advance(time.Second)
	for _, q := range w.q.take() {
		require.NoError(t, w.d.HandleTask(ctx, q.task))
	}
	require.Len(t, rcv.requests(), 2)

	require.NoError(t, dispatch.Recover(w.q)(ctx, "tenant-a", sub.ID, "rec-1", since, w.clock(), w.clock()))
	page := w.q.take()[0].task
	runPages(t, w, page)
	require.Len(t, rcv.requests(), 3)
	as := w.attempts("tenant-a", e.ID)
	require.Len(t, as, 3)
	assert.Equal(t, event.OutcomeFailed, as[2].Outcome)
	assert.Empty(t, as[2].NextAttemptAt, "past the schedule")
	assert.Equal(t, event.Failed, w.status("tenant-a", e.ID).Status)

	runPages(t, w, page)
	assert.Len(t, rcv.requests(), 3, "the copy sends nothing")
	assert.Len(t, w.attempts("tenant-a", e.ID), 3)

	require.NoError(t, dispatch.Recover(w.q)(ctx, "tenant-a", sub.ID, "rec-2", since, w.clock(), w.clock()))
	runPages(t, w, w.q.take()[0].task)
	assert.Len(t, rcv.requests(), 4)
	assert.Equal(t, event.Delivered, w.status("tenant-a", e.ID).Status)
}

// disablesAfterFirstFinish runs disable, once it is set, right after the
// first attempt the dispatcher finishes: a PATCH arriving while a page
// runs.
type disablesAfterFirstFinish struct {
	dispatch.Store
	once    sync.Once
	disable func()
}

func (s *disablesAfterFirstFinish) FinishAttempt(ctx context.Context, tenant, eventID string, a event.Attempt, owner string) error {
	err := s.Store.FinishAttempt(ctx, tenant, eventID, a, owner)
	if s.disable != nil {
		s.once.Do(s.disable)
	}
	return err
}

// A subscription disabled while a recovery page runs gets no more of the
// page's attempts: each new attempt reads the subscription again (it used
// to go with the page's first read, so the page's other events went to
// the disabled endpoint).
func TestRecoverStopsWhenDisabledMidPage(t *testing.T) {
	ctx := context.Background()
	const fail = http.StatusInternalServerError
	rcv := newReceiver(t, fail, fail, fail, fail, fail, fail, http.StatusOK, http.StatusOK, http.StatusOK)
	var wrapped *disablesAfterFirstFinish
	w := newWorld(t, rcv, func(c *dispatch.Config) {
		c.Schedule = contract.RetrySchedule{time.Second}
		c.SlowAfter = -1
		c.BreakerThreshold = 1000
		c.RecoverPage = 10
		c.Parallel = 1
		wrapped = &disablesAfterFirstFinish{Store: c.Store}
		c.Store = wrapped
	})
	sub, _ := w.subscribe("tenant-a")
	since := w.clock()
	var evs []event.Event
	for range 3 {
		w.advance(time.Millisecond)
		e := w.event("tenant-a", "t")
		evs = append(evs, e)
		require.NoError(t, w.d.HandleEvent(ctx, "tenant-a", e.ID))
		w.advance(time.Second)
		for _, q := range w.q.take() {
			require.NoError(t, w.d.HandleTask(ctx, q.task))
		}
		require.Empty(t, w.q.take(), "the schedule had one retry")
	}
	require.Len(t, rcv.requests(), 6)
	for _, e := range evs {
		require.Equal(t, event.Failed, w.status("tenant-a", e.ID).Status)
	}

	wrapped.disable = func() {
		_, err := w.st.UpdateSubscription(ctx, "tenant-a", sub.ID, event.SubscriptionPatch{Disabled: aws.Bool(true)}, w.clock())
		require.NoError(t, err)
	}
	require.NoError(t, dispatch.Recover(w.q)(ctx, "tenant-a", sub.ID, "rec-1", since, w.clock(), w.clock()))
	pages, _ := runPages(t, w, w.q.take()[0].task)
	assert.Equal(t, 1, pages, "one page holds the three events")
	assert.Equal(t, 7, len(rcv.requests()), "one recovered attempt, then the subscription was disabled")
	recovered := 0
	for _, e := range evs {
		recovered += len(w.attempts("tenant-a", e.ID)) - 2
	}
	assert.Equal(t, 1, recovered, "attempts recorded by the recovery")
}
