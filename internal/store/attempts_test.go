package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/event"
	itemattr "github.com/triggers-dev/triggers/internal/item"
	"github.com/triggers-dev/triggers/internal/store"
	"github.com/triggers-dev/triggers/schema"
)

// claim is a claim of attempt n to sub by owner at at, leased a minute.
func claim(sub string, n int, owner string, at time.Time) event.AttemptClaim {
	return event.AttemptClaim{SubscriptionID: sub, Number: n, Owner: owner, At: at, LeaseUntil: at.Add(time.Minute)}
}

// record claims and finishes attempt a in one go.
func record(t *testing.T, st *store.Store, tenant, eventID string, a event.Attempt, ttl int64) {
	t.Helper()
	at, err := time.Parse(time.RFC3339Nano, a.Timestamp)
	require.NoError(t, err)
	c := claim(a.SubscriptionID, a.Number, "owner-"+a.Timestamp, at)
	c.Round = a.Round
	_, claimed, err := st.ClaimAttempt(context.Background(), tenant, eventID, c, ttl)
	require.NoError(t, err)
	require.True(t, claimed)
	require.NoError(t, st.FinishAttempt(context.Background(), tenant, eventID, a, c.Owner))
}

// Attempts are listed in order per subscription and number, kept per
// tenant and event, read back with every field, and hidden once expired.
func TestAttempts(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table)
	ttl := time.Now().Add(time.Hour).Unix()
	a1 := event.Attempt{SubscriptionID: "sub_b", Number: 1, Timestamp: "2026-11-23T10:00:00.000000Z", Outcome: "failed",
		StatusCode: 500, LatencyMs: 12, Response: "boom", NextAttemptAt: "2026-11-23T10:00:05.000000Z"}
	a2 := event.Attempt{SubscriptionID: "sub_b", Number: 2, Timestamp: "2026-11-23T10:00:05.000000Z", Outcome: "delivered", StatusCode: 200, LatencyMs: 7}
	a10 := event.Attempt{SubscriptionID: "sub_b", Number: 10, Timestamp: "2026-11-23T11:00:00.000000Z", Outcome: "failed", Error: "dial tcp: refused", Round: "r1"}
	c1 := event.Attempt{SubscriptionID: "sub_a", Number: 1, Timestamp: "2026-11-23T10:00:01.000000Z", Outcome: "gone", StatusCode: 410}
	for _, a := range []event.Attempt{a10, a2, a1, c1} {
		record(t, st, "tenant-a", "evt_1", a, ttl)
	}
	record(t, st, "tenant-b", "evt_1", a1, ttl)
	require.NoError(t, st.MarkFollowUp(ctx, "tenant-a", "evt_1", "sub_b", 1, event.FollowUpQueued))
	require.NoError(t, st.MarkFollowUp(ctx, "tenant-a", "evt_1", "sub_b", 3, event.FollowUpDone), "an attempt that does not exist")

	got, err := st.ListAttempts(ctx, "tenant-a", "evt_1")
	require.NoError(t, err)
	for _, a := range []*event.Attempt{&a1, &a2, &a10, &c1} {
		a.Sends = 1
	}
	a1.FollowUp = event.FollowUpQueued
	assert.Equal(t, []event.Attempt{c1, a1, a2, a10}, got)
	got, err = st.ListAttempts(ctx, "tenant-a", "evt_2")
	require.NoError(t, err)
	assert.Equal(t, []event.Attempt{}, got)
	for _, it := range scan(t, table) {
		assert.Equal(t, fmt.Sprint(ttl), attrN(it, schema.AttrTTL), "attempts expire with the event")
		assert.False(t, contract.IsEventPartition(attrS(it, schema.AttrUserID)))
		assert.NotContains(t, it, "lease_until", "a finished attempt keeps no claim")
		if _, ok := it["outcome"]; ok {
			assert.Contains(t, it, "owner", "a finished attempt names its finisher (a lost answer's retry finds its own write)")
		}
	}
	assert.Len(t, scan(t, table), 10, "five attempts and their entries in their subscriptions' lists; MarkFollowUp of a missing attempt wrote nothing")

	at := func(sec int64) *store.Store {
		return store.New(db.Client, table, store.WithClock(func() time.Time { return time.Unix(sec, 0) }))
	}
	got, err = at(ttl).ListAttempts(ctx, "tenant-a", "evt_1")
	require.NoError(t, err)
	assert.Len(t, got, 4, "alive at the ttl second")
	got, err = at(ttl+1).ListAttempts(ctx, "tenant-a", "evt_1")
	require.NoError(t, err)
	assert.Empty(t, got)
}

// One attempt number is claimed by one owner at a time: a second claim
// under a live lease gets the pending attempt instead; after the lease a
// claim takes it over (one more send) and the first owner can no longer
// finish it; a finished attempt is never claimed again, nor finished
// otherwise.
func TestClaimAttempt(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table)
	ttl := time.Now().Add(time.Hour).Unix()
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

	c := claim("sub_a", 1, "first", t0)
	c.Round = "round-1"
	a, claimed, err := st.ClaimAttempt(ctx, "tenant-a", "evt_1", c, ttl)
	require.NoError(t, err)
	require.True(t, claimed)
	assert.Equal(t, event.Attempt{SubscriptionID: "sub_a", Number: 1, Timestamp: event.FormatTime(t0), Outcome: event.OutcomePending,
		Round: "round-1", Sends: 1, LeaseUntil: t0.Add(time.Minute)}, a)
	assert.False(t, a.Final())

	a, claimed, err = st.ClaimAttempt(ctx, "tenant-a", "evt_1", claim("sub_a", 1, "second", t0.Add(time.Minute)), ttl)
	require.NoError(t, err)
	assert.False(t, claimed, "the lease lasts up to its end")
	assert.Equal(t, event.OutcomePending, a.Outcome)
	assert.Equal(t, 1, a.Sends)

	a, claimed, err = st.ClaimAttempt(ctx, "tenant-a", "evt_1", claim("sub_a", 1, "second", t0.Add(time.Minute+time.Millisecond)), ttl)
	require.NoError(t, err)
	require.True(t, claimed, "taken over after the lease")
	assert.Equal(t, 2, a.Sends)
	assert.Equal(t, "round-1", a.Round, "the round of the first claim stays")
	assert.Equal(t, t0.Add(2*time.Minute+time.Millisecond), a.LeaseUntil)

	done := event.Attempt{SubscriptionID: "sub_a", Number: 1, Timestamp: event.FormatTime(t0.Add(time.Minute)), Outcome: "delivered", StatusCode: 204, LatencyMs: 3,
		URL: "https://hooks.example.com/in", ProbeCooldown: 2 * time.Minute}
	assert.ErrorIs(t, st.FinishAttempt(ctx, "tenant-a", "evt_1", done, "first"), event.ErrLeaseLost)
	require.NoError(t, st.FinishAttempt(ctx, "tenant-a", "evt_1", done, "second"))
	require.NoError(t, st.FinishAttempt(ctx, "tenant-a", "evt_1", done, "second"), "the same outcome again: the retry of a write whose answer was lost")
	other := done
	other.Outcome, other.Timestamp = "failed", event.FormatTime(t0.Add(2*time.Minute))
	assert.ErrorIs(t, st.FinishAttempt(ctx, "tenant-a", "evt_1", other, "second"), event.ErrLeaseLost, "finished once")

	a, claimed, err = st.ClaimAttempt(ctx, "tenant-a", "evt_1", claim("sub_a", 1, "third", t0.Add(time.Hour)), ttl)
	require.NoError(t, err)
	assert.False(t, claimed, "a finished attempt is final")
	assert.True(t, a.Final())
	done.Sends, done.Round = 2, "round-1"
	assert.Equal(t, done, a)
	assert.ErrorIs(t, st.FinishAttempt(ctx, "tenant-b", "evt_1", done, "second"), event.ErrLeaseLost, "another tenant's attempt does not exist")
}

// Settle changes the status only from the status given and only while no
// attempt newer than the latest ones given exists.
func TestSettle(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table)
	e := newEvent(t, "t", map[string]any{})
	require.NoError(t, st.Put(ctx, "tenant-a", e))
	ts := e.Timestamp
	a1 := event.Attempt{SubscriptionID: "sub_a", Number: 1, Timestamp: ts, Outcome: "failed"}
	b1 := event.Attempt{SubscriptionID: "sub_b", Number: 1, Timestamp: ts, Outcome: "delivered"}
	record(t, st, "tenant-a", e.ID, a1, e.TTL)
	record(t, st, "tenant-a", e.ID, b1, e.TTL)
	latest := []event.Attempt{a1, b1}

	var te *event.TransitionError
	require.ErrorAs(t, st.Settle(ctx, "tenant-a", e.ID, event.Failed, event.Retrying, latest), &te)
	assert.Equal(t, event.Received, te.From)
	require.NoError(t, st.Settle(ctx, "tenant-a", e.ID, event.Received, event.Failed, latest))
	got, err := st.Get(ctx, "tenant-a", e.ID)
	require.NoError(t, err)
	assert.Equal(t, event.Failed, got.Status)

	a2 := event.Attempt{SubscriptionID: "sub_a", Number: 2, Timestamp: ts, Outcome: "delivered"}
	record(t, st, "tenant-a", e.ID, a2, e.TTL)
	assert.ErrorIs(t, st.Settle(ctx, "tenant-a", e.ID, event.Failed, event.Retrying, latest), event.ErrStaleAttempts, "decided without sub_a's attempt 2")
	got, err = st.Get(ctx, "tenant-a", e.ID)
	require.NoError(t, err)
	assert.Equal(t, event.Failed, got.Status, "a stale decision changes nothing")
	assert.Equal(t, 0, got.RetryCount)

	latest = []event.Attempt{a2, b1}
	require.NoError(t, st.Settle(ctx, "tenant-a", e.ID, event.Failed, event.Retrying, latest))
	require.NoError(t, st.Settle(ctx, "tenant-a", e.ID, event.Retrying, event.Delivered, latest))
	got, err = st.Get(ctx, "tenant-a", e.ID)
	require.NoError(t, err)
	assert.Equal(t, event.Delivered, got.Status)
	assert.Equal(t, 1, got.RetryCount)

	assert.ErrorIs(t, st.Settle(ctx, "tenant-b", e.ID, event.Received, event.Delivered, nil), event.ErrNotFound)
	assert.ErrorIs(t, st.Settle(ctx, "tenant-a", "not-an-id", event.Received, event.Delivered, nil), event.ErrNotFound)
}

// An event attempted to more subscriptions over its life than a
// transaction can check (subscriptions come and go): Settle checks the
// attempts a concurrent next attempt can follow, one with a retry due and
// the most recently finished, whatever their subscription ids, and still
// settles when none has a next attempt.
func TestSettleManyLatest(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table)
	base := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	latestOf := func(e event.Event) []event.Attempt {
		latest := make([]event.Attempt, 120)
		for i := range latest {
			latest[i] = event.Attempt{SubscriptionID: fmt.Sprintf("sub_%03d", i), Number: 1,
				Timestamp: event.FormatTime(base), Outcome: event.OutcomeDelivered}
		}
		// Last by subscription id, so past the first 99: one failed long
		// ago with its retry due, one finished last.
		latest[110] = event.Attempt{SubscriptionID: "sub_110", Number: 1, Timestamp: event.FormatTime(base.Add(-time.Hour)),
			Outcome: event.OutcomeFailed, NextAttemptAt: event.FormatTime(base.Add(time.Minute))}
		latest[119].Timestamp = event.FormatTime(base.Add(time.Hour))
		return latest
	}
	for _, next := range []string{"sub_110", "sub_119"} {
		e := newEvent(t, "t", map[string]any{})
		require.NoError(t, st.Put(ctx, "tenant-a", e))
		record(t, st, "tenant-a", e.ID, event.Attempt{SubscriptionID: next, Number: 2, Timestamp: event.FormatTime(base.Add(2 * time.Hour)),
			Outcome: event.OutcomeDelivered}, e.TTL)
		assert.ErrorIs(t, st.Settle(ctx, "tenant-a", e.ID, event.Received, event.Delivered, latestOf(e)), event.ErrStaleAttempts,
			"decided without %s's attempt 2", next)
		got, err := st.Get(ctx, "tenant-a", e.ID)
		require.NoError(t, err)
		assert.Equal(t, event.Received, got.Status, "a stale decision changes nothing")
	}
	e := newEvent(t, "t", map[string]any{})
	require.NoError(t, st.Put(ctx, "tenant-a", e))
	latest := latestOf(e)
	require.NoError(t, st.Settle(ctx, "tenant-a", e.ID, event.Received, event.Delivered, latest))
	got, err := st.Get(ctx, "tenant-a", e.ID)
	require.NoError(t, err)
	assert.Equal(t, event.Delivered, got.Status)
	assert.Equal(t, "sub_000", latest[0].SubscriptionID, "the caller's slice is left as it was")
}

// A redelivery round starts once: the event moves from failed to
// retrying with the round's marker, from the retry_count it was asked
// for only.
func TestStartRedelivery(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	at := time.Date(2026, 11, 23, 10, 0, 0, 123456000, time.UTC)
	clock := at
	st := store.New(db.Client, table, store.WithClock(func() time.Time { return clock }))
	e := newEvent(t, "t", map[string]any{})
	require.NoError(t, st.Put(ctx, "tenant-a", e))

	var te *event.TransitionError
	require.ErrorAs(t, st.StartRedelivery(ctx, "tenant-a", e, "r1", at), &te, "a received event")
	assert.Equal(t, event.Received, te.From)
	failed, err := st.Transition(ctx, "tenant-a", e.ID, []event.Status{event.Received}, event.Failed)
	require.NoError(t, err)

	started, _, err := st.RedeliveryRound(ctx, "tenant-a", e.ID, "r1")
	require.NoError(t, err)
	assert.False(t, started)
	require.NoError(t, st.StartRedelivery(ctx, "tenant-a", failed, "r1", at))
	got, err := st.Get(ctx, "tenant-a", e.ID)
	require.NoError(t, err)
	assert.Equal(t, event.Retrying, got.Status)
	assert.Equal(t, 1, got.RetryCount)
	started, when, err := st.RedeliveryRound(ctx, "tenant-a", e.ID, "r1")
	require.NoError(t, err)
	assert.True(t, started)
	assert.Equal(t, at, when)

	assert.ErrorIs(t, st.StartRedelivery(ctx, "tenant-a", failed, "r1", at), event.ErrRoundStarted, "the same round again")
	require.ErrorAs(t, st.StartRedelivery(ctx, "tenant-a", failed, "r2", at), &te, "another round while retrying")
	assert.Equal(t, event.Retrying, te.From)
	_, err = st.Transition(ctx, "tenant-a", e.ID, []event.Status{event.Retrying}, event.Failed)
	require.NoError(t, err)
	assert.ErrorIs(t, st.StartRedelivery(ctx, "tenant-a", failed, "r2", at), event.ErrRoundSuperseded, "failed again, but after round r1")
	got, err = st.Get(ctx, "tenant-a", e.ID)
	require.NoError(t, err)
	assert.Equal(t, event.Failed, got.Status)
	assert.Equal(t, 1, got.RetryCount)

	attempts, err := st.ListAttempts(ctx, "tenant-a", e.ID)
	require.NoError(t, err)
	assert.Empty(t, attempts, "a round's marker is no attempt")

	// Round r1 runs until it is finished: settling waits for it.
	attempts, running, err := st.SettleAttempts(ctx, "tenant-a", e.ID)
	require.NoError(t, err)
	assert.Empty(t, attempts)
	assert.True(t, running, "r1 has not recorded its attempts")
	// It holds for RoundHold at most: a round whose task never runs (its
	// message dead-lettered, or handled by a dispatcher of the previous
	// version, which never finishes it) stops holding the event.
	clock = at.Add(contract.DefaultRoundHold - time.Second)
	_, running, err = st.SettleAttempts(ctx, "tenant-a", e.ID)
	require.NoError(t, err)
	assert.True(t, running)
	clock = at.Add(contract.DefaultRoundHold)
	_, running, err = st.SettleAttempts(ctx, "tenant-a", e.ID)
	require.NoError(t, err)
	assert.False(t, running, "the hold has ended")
	// A store with a longer hold (a retry queue whose tasks live longer)
	// writes a longer one.
	clock = at
	long := store.New(db.Client, table, store.WithClock(func() time.Time { return clock }), store.WithRoundHold(10*time.Hour))
	e2 := newEvent(t, "t", map[string]any{})
	require.NoError(t, long.Put(ctx, "tenant-a", e2))
	failed2, err := long.Transition(ctx, "tenant-a", e2.ID, []event.Status{event.Received}, event.Failed)
	require.NoError(t, err)
	require.NoError(t, long.StartRedelivery(ctx, "tenant-a", failed2, "r9", at))
	for _, c := range []struct {
		after   time.Duration
		running bool
	}{{9 * time.Hour, true}, {10 * time.Hour, false}} {
		clock = at.Add(c.after)
		_, running, err = long.SettleAttempts(ctx, "tenant-a", e2.ID)
		require.NoError(t, err)
		assert.Equal(t, c.running, running, "after %s", c.after)
	}
	clock = at
	require.NoError(t, st.FinishRound(ctx, "tenant-a", e.ID, "r1"))
	require.NoError(t, st.FinishRound(ctx, "tenant-a", e.ID, "r1"), "again")
	require.NoError(t, st.FinishRound(ctx, "tenant-a", e.ID, "rc0"), "a round without a marker")
	_, running, err = st.SettleAttempts(ctx, "tenant-a", e.ID)
	require.NoError(t, err)
	assert.False(t, running)
	started, _, err = st.RedeliveryRound(ctx, "tenant-a", e.ID, "r1")
	require.NoError(t, err)
	assert.True(t, started, "a finished round is still started")
	_, _, err = st.ClaimAttempt(ctx, "tenant-a", e.ID, event.AttemptClaim{SubscriptionID: "sub_a", Number: 1, Owner: "o", At: at, LeaseUntil: at.Add(time.Minute)}, e.TTL)
	require.NoError(t, err)
	attempts, running, err = st.SettleAttempts(ctx, "tenant-a", e.ID)
	require.NoError(t, err)
	assert.False(t, running)
	listed, err := st.ListAttempts(ctx, "tenant-a", e.ID)
	require.NoError(t, err)
	assert.Len(t, attempts, 1)
	assert.Equal(t, listed, attempts, "the attempts ListAttempts lists")

	assert.ErrorIs(t, st.StartRedelivery(ctx, "tenant-b", failed, "r3", at), event.ErrNotFound)
	assert.ErrorIs(t, st.StartRedelivery(ctx, "tenant-a", failed, "", at), event.ErrNotFound, "a round needs a name")
}

// A first round's hold: settles wait from HoldFirstRound until
// FinishRound(event.FirstRound), or until the round hold after it; holding
// again moves its end; the marker is no attempt, expires with the event
// and touches nothing else (a redelivery round of the event is its own).
func TestHoldFirstRound(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	at := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	clock := at
	st := store.New(db.Client, table, store.WithClock(func() time.Time { return clock }))
	e := newEvent(t, "t", map[string]any{})
	require.NoError(t, st.Put(ctx, "tenant-a", e))
	_, _, err := st.ClaimAttempt(ctx, "tenant-a", e.ID, claim("sub_a", 1, "o", at), e.TTL)
	require.NoError(t, err)

	_, running, err := st.SettleAttempts(ctx, "tenant-a", e.ID)
	require.NoError(t, err)
	assert.False(t, running, "no hold yet")
	require.NoError(t, st.HoldFirstRound(ctx, "tenant-a", e.ID, at, e.TTL))
	attempts, running, err := st.SettleAttempts(ctx, "tenant-a", e.ID)
	require.NoError(t, err)
	assert.True(t, running)
	assert.Len(t, attempts, 1, "the marker is no attempt")
	_, running, err = st.SettleAttempts(ctx, "tenant-b", e.ID)
	require.NoError(t, err)
	assert.False(t, running, "another tenant's event of the same id")

	// Held again an hour later (the round run again after a fault): the
	// hold ends a round hold after that.
	require.NoError(t, st.HoldFirstRound(ctx, "tenant-a", e.ID, at.Add(time.Hour), e.TTL))
	for _, c := range []struct {
		after   time.Duration
		running bool
	}{{contract.DefaultRoundHold, true}, {contract.DefaultRoundHold + time.Hour - time.Second, true}, {contract.DefaultRoundHold + time.Hour, false}} {
		clock = at.Add(c.after)
		_, running, err = st.SettleAttempts(ctx, "tenant-a", e.ID)
		require.NoError(t, err)
		assert.Equal(t, c.running, running, "after %s", c.after)
	}
	clock = at
	require.NoError(t, st.FinishRound(ctx, "tenant-a", e.ID, event.FirstRound))
	_, running, err = st.SettleAttempts(ctx, "tenant-a", e.ID)
	require.NoError(t, err)
	assert.False(t, running, "finished")
	require.NoError(t, st.HoldFirstRound(ctx, "tenant-a", e.ID, at, e.TTL))
	_, running, err = st.SettleAttempts(ctx, "tenant-a", e.ID)
	require.NoError(t, err)
	assert.True(t, running, "a copy of the round's message holds it again, until it finishes it in turn")

	var marker map[string]types.AttributeValue
	for _, it := range scan(t, table) {
		if itemattr.GetS(it, schema.AttrTimestampEventID) == "round#"+event.FirstRound {
			require.Nil(t, marker, "one marker")
			marker = it
		}
	}
	require.NotNil(t, marker)
	assert.Equal(t, e.TTL, itemattr.GetN(marker, schema.AttrTTL), "expires with its event")
	assert.Equal(t, contract.RecordTypeRedelivery, itemattr.GetS(marker, contract.AttrRecordType))
	started, _, err := st.RedeliveryRound(ctx, "tenant-a", e.ID, "r1")
	require.NoError(t, err)
	assert.False(t, started, "no redelivery round")
	got, err := st.Get(ctx, "tenant-a", e.ID)
	require.NoError(t, err)
	assert.Equal(t, event.Received, got.Status, "the event is left as it is")
}

// A scheduled attempt is recorded without being sent: it may be moved,
// then claimed (as a new attempt would be), never scheduled again once
// pending or finished.
func TestScheduleAttempt(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table)
	ttl := time.Now().Add(time.Hour).Unix()
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	sched := event.Attempt{SubscriptionID: "sub_a", Number: 1, Round: "r1", Timestamp: event.FormatTime(t0), NextAttemptAt: event.FormatTime(t0.Add(time.Minute))}

	a, ok, err := st.ScheduleAttempt(ctx, "tenant-a", "evt_1", sched, ttl)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, event.Attempt{SubscriptionID: "sub_a", Number: 1, Round: "r1", Timestamp: event.FormatTime(t0),
		Outcome: event.OutcomeScheduled, NextAttemptAt: event.FormatTime(t0.Add(time.Minute)), Deferrals: 1}, a)
	assert.False(t, a.Final())
	require.NoError(t, st.MarkFollowUp(ctx, "tenant-a", "evt_1", "sub_a", 1, event.FollowUpQueued))

	moved := sched
	moved.NextAttemptAt = event.FormatTime(t0.Add(2 * time.Minute))
	moved.Round = "r2"
	a, ok, err = st.ScheduleAttempt(ctx, "tenant-a", "evt_1", moved, ttl)
	require.NoError(t, err)
	require.True(t, ok, "a scheduled attempt may be moved")
	assert.Equal(t, moved.NextAttemptAt, a.NextAttemptAt)
	assert.Empty(t, a.FollowUp, "its task is to be queued again")
	assert.Equal(t, "r1", a.Round, "the first round stays")

	a, claimed, err := st.ClaimAttempt(ctx, "tenant-a", "evt_1", claim("sub_a", 1, "o", t0.Add(2*time.Minute)), ttl)
	require.NoError(t, err)
	require.True(t, claimed, "a scheduled attempt is claimed")
	assert.Equal(t, event.OutcomePending, a.Outcome)
	assert.Equal(t, 1, a.Sends)
	assert.Empty(t, a.NextAttemptAt, "claimed: no longer due later")
	assert.Equal(t, "r1", a.Round)

	a, ok, err = st.ScheduleAttempt(ctx, "tenant-a", "evt_1", moved, ttl)
	require.NoError(t, err)
	assert.False(t, ok, "a pending attempt is not scheduled")
	assert.Equal(t, event.OutcomePending, a.Outcome)
	require.NoError(t, st.FinishAttempt(ctx, "tenant-a", "evt_1", event.Attempt{SubscriptionID: "sub_a", Number: 1, Timestamp: moved.NextAttemptAt, Outcome: "delivered", StatusCode: 200}, "o"))
	a, ok, err = st.ScheduleAttempt(ctx, "tenant-a", "evt_1", moved, ttl)
	require.NoError(t, err)
	assert.False(t, ok, "a finished attempt is not scheduled")
	assert.Equal(t, "delivered", a.Outcome)
}

// A scheduled attempt's own follow-up is marked only while the attempt is
// scheduled as it was put off that time: a mark that comes late (the
// attempt put off again, claimed, or finished failed with a retry to
// queue) writes nothing, so a copy of a message does not take a follow-up
// that was never queued for queued (found by review: the retry was lost).
func TestMarkScheduledFollowUp(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table)
	ttl := time.Now().Add(time.Hour).Unix()
	t0 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	sched := event.Attempt{SubscriptionID: "sub_a", Number: 1, Timestamp: event.FormatTime(t0), NextAttemptAt: event.FormatTime(t0.Add(time.Minute))}
	followUp := func() string {
		t.Helper()
		as, err := st.ListAttempts(ctx, "tenant-a", "evt_1")
		require.NoError(t, err)
		require.Len(t, as, 1)
		return as[0].FollowUp
	}

	a, ok, err := st.ScheduleAttempt(ctx, "tenant-a", "evt_1", sched, ttl)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, 1, a.Deferrals)
	require.NoError(t, st.MarkScheduledFollowUp(ctx, "tenant-a", "evt_1", "sub_a", 1, 2))
	assert.Empty(t, followUp(), "another put-off's mark")
	require.NoError(t, st.MarkScheduledFollowUp(ctx, "tenant-a", "evt_1", "sub_a", 1, 0))
	assert.Empty(t, followUp(), "a mark without a count is for an attempt scheduled before counts")
	require.NoError(t, st.MarkScheduledFollowUp(ctx, "tenant-a", "evt_1", "sub_a", 1, 1))
	assert.Equal(t, event.FollowUpQueued, followUp())

	// Put off again: the first put-off's mark, late, marks nothing.
	sched.NextAttemptAt = event.FormatTime(t0.Add(2 * time.Minute))
	a, ok, err = st.ScheduleAttempt(ctx, "tenant-a", "evt_1", sched, ttl)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, 2, a.Deferrals)
	require.NoError(t, st.MarkScheduledFollowUp(ctx, "tenant-a", "evt_1", "sub_a", 1, 1))
	assert.Empty(t, followUp())

	// Claimed by its wake, then failed with a retry to queue: the
	// parker's mark, late, marks nothing either way.
	_, claimed, err := st.ClaimAttempt(ctx, "tenant-a", "evt_1", claim("sub_a", 1, "o", t0.Add(2*time.Minute)), ttl)
	require.NoError(t, err)
	require.True(t, claimed)
	require.NoError(t, st.MarkScheduledFollowUp(ctx, "tenant-a", "evt_1", "sub_a", 1, 2))
	assert.Empty(t, followUp(), "pending")
	require.NoError(t, st.FinishAttempt(ctx, "tenant-a", "evt_1", event.Attempt{SubscriptionID: "sub_a", Number: 1, Timestamp: event.FormatTime(t0.Add(2 * time.Minute)),
		Outcome: event.OutcomeFailed, StatusCode: 500, NextAttemptAt: event.FormatTime(t0.Add(3 * time.Minute))}, "o"))
	require.NoError(t, st.MarkScheduledFollowUp(ctx, "tenant-a", "evt_1", "sub_a", 1, 2))
	assert.Empty(t, followUp(), "failed: its retry is not queued yet")
	require.NoError(t, st.MarkFollowUp(ctx, "tenant-a", "evt_1", "sub_a", 1, event.FollowUpQueued))
	assert.Equal(t, event.FollowUpQueued, followUp(), "the failure's own mark, once its retry is queued")

	require.NoError(t, st.MarkScheduledFollowUp(ctx, "tenant-a", "evt_1", "sub_b", 1, 1), "an attempt that does not exist")
	assert.Len(t, scan(t, table), 2, "the attempt and its entry: the missing attempt's mark wrote nothing")
}

// A claim whose claimant died (its lease lapsed) may be scheduled instead
// of made, when its endpoint's circuit opened meanwhile; a live one may
// not.
func TestScheduleLapsedClaim(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table)
	ttl := time.Now().Add(time.Hour).Unix()
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	_, claimed, err := st.ClaimAttempt(ctx, "tenant-a", "evt_1", claim("sub_a", 1, "dead", t0), ttl)
	require.NoError(t, err)
	require.True(t, claimed)
	sched := event.Attempt{SubscriptionID: "sub_a", Number: 1, Timestamp: event.FormatTime(t0.Add(time.Minute)), NextAttemptAt: event.FormatTime(t0.Add(time.Hour))}
	a, ok, err := st.ScheduleAttempt(ctx, "tenant-a", "evt_1", sched, ttl)
	require.NoError(t, err)
	assert.False(t, ok, "the claim lasts up to its end")
	assert.Equal(t, event.OutcomePending, a.Outcome)
	sched.Timestamp = event.FormatTime(t0.Add(time.Minute + time.Millisecond))
	a, ok, err = st.ScheduleAttempt(ctx, "tenant-a", "evt_1", sched, ttl)
	require.NoError(t, err)
	require.True(t, ok, "a lapsed claim is scheduled")
	assert.Equal(t, event.OutcomeScheduled, a.Outcome)
	assert.Equal(t, 1, a.Sends, "its send stays counted")
	assert.True(t, a.LeaseUntil.IsZero())
	assert.ErrorIs(t, st.FinishAttempt(ctx, "tenant-a", "evt_1", event.Attempt{SubscriptionID: "sub_a", Number: 1, Outcome: "delivered"}, "dead"), event.ErrLeaseLost)
	_, _, err = st.ScheduleAttempt(ctx, "tenant-a", "evt_1", event.Attempt{SubscriptionID: "sub_a", Number: 1}, ttl)
	assert.ErrorContains(t, err, "timestamp")
}
