package store_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/store"
	"github.com/triggers-dev/triggers/schema"
)

// The slow lane's cap holds under 25 concurrent acquirers: exactly cap of
// them get a slot, and once they release, as many others do.
func TestSlowLaneCapUnderConcurrency(t *testing.T) {
	ctx := context.Background()
	st := store.New(db.Client, db.CreateTable(t, schema.Events()))
	now := time.Now()
	const limit, acquirers = 4, 25
	var got atomic.Int32
	var mu sync.Mutex
	var holders []string
	var wg sync.WaitGroup
	for i := range acquirers {
		wg.Go(func() {
			token := "h" + strconv.Itoa(i)
			ok, err := st.AcquireSlowSlot(ctx, "tenant-a", token, now, now.Add(time.Minute), limit)
			assert.NoError(t, err)
			if ok {
				got.Add(1)
				mu.Lock()
				holders = append(holders, token)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.EqualValues(t, limit, got.Load(), "AcquireSlowSlot: %d of %d concurrent acquirers got a slot, want the cap %d", got.Load(), acquirers, limit)

	// Another tenant's lane is its own.
	ok, err := st.AcquireSlowSlot(ctx, "tenant-b", "b1", now, now.Add(time.Minute), limit)
	require.NoError(t, err)
	assert.True(t, ok, "tenant-b's first acquirer was refused: the lanes are not per tenant")

	// A full lane refuses; a release makes room for one.
	ok, err = st.AcquireSlowSlot(ctx, "tenant-a", "late", now, now.Add(time.Minute), limit)
	require.NoError(t, err)
	assert.False(t, ok, "a fifth holder got a slot of a lane of %d", limit)
	require.NoError(t, st.ReleaseSlowSlot(ctx, "tenant-a", holders[0]))
	ok, err = st.AcquireSlowSlot(ctx, "tenant-a", "late", now, now.Add(time.Minute), limit)
	require.NoError(t, err)
	assert.True(t, ok, "no slot after a release")
	ok, err = st.AcquireSlowSlot(ctx, "tenant-a", "later", now, now.Add(time.Minute), limit)
	require.NoError(t, err)
	assert.False(t, ok, "one release gave two slots")
}

// Holders whose hold ended (their instance died before releasing) are
// reclaimed by the next acquirer, once the skew margin has passed too;
// live holders are kept.
func TestSlowLaneReclaimsExpiredHolders(t *testing.T) {
	ctx := context.Background()
	st := store.New(db.Client, db.CreateTable(t, schema.Events()))
	now := time.Now()
	for i, hold := range []time.Duration{time.Second, time.Second, time.Minute} {
		ok, err := st.AcquireSlowSlot(ctx, "tenant-a", "h"+strconv.Itoa(i), now, now.Add(hold), 3)
		require.NoError(t, err)
		require.True(t, ok)
	}
	ok, err := st.AcquireSlowSlot(ctx, "tenant-a", "early", now, now.Add(time.Minute), 3)
	require.NoError(t, err)
	assert.False(t, ok, "a slot while every hold runs")

	later := now.Add(time.Second + event.HoldSkewMargin) // h0 and h1 ended (with the skew margin), h2 holds
	for _, tok := range []string{"x", "y"} {
		ok, err := st.AcquireSlowSlot(ctx, "tenant-a", tok, later, later.Add(time.Minute), 3)
		require.NoError(t, err)
		assert.True(t, ok, "AcquireSlowSlot(%s) after two holds ended = false, want a reclaimed slot", tok)
	}
	ok, err = st.AcquireSlowSlot(ctx, "tenant-a", "z", later, later.Add(time.Minute), 3)
	require.NoError(t, err)
	assert.False(t, ok, "the live holder h2 was reclaimed too")

	// h2 still holds: its release frees a slot.
	require.NoError(t, st.ReleaseSlowSlot(ctx, "tenant-a", "h2"))
	ok, err = st.AcquireSlowSlot(ctx, "tenant-a", "z", later, later.Add(time.Minute), 3)
	require.NoError(t, err)
	assert.True(t, ok)
}

// A deployment that changes the lane's limit (SlowLane.TenantConcurrency)
// while holds taken under the old one are in place: lowered, a taker is
// refused while the holds still running fill the new limit, whatever
// holds ended (reclaiming them would not make room), and the ended ones
// are reclaimed once the running ones are released; raised, the new room
// is taken at once. The running holds never exceed the limit the taker
// asks with.
func TestSlowLaneReclaimWithAChangedLimit(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table)
	holders := func() []string {
		t.Helper()
		item := laneItem(t, table, "tenant-a")
		m, ok := item["holders"].(*types.AttributeValueMemberM)
		require.True(t, ok, "the lane item has no holders: %v", item)
		return slices.Sorted(maps.Keys(m.Value))
	}
	now := time.Now()
	// Under a limit of 4: two holds of a second (they end), two of a minute.
	for i, hold := range []time.Duration{time.Second, time.Second, time.Minute, time.Minute} {
		ok, err := st.AcquireSlowSlot(ctx, "tenant-a", "h"+strconv.Itoa(i), now, now.Add(hold), 4)
		require.NoError(t, err)
		require.True(t, ok)
	}
	later := now.Add(time.Second + event.HoldSkewMargin) // h0 and h1 reclaimable, h2 and h3 running
	take := func(token string, limit int) bool {
		t.Helper()
		ok, err := st.AcquireSlowSlot(ctx, "tenant-a", token, later, later.Add(time.Minute), limit)
		require.NoError(t, err)
		return ok
	}

	// Lowered to 2: h2 and h3 fill it.
	assert.False(t, take("low", 2), "a slot under a limit of 2 while 2 holds run")
	assert.Equal(t, []string{"h0", "h1", "h2", "h3"}, holders(), "the refused taker changed the holders")

	// h2 and h3 end their requests: the ended holds are reclaimed, and
	// the new limit holds.
	require.NoError(t, st.ReleaseSlowSlot(ctx, "tenant-a", "h2"))
	require.NoError(t, st.ReleaseSlowSlot(ctx, "tenant-a", "h3"))
	for _, tok := range []string{"a", "b"} {
		assert.True(t, take(tok, 2), "AcquireSlowSlot(%s) under a limit of 2 with only ended holds = false", tok)
	}
	assert.False(t, take("c", 2), "a third running hold under a limit of 2")
	assert.Equal(t, []string{"a", "b"}, holders(), "the ended holds h0, h1 were not reclaimed")

	// Raised to 4: two more at once, then full.
	for _, tok := range []string{"c", "d"} {
		assert.True(t, take(tok, 4), "AcquireSlowSlot(%s) after the limit was raised to 4 = false", tok)
	}
	assert.False(t, take("e", 4), "a fifth running hold under a limit of 4")
	assert.Equal(t, []string{"a", "b", "c", "d"}, holders())
}

// Reclaiming holds that ended keeps the cap under concurrency too: 25
// acquirers that all find the same ended holds take exactly the cap's
// slots between them. Each removal is conditional on the hold still being
// the one read; without that, acquirers removing the same ended hold each
// added a holder (a mutant weakening it lived, 2026-11-27).
func TestSlowLaneReclaimUnderConcurrency(t *testing.T) {
	ctx := context.Background()
	st := store.New(db.Client, db.CreateTable(t, schema.Events()))
	now := time.Now()
	const limit, acquirers = 4, 25
	for i := range limit {
		ok, err := st.AcquireSlowSlot(ctx, "tenant-a", "dead"+strconv.Itoa(i), now, now.Add(time.Second), limit)
		require.NoError(t, err)
		require.True(t, ok)
	}
	later := now.Add(time.Second + event.HoldSkewMargin) // every hold ended
	var got atomic.Int32
	var wg sync.WaitGroup
	for i := range acquirers {
		wg.Go(func() {
			ok, err := st.AcquireSlowSlot(ctx, "tenant-a", "h"+strconv.Itoa(i), later, later.Add(time.Minute), limit)
			assert.NoError(t, err)
			if ok {
				got.Add(1)
			}
		})
	}
	wg.Wait()
	assert.EqualValues(t, limit, got.Load(), "AcquireSlowSlot: %d of %d concurrent acquirers got a slot of a lane of %d whose holds had all ended, want the cap", got.Load(), acquirers, limit)
	ok, err := st.AcquireSlowSlot(ctx, "tenant-a", "late", later, later.Add(time.Minute), limit)
	require.NoError(t, err)
	assert.False(t, ok, "a later acquirer got a slot of the full lane")
}

// The lane item expires (ttl, epoch seconds) a day (slowLaneIdle) after
// the hold its latest write took, by every way a slot is taken (the lane
// started, a free slot, a reclaimed one): kept while in use, gone a day
// after the tenant's endpoints stopped being slow.
func TestSlowLaneItemExpiresADayAfterItsLatestHold(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table)
	ttl := func() int64 {
		t.Helper()
		item := laneItem(t, table, "tenant-a")
		v, ok := item[schema.AttrTTL].(*types.AttributeValueMemberN)
		require.True(t, ok, "the lane item has no ttl: %v", item)
		n, err := strconv.ParseInt(v.Value, 10, 64)
		require.NoError(t, err)
		return n
	}
	now := time.Now()
	for _, step := range []struct {
		name  string
		at    time.Time
		until time.Time
	}{
		{"the lane started", now, now.Add(time.Minute)},
		{"a free slot", now, now.Add(time.Hour)},
		{"a reclaimed slot", now.Add(time.Minute + event.HoldSkewMargin), now.Add(2 * time.Hour)},
	} {
		ok, err := st.AcquireSlowSlot(ctx, "tenant-a", step.name, step.at, step.until, 2)
		require.NoError(t, err)
		require.True(t, ok, step.name)
		assert.Equal(t, step.until.Add(24*time.Hour).Unix(), ttl(), "%s: the lane's ttl is not a day past the hold taken", step.name)
	}
}

// laneItem reads tenant's slow-lane item in table (a consistent read).
func laneItem(t *testing.T, table, tenant string) map[string]types.AttributeValue {
	t.Helper()
	out, err := db.Client.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true), Key: map[string]types.AttributeValue{
		schema.AttrUserID:           &types.AttributeValueMemberS{Value: contract.SlowLanePrefix + tenant},
		schema.AttrTimestampEventID: &types.AttributeValueMemberS{Value: contract.SlowLaneKey},
	}})
	require.NoError(t, err)
	return out.Item
}

// A hold is reclaimed only once its end plus event.HoldSkewMargin has
// passed by the acquirer's clock: its holder bounds its request by the
// end on its own clock, which may run behind the acquirer's. Before, a
// hold that had ended by the acquirer's clock was reclaimed at once, so
// an acquirer whose clock ran 1 s ahead took the slot of a request still
// in flight for up to 1 s, and the tenant had one more request at once
// than its lane.
func TestSlowLaneReclaimsOnlyPastTheSkewMargin(t *testing.T) {
	ctx := context.Background()
	st := store.New(db.Client, db.CreateTable(t, schema.Events()))
	now := time.Now().UTC().Truncate(time.Millisecond)
	end := now.Add(13 * time.Second)
	ok, err := st.AcquireSlowSlot(ctx, "tenant-a", "holder", now, end, 1)
	require.NoError(t, err)
	require.True(t, ok)
	for _, past := range []time.Duration{0, time.Second, event.HoldSkewMargin - time.Millisecond} {
		at := end.Add(past)
		ok, err := st.AcquireSlowSlot(ctx, "tenant-a", "early", at, at.Add(13*time.Second), 1)
		require.NoError(t, err)
		assert.False(t, ok, "AcquireSlowSlot %v after the hold's end = true, want false: reclaimed within the skew margin %v", past, event.HoldSkewMargin)
	}
	at := end.Add(event.HoldSkewMargin)
	ok, err = st.AcquireSlowSlot(ctx, "tenant-a", "late", at, at.Add(13*time.Second), 1)
	require.NoError(t, err)
	assert.True(t, ok, "AcquireSlowSlot the skew margin %v after the hold's end = false, want the slot reclaimed", event.HoldSkewMargin)
	ok, err = st.AcquireSlowSlot(ctx, "tenant-a", "later", at, at.Add(13*time.Second), 1)
	require.NoError(t, err)
	assert.False(t, ok, "the reclaimed slot was given twice")
}

// Releasing a token that holds nothing changes nothing and is no error:
// on a tenant without a lane, and on a full lane.
func TestSlowLaneReleaseOfATokenNotHeld(t *testing.T) {
	ctx := context.Background()
	st := store.New(db.Client, db.CreateTable(t, schema.Events()))
	now := time.Now()
	require.NoError(t, st.ReleaseSlowSlot(ctx, "tenant-a", "nobody"), "release on a tenant without a lane")
	for _, tok := range []string{"a", "b"} {
		ok, err := st.AcquireSlowSlot(ctx, "tenant-a", tok, now, now.Add(time.Minute), 2)
		require.NoError(t, err)
		require.True(t, ok)
	}
	require.NoError(t, st.ReleaseSlowSlot(ctx, "tenant-a", "nobody"))
	ok, err := st.AcquireSlowSlot(ctx, "tenant-a", "c", now, now.Add(time.Minute), 2)
	require.NoError(t, err)
	assert.False(t, ok, "releasing a token not held freed a slot")
	require.NoError(t, st.ReleaseSlowSlot(ctx, "tenant-a", "a"))
	require.NoError(t, st.ReleaseSlowSlot(ctx, "tenant-a", "a"), "a second release of the same token")
	ok, err = st.AcquireSlowSlot(ctx, "tenant-a", "c", now, now.Add(time.Minute), 2)
	require.NoError(t, err)
	assert.True(t, ok)
}

// MarkSlow marks the subscription only on the server the slow request
// went to, only later, and a move to another server clears the mark.
func TestMarkSlow(t *testing.T) {
	ctx := context.Background()
	st := store.New(db.Client, db.CreateTable(t, schema.Events()))
	sub := newSub("sub_slow")
	require.NoError(t, st.CreateSubscription(ctx, "tenant-a", sub))
	get := func() event.Subscription {
		t.Helper()
		got, err := st.GetSubscription(ctx, "tenant-a", sub.ID)
		require.NoError(t, err)
		return got
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	require.NoError(t, st.MarkSlow(ctx, "tenant-a", sub.ID, sub.URL, now.Add(10*time.Minute)))
	assert.True(t, get().SlowUntil.Equal(now.Add(10*time.Minute)), "SlowUntil = %v", get().SlowUntil)
	// An earlier mark does not shorten it.
	require.NoError(t, st.MarkSlow(ctx, "tenant-a", sub.ID, sub.URL, now.Add(time.Minute)))
	assert.True(t, get().SlowUntil.Equal(now.Add(10*time.Minute)), "an earlier mark moved SlowUntil to %v", get().SlowUntil)
	// Another path of the same server counts.
	require.NoError(t, st.MarkSlow(ctx, "tenant-a", sub.ID, sub.URL+"?other", now.Add(20*time.Minute)))
	assert.True(t, get().SlowUntil.Equal(now.Add(20*time.Minute)), "SlowUntil = %v", get().SlowUntil)

	// Moved to another server: the mark goes, and the old server's slow
	// answer does not mark the new one.
	moved := "https://elsewhere.example.com/hook"
	_, err := st.UpdateSubscription(ctx, "tenant-a", sub.ID, event.SubscriptionPatch{URL: &moved}, now)
	require.NoError(t, err)
	assert.True(t, get().SlowUntil.IsZero(), "a move to another server kept the slow mark %v", get().SlowUntil)
	require.NoError(t, st.MarkSlow(ctx, "tenant-a", sub.ID, sub.URL, now.Add(30*time.Minute)))
	assert.True(t, get().SlowUntil.IsZero(), "the server the subscription left marked it slow until %v", get().SlowUntil)

	// Gone: no error, and nothing written, whatever the url (an empty
	// one matches any server).
	for _, url := range []string{sub.URL, ""} {
		require.NoError(t, st.MarkSlow(ctx, "tenant-a", "sub_none", url, now.Add(time.Minute)))
		_, err := st.GetSubscription(ctx, "tenant-a", "sub_none")
		assert.ErrorIs(t, err, event.ErrSubscriptionNotFound, "MarkSlow(%q) of a subscription that is gone wrote an item", url)
	}
}

// ScheduleAttempt counts the times an attempt was put off.
func TestScheduleAttemptCountsDeferrals(t *testing.T) {
	ctx := context.Background()
	st := store.New(db.Client, db.CreateTable(t, schema.Events()))
	now := time.Now().UTC()
	for i := 1; i <= 3; i++ {
		a, ok, err := st.ScheduleAttempt(ctx, "tenant-a", "ev1", event.Attempt{
			SubscriptionID: "sub_x", Number: 1, Timestamp: event.FormatTime(now), NextAttemptAt: event.FormatTime(now.Add(time.Second)),
		}, now.Add(time.Hour).Unix())
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, i, a.Deferrals, "ScheduleAttempt #%d: Deferrals", i)
	}
}

// A subscription waiting for a turn in its tenant's slow lane is one
// record per subscription: a later refusal replaces it, removal needs the
// owner it names (a later wake's record stays), and a record past its
// lapse is not listed; its Since is read back to the millisecond. Other
// tenants' waiters and the lane's own item are apart.
func TestLaneWaiters(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table)
	now := time.Now()
	ok, err := st.AcquireSlowSlot(ctx, "tenant-a", "h", now, now.Add(time.Minute), 1)
	require.NoError(t, err)
	require.True(t, ok)
	// Each record is written at its own moment (its Since, unless kept).
	at := now.Truncate(time.Millisecond).UTC()
	since := map[string]time.Time{} // by owner: the Since it was written with
	add := func(tenant, sub, owner string, refused int, until time.Time) {
		t.Helper()
		at = at.Add(time.Second)
		since[owner] = at
		require.NoError(t, st.AddLaneWaiter(ctx, tenant, event.LaneWaiter{SubscriptionID: sub, Owner: owner, Refused: refused, Since: at}, until))
	}
	w := func(sub, owner string, refused int) event.LaneWaiter {
		return event.LaneWaiter{SubscriptionID: sub, Owner: owner, Refused: refused, Since: since[owner]}
	}
	list := func(tenant string, limit int) []event.LaneWaiter {
		t.Helper()
		ws, err := st.LaneWaiters(ctx, tenant, now, limit)
		require.NoError(t, err)
		return ws
	}
	assert.Empty(t, list("tenant-a", 10), "waiters before any")

	add("tenant-a", "sub-b", "o1", 1, now.Add(time.Minute))
	add("tenant-a", "sub-a", "o2", 3, now.Add(time.Minute))
	add("tenant-a", "sub-c", "o3", 2, now.Add(-time.Second)) // lapsed
	add("tenant-b", "sub-z", "o4", 1, now.Add(time.Minute))
	assert.Equal(t, []event.LaneWaiter{w("sub-a", "o2", 3), w("sub-b", "o1", 1)}, list("tenant-a", 10))
	assert.Equal(t, []event.LaneWaiter{w("sub-z", "o4", 1)}, list("tenant-b", 10))
	assert.Len(t, list("tenant-a", 1), 1, "the limit")

	// Lapsed records (of subscriptions deleted since, say) ahead of a live
	// one by subscription id do not hide it, however many.
	for i := range 30 {
		add("tenant-c", fmt.Sprintf("old-%02d", i), "o", 1, now.Add(-time.Minute))
	}
	add("tenant-c", "zz-live", "o6", 1, now.Add(time.Minute))
	assert.Equal(t, []event.LaneWaiter{w("zz-live", "o6", 1)}, list("tenant-c", 25), "a live waiter behind 30 lapsed records")

	add("tenant-a", "sub-b", "o5", 2, now.Add(time.Minute)) // refused again: a new wake
	require.NoError(t, st.RemoveLaneWaiter(ctx, "tenant-a", "sub-b", "o1"))
	assert.Equal(t, []event.LaneWaiter{w("sub-a", "o2", 3), w("sub-b", "o5", 2)}, list("tenant-a", 10), "the older owner removed the newer record")
	add("tenant-a", "sub-a", "o7", 1, now.Add(time.Minute))
	assert.Equal(t, []event.LaneWaiter{w("sub-a", "o7", 1), w("sub-b", "o5", 2)}, list("tenant-a", 10), "the record holds what was written last")
	add("tenant-a", "sub-a", "o2", 3, now.Add(time.Minute))
	require.NoError(t, st.RemoveLaneWaiter(ctx, "tenant-a", "sub-b", "o5"))
	require.NoError(t, st.RemoveLaneWaiter(ctx, "tenant-a", "sub-x", "o9"), "removing a record that is not there")
	assert.Equal(t, []event.LaneWaiter{w("sub-a", "o2", 3)}, list("tenant-a", 10))

	// The lane itself is apart: its one holder still holds, and the
	// lane is full.
	m, ok := laneItem(t, table, "tenant-a")["holders"].(*types.AttributeValueMemberM)
	require.True(t, ok)
	assert.Equal(t, []string{"h"}, slices.Sorted(maps.Keys(m.Value)))
	ok, err = st.AcquireSlowSlot(ctx, "tenant-a", "h2", now, now.Add(time.Minute), 1)
	require.NoError(t, err)
	assert.False(t, ok)
}
