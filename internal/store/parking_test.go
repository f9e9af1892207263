package store_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/event"
	itemattr "github.com/triggers-dev/triggers/internal/item"
	"github.com/triggers-dev/triggers/internal/store"
	"github.com/triggers-dev/triggers/schema"
)

// Parked attempts live in their subscription's own partition, are listed
// in order up to a limit, are replaced by a new parking of the same
// attempt, and are removed only under the token they were read with.
func TestParkedAttempts(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table)
	require.NoError(t, st.CreateSubscription(ctx, "tenant-a", newSub("sub_a")))
	ttl := time.Now().Add(time.Hour).Unix()

	for _, p := range []event.Parked{{EventID: "e2", Number: 1, Token: "t1"}, {EventID: "e1", Number: 3, Token: "t2"}, {EventID: "e1", Number: 2, Token: "t3"}} {
		require.NoError(t, st.ParkAttempt(ctx, "tenant-a", "sub_a", p, ttl))
	}
	require.NoError(t, st.ParkAttempt(ctx, "tenant-b", "sub_a", event.Parked{EventID: "e9", Number: 1, Token: "x"}, ttl))
	require.NoError(t, st.ParkAttempt(ctx, "tenant-a", "sub_b", event.Parked{EventID: "e8", Number: 1, Token: "y"}, ttl))

	got, err := st.ListParked(ctx, "tenant-a", "sub_a", 10)
	require.NoError(t, err)
	assert.Equal(t, []event.Parked{{EventID: "e1", Number: 2, Token: "t3"}, {EventID: "e1", Number: 3, Token: "t2"}, {EventID: "e2", Number: 1, Token: "t1"}}, got)
	got, err = st.ListParked(ctx, "tenant-a", "sub_a", 2)
	require.NoError(t, err)
	assert.Len(t, got, 2)

	// Not in the subscriptions, not an event partition.
	subs, err := st.ListSubscriptions(ctx, "tenant-a")
	require.NoError(t, err)
	assert.Len(t, subs, 1)
	parked := 0
	for _, it := range scan(t, table) {
		if pk := itemattr.GetS(it, schema.AttrUserID); pk == contract.ParkedPrefix+"tenant-a#sub_a" {
			parked++
			assert.False(t, contract.IsEventPartition(pk))
			assert.Equal(t, contract.RecordTypeParked, itemattr.GetS(it, contract.AttrRecordType))
			assert.Equal(t, ttl, itemattr.GetN(it, schema.AttrTTL))
		}
	}
	assert.Equal(t, 3, parked)

	// Parked again: a new token; the old one no longer removes it.
	require.NoError(t, st.ParkAttempt(ctx, "tenant-a", "sub_a", event.Parked{EventID: "e2", Number: 1, Token: "t4"}, ttl))
	removed, err := st.UnparkAttempt(ctx, "tenant-a", "sub_a", event.Parked{EventID: "e2", Number: 1, Token: "t1"})
	require.NoError(t, err)
	assert.False(t, removed)
	removed, err = st.UnparkAttempt(ctx, "tenant-a", "sub_a", event.Parked{EventID: "e2", Number: 1, Token: "t4"})
	require.NoError(t, err)
	assert.True(t, removed)
	removed, err = st.UnparkAttempt(ctx, "tenant-a", "sub_a", event.Parked{EventID: "e2", Number: 1, Token: "t4"})
	require.NoError(t, err)
	assert.True(t, removed, "gone (another wake removed it): no longer parked, not parked again")
	got, err = st.ListParked(ctx, "tenant-a", "sub_a", 10)
	require.NoError(t, err)
	assert.Equal(t, []event.Parked{{EventID: "e1", Number: 2, Token: "t3"}, {EventID: "e1", Number: 3, Token: "t2"}}, got)
}

// The wake marker: a pending claim is taken over by anyone; a confirmed,
// live one refuses other claims (except its owner's successor) and other
// owners' takes; once no longer live anyone takes it over; its own wake
// takes it; a confirmation after the take fails; a subscription that is
// gone is reported.
func TestWakeMarker(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table)
	require.NoError(t, st.CreateSubscription(ctx, "tenant-a", newSub("sub_a")))
	now := time.Unix(1_900_000_000, 0)
	until := now.Add(time.Minute)
	claimAs := func(owner, prev string, standby bool, at time.Time) bool {
		t.Helper()
		ok, err := st.ClaimWake(ctx, "tenant-a", "sub_a", owner, prev, standby, until, at)
		require.NoError(t, err)
		return ok
	}
	claim := func(owner, prev string, at time.Time) bool {
		t.Helper()
		return claimAs(owner, prev, false, at)
	}
	confirm := func(owner string) bool {
		t.Helper()
		ok, err := st.ConfirmWake(ctx, "tenant-a", "sub_a", owner)
		require.NoError(t, err)
		return ok
	}
	take := func(owner string, at time.Time) bool {
		t.Helper()
		ok, err := st.TakeWake(ctx, "tenant-a", "sub_a", owner, at)
		require.NoError(t, err)
		return ok
	}

	// The subscription as read says whether a wake is queued: a
	// confirmed marker's end (WakeQueuedUntil), from a single read and
	// from the list.
	queued := func() time.Time {
		t.Helper()
		sub, err := st.GetSubscription(ctx, "tenant-a", "sub_a")
		require.NoError(t, err)
		all, err := st.ListSubscriptions(ctx, "tenant-a")
		require.NoError(t, err)
		require.Len(t, all, 1)
		assert.Equal(t, sub.WakeQueuedUntil, all[0].WakeQueuedUntil, "the list and the single read agree")
		return sub.WakeQueuedUntil
	}
	assert.True(t, queued().IsZero(), "no marker")
	assert.True(t, claim("a", "", now), "no marker: claimed")
	assert.True(t, queued().IsZero(), "a pending marker is not a wake queued")
	assert.True(t, claim("b", "", now), "a's claim is only pending: taken over")
	assert.False(t, confirm("a"), "a lost its claim")
	assert.True(t, confirm("b"))
	assert.Equal(t, until.UTC(), queued(), "b's wake is queued")
	assert.False(t, confirm("b"), "confirmed once")
	assert.False(t, claim("c", "", now), "b's confirmed marker is live")
	assert.False(t, claim("c", "a", now), "c does not succeed b")
	assert.False(t, take("c", now), "c's wake may not take b's live marker")
	assert.True(t, claim("b2", "b", now), "b's wake hands over to b2")
	assert.True(t, confirm("b2"))
	assert.False(t, claim("c", "", until), "live up to its until")
	assert.True(t, claim("c", "", until.Add(time.Millisecond)), "no longer live: taken over")
	assert.True(t, confirm("c"))
	assert.True(t, take("c", now), "its own wake takes it")
	assert.True(t, queued().IsZero(), "taken: no wake queued")
	assert.False(t, confirm("c"), "taken: confirming again fails")
	assert.True(t, take("d", now), "no marker: anyone's wake runs")
	assert.True(t, claim("e", "", now))
	assert.True(t, take("f", now), "e's marker is pending: f's wake runs, and takes it")
	assert.False(t, confirm("e"), "e's wake is one more, not the marker's")
	assert.True(t, claim("g", "", now))
	assert.True(t, confirm("g"))
	assert.True(t, take("h", until.Add(time.Millisecond)), "g's marker has lapsed")

	// A standby wake's marker: confirmed, it says a wake is queued and
	// refuses another wake's take, but any other claim replaces it,
	// standby or not; a standby claim is refused by a confirmed marker
	// that is not one.
	assert.True(t, claimAs("s1", "", true, now))
	assert.True(t, confirm("s1"))
	assert.Equal(t, until.UTC(), queued(), "a standby wake is queued")
	assert.False(t, take("x", now), "another wake does not take a standby's live marker")
	assert.True(t, claimAs("s2", "", true, now), "a standby replaces a standby")
	assert.True(t, confirm("s2"))
	assert.True(t, claim("j", "", now), "any wake replaces a standby")
	assert.True(t, confirm("j"))
	assert.False(t, claimAs("s3", "", true, now), "j's confirmed marker refuses a standby")
	assert.False(t, claim("k", "", now), "j's marker is no standby: the standby's mark went with it")
	assert.False(t, take("s2", now), "the replaced standby's wake stops at j's marker")
	assert.True(t, take("j", now))
	assert.True(t, claimAs("s4", "", true, now))
	assert.True(t, confirm("s4"))
	assert.True(t, take("s4", now), "a standby's own wake takes it")
	assert.True(t, claim("l", "", now))
	assert.True(t, confirm("l"))
	assert.False(t, claim("m", "", now), "taken with its marker: the standby's mark is gone")
	assert.True(t, take("l", now))

	// An earlier wake (a delivery closed the circuit) replaces only a
	// confirmed, live marker of a wake due later than it says; its own
	// marker is pending, for ConfirmWake; the replaced wake stops at it.
	earlier := func(owner string, ownUntil, after time.Time) bool {
		t.Helper()
		ok, err := st.ClaimEarlierWake(ctx, "tenant-a", "sub_a", owner, ownUntil, after)
		require.NoError(t, err)
		return ok
	}
	soon := now.Add(10 * time.Second)
	assert.False(t, earlier("n1", soon, soon), "no marker: no wake is queued, nothing to bring forward")
	assert.True(t, claim("p", "", now))
	assert.False(t, earlier("n1", soon, soon), "a pending marker: its wake is being sent")
	assert.True(t, confirm("p"))
	assert.False(t, earlier("n1", until, until), "p's wake is due no later")
	assert.False(t, earlier("n1", soon, until), "nor later than after says")
	assert.True(t, earlier("n1", soon, until.Add(-time.Millisecond)), "p's wake is due later: replaced")
	assert.True(t, queued().IsZero(), "n1's marker is pending until confirmed")
	assert.False(t, earlier("n2", now, now), "nor does a pending marker get replaced by another earlier wake")
	assert.True(t, confirm("n1"))
	assert.Equal(t, soon.UTC(), queued())
	assert.False(t, take("p", now), "the replaced wake stops at n1's marker")
	assert.True(t, take("n1", now))
	assert.True(t, take("p", now), "n1's wake has started: p's runs after it")
	assert.True(t, claimAs("s5", "", true, now))
	assert.True(t, confirm("s5"))
	assert.False(t, earlier("n3", now, now), "a standby's marker: the attempts are being made")
	assert.True(t, take("s5", now))
	assert.True(t, claim("q", "", now))
	assert.True(t, confirm("q"))
	assert.False(t, earlier("n3", now, now.Add(2*time.Minute)), "q's wake is due before after")
	assert.True(t, take("q", now))

	// The marker is not part of the subscription's API form.
	require.True(t, claim("i", "", now))
	require.True(t, confirm("i"))
	sub, err := st.GetSubscription(ctx, "tenant-a", "sub_a")
	require.NoError(t, err)
	require.False(t, sub.WakeQueuedUntil.IsZero())
	form, err := json.Marshal(sub)
	require.NoError(t, err)
	assert.NotContains(t, string(form), "wake")
	assert.Equal(t, "https://hooks.example.com/sub_a", sub.URL)

	// Gone: reported by ClaimWake (nothing created), nothing to take.
	require.NoError(t, st.DeleteSubscription(ctx, "tenant-a", "sub_a"))
	ok, err := st.ClaimWake(ctx, "tenant-a", "sub_a", "a", "", false, until, now)
	assert.ErrorIs(t, err, event.ErrSubscriptionNotFound)
	assert.False(t, ok)
	ok, err = st.ClaimWake(ctx, "tenant-a", contract.SubscriptionCountKey, "a", "", false, until, now)
	assert.ErrorIs(t, err, event.ErrSubscriptionNotFound, "the counter is not a subscription")
	assert.False(t, ok)
	ok, err = st.ClaimEarlierWake(ctx, "tenant-a", "sub_a", "a", until, until)
	assert.ErrorIs(t, err, event.ErrSubscriptionNotFound)
	assert.False(t, ok)
	assert.False(t, confirm("a"))
	assert.True(t, take("a", now))
	_, err = st.GetSubscription(ctx, "tenant-a", "sub_a")
	assert.ErrorIs(t, err, event.ErrSubscriptionNotFound, "nothing was created")
	assert.Len(t, scan(t, table), 1, "only the counter is left")
}

// Re-enabling a subscription clears its wake marker: a wake that ran while
// it was disabled left its confirmed marker live, and an attempt parked
// behind the re-enabled subscription's probe must be able to claim a
// wake of its own.
func TestReenableClearsTheWakeMarker(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table)
	require.NoError(t, st.CreateSubscription(ctx, "tenant-a", newSub("sub_a")))
	now := time.Unix(1_900_000_000, 0)
	until := now.Add(5 * time.Minute)
	ok, err := st.ClaimWake(ctx, "tenant-a", "sub_a", "old", "", false, until, now)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = st.ConfirmWake(ctx, "tenant-a", "sub_a", "old")
	require.NoError(t, err)
	require.True(t, ok)
	_, err = st.UpdateSubscription(ctx, "tenant-a", "sub_a", event.SubscriptionPatch{Disabled: aws.Bool(true)}, now)
	require.NoError(t, err)
	ok, err = st.ClaimWake(ctx, "tenant-a", "sub_a", "new", "", false, until, now)
	require.NoError(t, err)
	require.False(t, ok, "disabling leaves the live marker")

	_, err = st.UpdateSubscription(ctx, "tenant-a", "sub_a", event.SubscriptionPatch{Disabled: aws.Bool(false)}, now)
	require.NoError(t, err)
	ok, err = st.ClaimWake(ctx, "tenant-a", "sub_a", "new", "", false, until, now)
	require.NoError(t, err)
	assert.True(t, ok, "re-enabled: the parked attempt's wake is claimed")
}
