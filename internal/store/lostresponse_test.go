package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/ddb/ddbtest"
	"github.com/triggers-dev/triggers/internal/event"
	itemconv "github.com/triggers-dev/triggers/internal/item"
	"github.com/triggers-dev/triggers/internal/store"
	"github.com/triggers-dev/triggers/schema"
)

// A conditional PutItem that succeeded but whose response was lost is
// retried by the SDK; the retry fails the condition on our own item. Put
// must report success (the event is stored, once), not a failure that the
// API would answer with a 5xx and the client would retry into a duplicate.
func TestPutSurvivesALostResponse(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	proxy, client := db.Faulty(t)
	st := store.New(client, table)

	proxy.LoseResponse("PutItem", 1)
	e := newEvent(t, "order.paid", map[string]any{"n": json.Number("1")})
	require.NoError(t, st.Put(ctx, "tenant-a", e))
	assert.Equal(t, 2, proxy.Calls("PutItem"), "the SDK retried once after the lost response")
	items := scan(t, table)
	require.Len(t, items, 1, "stored exactly once")
	assert.Equal(t, e, itemconv.EventFromItem(items[0]))

	// A real conflict (another event's item under the key) is still an error.
	e2 := newEvent(t, "order.paid", map[string]any{})
	item := itemconv.FromEvent("tenant-a", e2, schema.ProfileSeed)
	item[schema.AttrEventID] = &types.AttributeValueMemberS{Value: "evt_someone_else"}
	_, err := db.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item})
	require.NoError(t, err)
	assert.Error(t, st.Put(ctx, "tenant-a", e2))
}

// A batch's write that took effect but whose answer was lost is sent
// again by the SDK and found done: the event is stored once, and an ack
// given meanwhile is not overwritten. (PutBatch once sent one
// BatchWriteItem, which has no conditions: the SDK's resend put the
// events' first versions back over the ack, the event in the inbox again.)
func TestPutBatchSurvivesALostResponseWithoutOverwriting(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	proxy, client := db.Faulty(t)
	st := store.New(client, table)
	direct := store.New(db.Client, table)

	e := newEvent(t, "order.paid", map[string]any{"n": json.Number("1")})
	proxy.LoseResponseThen("PutItem", func() {
		// The event is acked while the client waits for its answer.
		_, err := direct.Transition(ctx, "tenant-a", e.ID, []event.Status{event.Received}, event.Delivered)
		assert.NoError(t, err)
	})
	for _, err := range st.PutBatch(ctx, "tenant-a", []event.Event{e}) {
		require.NoError(t, err, "the event is stored")
	}
	assert.Equal(t, 2, proxy.Calls("PutItem"), "the SDK sent the write again")
	got, err := direct.Get(ctx, "tenant-a", e.ID)
	require.NoError(t, err)
	assert.Equal(t, event.Delivered, got.Status, "the ack is not overwritten")
	assert.Len(t, scan(t, table), 1, "stored once")
}

// A batch's write held on the network past the SDK's attempt timeout
// lands after the SDK's retry stored the event and after an ack: the late
// copy is refused, and the event stays delivered. (Found by review:
// PutBatch's BatchWriteItem, which has no conditions, put the first
// version back over the ack, the event in the inbox again.)
func TestPutBatchRefusesALateCopy(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	proxy, client := db.Faulty(t)
	st := store.New(client, table)
	direct := store.New(db.Client, table)

	evs := []event.Event{newEvent(t, "order.paid", map[string]any{}), newEvent(t, "order.paid", map[string]any{})}
	land := proxy.LateCall("PutItem")
	for i, err := range st.PutBatch(ctx, "tenant-a", evs) {
		require.NoError(t, err, "event %d is stored (the held one by the SDK's retry)", i)
	}
	assert.Equal(t, len(evs)+1, proxy.Calls("PutItem"), "one write held, and sent again")
	for _, e := range evs {
		_, err := direct.Transition(ctx, "tenant-a", e.ID, []event.Status{event.Received}, event.Delivered)
		require.NoError(t, err, "acked")
	}
	land()
	for _, e := range evs {
		got, err := direct.Get(ctx, "tenant-a", e.ID)
		require.NoError(t, err)
		assert.Equal(t, event.Delivered, got.Status, "the late copy does not put the first version back")
	}
	assert.Len(t, scan(t, table), len(evs))
}

// An attempt's claim and its outcome, each written once with its answer
// lost: the SDK's retry finds the write done. The claim is the caller's
// (not another's live claim to wait out), and the outcome is recorded
// (not ErrLeaseLost, which the dispatcher takes for another instance's
// outcome: it then queued no retry of a failure, found by the crash
// harness). Another owner still gets ErrLeaseLost.
func TestAttemptSurvivesLostResponses(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	proxy, client := db.Faulty(t)
	st := store.New(client, table)
	ttl := time.Now().Add(time.Hour).Unix()
	t0 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)

	proxy.LoseResponse("UpdateItem", 1)
	a, claimed, err := st.ClaimAttempt(ctx, "tenant-a", "evt_1", claim("sub_a", 1, "first", t0), ttl)
	require.NoError(t, err)
	assert.Equal(t, 2, proxy.Calls("UpdateItem"), "the SDK retried the claim once")
	require.True(t, claimed, "the claim the lost answer was for is the caller's")
	assert.Equal(t, event.OutcomePending, a.Outcome)
	assert.Equal(t, 1, a.Sends, "one send counted")

	failed := event.Attempt{SubscriptionID: "sub_a", Number: 1, Timestamp: event.FormatTime(t0), Outcome: "failed", StatusCode: 503,
		LatencyMs: 7, Error: "HTTP 503", NextAttemptAt: event.FormatTime(t0.Add(time.Minute)), URL: "https://hooks.example.com/in"}
	assert.ErrorIs(t, st.FinishAttempt(ctx, "tenant-a", "evt_1", failed, "second"), event.ErrLeaseLost, "not the claimant")
	proxy.LoseResponse("UpdateItem", 1)
	require.NoError(t, st.FinishAttempt(ctx, "tenant-a", "evt_1", failed, "first"))
	assert.Equal(t, 5, proxy.Calls("UpdateItem"), "the SDK retried the outcome once")

	as, err := st.ListAttempts(ctx, "tenant-a", "evt_1")
	require.NoError(t, err)
	require.Len(t, as, 1)
	failed.Sends = 1
	assert.Equal(t, failed, as[0])

	// A claim refused by another owner's live claim is still refused.
	a, claimed, err = st.ClaimAttempt(ctx, "tenant-a", "evt_1", claim("sub_a", 2, "third", t0), ttl)
	require.NoError(t, err)
	require.True(t, claimed)
	a, claimed, err = st.ClaimAttempt(ctx, "tenant-a", "evt_1", claim("sub_a", 2, "fourth", t0.Add(time.Second)), ttl)
	require.NoError(t, err)
	assert.False(t, claimed, "another owner's live claim")
	assert.Equal(t, event.OutcomePending, a.Outcome)
}

// A rotation written once with its answer lost is the caller's, not a
// 409 for a rotation that took place (the client would never see the
// new secret). A real race is still a conflict (TestRotateSecret).
func TestRotateSecretSurvivesALostResponse(t *testing.T) {
	ctx := context.Background()
	proxy, st := lossySubscription(t)
	now := time.Unix(1_999_900_000, 0)
	until := now.Add(24 * time.Hour)

	proxy.LoseResponse("UpdateItem", 1)
	got, err := st.RotateSecret(ctx, "tenant-a", "sub_a", "whsec_2", now, until)
	require.NoError(t, err)
	assert.Equal(t, 2, proxy.Calls("UpdateItem"), "the SDK retried the rotation once")
	assert.Equal(t, []string{"whsec_2", "whsec_sub_a"}, got.Secrets)
	assert.Equal(t, []time.Time{until}, got.PreviousExpires)
	read, err := st.GetSubscription(ctx, "tenant-a", "sub_a")
	require.NoError(t, err)
	assert.Equal(t, got, read)
}

// The subscription's health and wake writes, each with its answer lost
// once: the SDK's retry finds the write done and the call reports what
// the write did. A failure counts once (not twice: the circuit opened a
// failure early); the write that disables the subscription reports it
// (its metric and alarm went missing, the attempt's retry was queued); a
// success that ended a run reports closed (the backlog behind the circuit
// waited for its wake); an earlier wake claimed is the caller's to send;
// a reseal done is no conflict.
func TestSubscriptionWritesSurviveLostResponses(t *testing.T) {
	ctx := context.Background()
	proxy, st := lossySubscription(t)
	t0 := time.Unix(1_900_000_000, 0)
	const after = time.Hour
	lost := func(do func()) {
		t.Helper()
		before := proxy.Calls("UpdateItem")
		proxy.LoseResponse("UpdateItem", 1)
		do()
		require.GreaterOrEqual(t, proxy.Calls("UpdateItem")-before, 2, "the SDK sent the write again")
	}

	// The run's first failure: the first write (a failure of a run
	// under way) is refused, the second (a run's start) lost once.
	before := proxy.Calls("UpdateItem")
	proxy.LoseResponseAfter("UpdateItem", 1)
	func() {
		run, err := st.SubscriptionFailed(ctx, "tenant-a", "sub_a", "", t0, after, "r1")
		require.NoError(t, err)
		assert.Equal(t, event.FailureRun{Consecutive: 1}, runChecked(t, st, "tenant-a", "sub_a", run), "the run's first failure, counted once")
	}()
	require.Equal(t, 3, proxy.Calls("UpdateItem")-before, "the run's start sent again")
	lost(func() {
		run, err := st.SubscriptionFailed(ctx, "tenant-a", "sub_a", "", t0.Add(time.Minute), after, "r2")
		require.NoError(t, err)
		assert.Equal(t, event.FailureRun{Consecutive: 2}, runChecked(t, st, "tenant-a", "sub_a", run), "a failure of the run, counted once")
	})
	// The failure that disables: its first write (the count) answered,
	// the second (the disabling) lost.
	proxy.LoseResponseAfter("UpdateItem", 1)
	run, err := st.SubscriptionFailed(ctx, "tenant-a", "sub_a", "", t0.Add(after), after, "r3")
	require.NoError(t, err)
	assert.Equal(t, event.FailureRun{Consecutive: 3, Disabled: true}, runChecked(t, st, "tenant-a", "sub_a", run), "the disabling is reported")
	sub, err := st.GetSubscription(ctx, "tenant-a", "sub_a")
	require.NoError(t, err)
	assert.True(t, sub.Disabled)
	assert.Equal(t, "r3", sub.DisabledReason)
	// Another failure of the run: the subscription is disabled already,
	// not by it.
	run, err = st.SubscriptionFailed(ctx, "tenant-a", "sub_a", "", t0.Add(after+time.Second), after, "r3")
	require.NoError(t, err)
	assert.Equal(t, event.FailureRun{Consecutive: 4}, runChecked(t, st, "tenant-a", "sub_a", run), "disabled by another failure (the same reason: a reason is no token)")

	lost(func() {
		closed, err := st.SubscriptionSucceeded(ctx, "tenant-a", "sub_a", "", t0.Add(2*after))
		require.NoError(t, err)
		assert.True(t, closed, "the success ended the run")
	})
	closed, err := st.SubscriptionSucceeded(ctx, "tenant-a", "sub_a", "", t0.Add(2*after))
	require.NoError(t, err)
	assert.False(t, closed, "the same success again (a copy of the message) ends nothing")

	// An earlier wake in place of a confirmed later one.
	now := t0.Add(3 * after)
	ok, err := st.ClaimWake(ctx, "tenant-a", "sub_a", "later", "", false, now.Add(time.Hour), now)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = st.ConfirmWake(ctx, "tenant-a", "sub_a", "later")
	require.NoError(t, err)
	require.True(t, ok)
	lost(func() {
		ok, err := st.ClaimEarlierWake(ctx, "tenant-a", "sub_a", "earlier", now.Add(time.Minute), now.Add(time.Minute))
		require.NoError(t, err)
		assert.True(t, ok, "the earlier wake's claim is the caller's")
	})
	ok, err = st.ConfirmWake(ctx, "tenant-a", "sub_a", "earlier")
	require.NoError(t, err)
	assert.True(t, ok)
	ok, err = st.ClaimEarlierWake(ctx, "tenant-a", "sub_a", "another", now.Add(time.Minute), now.Add(time.Minute))
	require.NoError(t, err)
	assert.False(t, ok, "no later wake to replace")

	sub, err = st.GetSubscription(ctx, "tenant-a", "sub_a")
	require.NoError(t, err)
	next := []string{"sealed:" + sub.Secrets[0]}
	lost(func() {
		require.NoError(t, st.ReplaceSecrets(ctx, "tenant-a", "sub_a", sub.Secrets, next), "a reseal done is no conflict")
	})
	assert.ErrorIs(t, st.ReplaceSecrets(ctx, "tenant-a", "sub_a", sub.Secrets, []string{"sealed:other"}), event.ErrRotationConflict)
}

// A probe's hold and a slow-lane slot, each taken with its answer lost:
// the caller holds them (refused, nobody made the probe until its hold
// ended; the slot stayed taken by nobody, and a one-slot lane was shut).
// Another caller is still refused.
func TestHoldsSurviveLostResponses(t *testing.T) {
	ctx := context.Background()
	proxy, st := lossySubscription(t)
	now := time.Unix(1_900_000_000, 0)

	proxy.LoseResponse("UpdateItem", 1)
	ok, err := st.AcquireProbe(ctx, "tenant-a", "sub_a", now, now.Add(40*time.Second))
	require.NoError(t, err)
	assert.Equal(t, 2, proxy.Calls("UpdateItem"), "the SDK sent the write again")
	assert.True(t, ok, "the probe is the caller's")
	ok, err = st.AcquireProbe(ctx, "tenant-a", "sub_a", now, now.Add(40*time.Second))
	require.NoError(t, err)
	assert.False(t, ok, "another caller's probe, the same instant")

	// The lane's first slot: its first write finds no lane, the second
	// starts it (lost once). Its second and last slot: the first write
	// takes it (lost once).
	before := proxy.Calls("UpdateItem")
	proxy.LoseResponseAfter("UpdateItem", 1)
	ok, err = st.AcquireSlowSlot(ctx, "tenant-a", "t1", now, now.Add(40*time.Second), 2)
	require.NoError(t, err)
	assert.Equal(t, 3, proxy.Calls("UpdateItem")-before, "the lane's start sent again")
	assert.True(t, ok, "the first slot is the caller's")
	before = proxy.Calls("UpdateItem")
	proxy.LoseResponse("UpdateItem", 1)
	ok, err = st.AcquireSlowSlot(ctx, "tenant-a", "t2", now, now.Add(40*time.Second), 2)
	require.NoError(t, err)
	assert.Equal(t, 2, proxy.Calls("UpdateItem")-before, "the slot's write sent again")
	assert.True(t, ok, "the last slot is the caller's")
	ok, err = st.AcquireSlowSlot(ctx, "tenant-a", "t3", now, now.Add(40*time.Second), 2)
	require.NoError(t, err)
	assert.False(t, ok, "the lane is full")
}

// A circuit opened with its answer lost: the opening is reported (it
// reported nothing opened, so no CircuitOpened metric or log line).
// Another caller's opening to the same end is not its own.
func TestOpenCircuitSurvivesALostResponse(t *testing.T) {
	ctx := context.Background()
	proxy, st := lossySubscription(t)
	until := time.Unix(1_900_000_000, 0)

	proxy.LoseResponse("UpdateItem", 1)
	opened, err := st.OpenCircuit(ctx, "tenant-a", "sub_a", "", until.Add(-time.Minute), until, time.Minute)
	require.NoError(t, err)
	assert.Equal(t, 2, proxy.Calls("UpdateItem"), "the SDK sent the write again")
	assert.True(t, opened, "the opening is the caller's")
	opened, err = st.OpenCircuit(ctx, "tenant-a", "sub_a", "", until.Add(-time.Minute), until, time.Minute)
	require.NoError(t, err)
	assert.False(t, opened, "another caller's opening to the same end")
	sub, err := st.GetSubscription(ctx, "tenant-a", "sub_a")
	require.NoError(t, err)
	assert.Equal(t, until.UnixMilli(), sub.CircuitOpenUntil.UnixMilli())
}

// Rate-cap counts with their answers lost: each request is counted once
// (counted twice, a request of the same second was put off a second
// late), in a new window and in one under way.
func TestRateTokenSurvivesLostResponses(t *testing.T) {
	ctx := context.Background()
	proxy, st := lossySubscription(t)
	sec := time.Unix(1_900_000_000, 0)
	take := func(lose int, want int) {
		t.Helper()
		before := proxy.Calls("UpdateItem")
		if lose > 0 {
			proxy.LoseResponseAfter("UpdateItem", lose-1)
		}
		ahead, err := st.TakeRateToken(ctx, "tenant-a", "sub_a", sec, 2)
		require.NoError(t, err)
		assert.Equal(t, want, ahead)
		if lose > 0 {
			assert.Equal(t, lose+1, proxy.Calls("UpdateItem")-before, "the lost write sent again")
		}
	}
	// The window's start: the first write finds no window, the second
	// starts it (lost).
	take(2, 0)
	// A count in the window (lost): the second of two.
	take(1, 0)
	// The third request of the second is one past the limit, not two.
	take(0, 1)
}

// lossySubscription returns a store on a new events table whose client
// goes through a fault proxy (the proxy returned), with tenant-a's
// subscription sub_a created.
func lossySubscription(t *testing.T) (*ddbtest.FaultProxy, *store.Store) {
	t.Helper()
	proxy, st, _ := lossyStores(t)
	require.NoError(t, st.CreateSubscription(context.Background(), "tenant-a", newSub("sub_a")))
	return proxy, st
}

// lossyStores returns two stores on one new events table (of profile p,
// the seed's by default): st, whose client goes through a fault proxy
// (the proxy returned), and other, another instance's, not through it.
func lossyStores(t *testing.T, p ...schema.EventsProfile) (proxy *ddbtest.FaultProxy, st, other *store.Store) {
	t.Helper()
	profile := schema.ProfileSeed
	if len(p) > 0 {
		profile = p[0]
	}
	table := db.CreateTable(t, schema.EventsFor(profile))
	proxy, client := db.Faulty(t)
	return proxy, store.New(client, table, store.WithProfile(profile)), store.New(db.Client, table, store.WithProfile(profile))
}

// putEvent stores a new event of tenant-a with st and returns it.
func putEvent(t *testing.T, st *store.Store) event.Event {
	t.Helper()
	e := newEvent(t, "order.paid", map[string]any{})
	require.NoError(t, st.Put(context.Background(), "tenant-a", e))
	return e
}

// A success and a disabling failure, each with its answer lost and
// another caller's write to the subscription landing before the SDK's
// resend, which that write makes fail its condition: each is still
// reported as this call's (its token). Before, the success was reported
// as ending nothing (the backlog parked behind the circuit waited for
// the circuit's wake) and the disabling as not made (no metric, no
// alarm). Found by review.
func TestSubscriptionOutcomesSurviveALostAnswerAndALaterWrite(t *testing.T) {
	ctx := context.Background()
	proxy, st, other := lossyStores(t)
	require.NoError(t, st.CreateSubscription(ctx, "tenant-a", newSub("sub_a")))
	t0 := time.Unix(1_900_000_000, 0)
	const after = time.Hour

	_, err := st.SubscriptionFailed(ctx, "tenant-a", "sub_a", "", t0, after, "r1")
	require.NoError(t, err)
	opened, err := st.OpenCircuit(ctx, "tenant-a", "sub_a", "", t0, t0.Add(time.Minute), time.Minute)
	require.NoError(t, err)
	require.True(t, opened)
	// The success ends the run and closes the circuit; a failure after
	// it begins a new run before the resend.
	proxy.LoseResponseThen("UpdateItem", func() {
		_, err := other.SubscriptionFailed(ctx, "tenant-a", "sub_a", "", t0.Add(3*time.Minute), after, "r2")
		assert.NoError(t, err)
	})
	closed, err := st.SubscriptionSucceeded(ctx, "tenant-a", "sub_a", "", t0.Add(2*time.Minute))
	require.NoError(t, err)
	assert.True(t, closed, "this call's success ended the run and closed the circuit")
	sub, err := st.GetSubscription(ctx, "tenant-a", "sub_a")
	require.NoError(t, err)
	assert.Equal(t, 1, sub.ConsecutiveFailures, "the new run's failure only")

	// The failure that disables: its count answered, its disabling lost,
	// and a success ends the run before the resend.
	disabledAt := t0.Add(3*time.Minute + after)
	proxy.LoseResponseAfterThen("UpdateItem", 1, func() {
		_, err := other.SubscriptionSucceeded(ctx, "tenant-a", "sub_a", "", disabledAt.Add(time.Second))
		assert.NoError(t, err)
	})
	run, err := st.SubscriptionFailed(ctx, "tenant-a", "sub_a", "", disabledAt, after, "r3")
	require.NoError(t, err)
	assert.True(t, run.Disabled, "this call disabled it")
	sub, err = st.GetSubscription(ctx, "tenant-a", "sub_a")
	require.NoError(t, err)
	assert.True(t, sub.Disabled)
	assert.Equal(t, "r3", sub.DisabledReason)
}

// A status change through TransitionOnce (the API's PATCH) with its
// answer lost answers the event as changed, in both profiles: the SDK's
// resend fails the condition on the change already made and finds the
// call's own token there. Before, it was a *event.TransitionError (a 409
// for the client's own change). A change made by another call is still
// one, and Transition, which writes no token, still reports it.
func TestTransitionOnceSurvivesALostAnswer(t *testing.T) {
	forProfiles(t, func(t *testing.T, p schema.EventsProfile) {
		ctx := context.Background()
		proxy, st, _ := lossyStores(t, p)
		e := putEvent(t, st)

		before := proxy.Calls("UpdateItem")
		proxy.LoseResponse("UpdateItem", 1)
		got, err := st.TransitionOnce(ctx, "tenant-a", e.ID, event.Sources(event.Failed), event.Failed)
		require.NoError(t, err, "the change is the caller's")
		assert.Equal(t, 2, proxy.Calls("UpdateItem")-before, "the SDK sent it again")
		assert.Equal(t, event.Failed, got.Status)

		before = proxy.Calls("UpdateItem")
		proxy.LoseResponse("UpdateItem", 1)
		got, err = st.TransitionOnce(ctx, "tenant-a", e.ID, event.Sources(event.Retrying), event.Retrying)
		require.NoError(t, err)
		assert.Equal(t, 2, proxy.Calls("UpdateItem")-before)
		assert.Equal(t, event.Retrying, got.Status)
		assert.Equal(t, 1, got.RetryCount, "retried once")

		// Another call's change of the same kind is not this one's.
		_, err = st.TransitionOnce(ctx, "tenant-a", e.ID, event.Sources(event.Retrying), event.Retrying)
		te, ok := errors.AsType[*event.TransitionError](err)
		require.True(t, ok, "%v", err)
		assert.Equal(t, event.Retrying, te.From)

		// Transition writes no token: its resend reports the change.
		proxy.LoseResponse("UpdateItem", 1)
		_, err = st.Transition(ctx, "tenant-a", e.ID, event.Sources(event.Delivered), event.Delivered)
		te, ok = errors.AsType[*event.TransitionError](err)
		require.True(t, ok, "%v", err)
		assert.Equal(t, event.Delivered, te.From)

		stored, err := st.Get(ctx, "tenant-a", e.ID)
		require.NoError(t, err)
		assert.Equal(t, event.Delivered, stored.Status)
		assert.Equal(t, 1, stored.RetryCount)
	})
}

// A PATCH's change with its answer lost, and another writer moving the
// event back into a status the change starts from before the SDK's
// resend (failed, then retrying by a webhook retry): the resend does not
// make the change again over the other writer's; the call answers the
// event as it now is (found by review: the resend, whose condition
// checked the status only, undid the retry's move).
func TestTransitionOnceResendDoesNotChangeItAgain(t *testing.T) {
	ctx := context.Background()
	proxy, st, other := lossyStores(t)
	e := putEvent(t, st)

	proxy.LoseResponseThen("UpdateItem", func() {
		_, err := other.Transition(ctx, "tenant-a", e.ID, []event.Status{event.Failed}, event.Retrying)
		assert.NoError(t, err)
	})
	got, err := st.TransitionOnce(ctx, "tenant-a", e.ID, event.Sources(event.Failed), event.Failed)
	require.NoError(t, err, "the change was the caller's")
	assert.Equal(t, event.Retrying, got.Status, "the event as it now is")
	stored, err := st.Get(ctx, "tenant-a", e.ID)
	require.NoError(t, err)
	assert.Equal(t, event.Retrying, stored.Status, "the retry's move stands")
	assert.Equal(t, 1, stored.RetryCount)
}

// A late copy of a status change: the first try of the write is held on
// the network past the SDK's attempt timeout, the SDK's retry makes the
// change, the event is settled back (retrying -> failed, as a webhook
// retry's failure does), and then the first try lands. TransitionOnce's
// token in the condition refuses it; Transition's condition, on the
// status only, takes it, and the event was left retrying for good, its
// retry_count counted twice (found by review).
func TestTransitionOnceRefusesALateCopy(t *testing.T) {
	ctx := context.Background()
	proxy, st, other := lossyStores(t)
	for _, once := range []bool{true, false} {
		e := putEvent(t, st)
		_, err := other.Transition(ctx, "tenant-a", e.ID, event.Sources(event.Failed), event.Failed)
		require.NoError(t, err)

		land := proxy.LateCall("UpdateItem")
		change := st.Transition
		if once {
			change = st.TransitionOnce
		}
		got, err := change(ctx, "tenant-a", e.ID, []event.Status{event.Failed}, event.Retrying)
		require.NoError(t, err, "the SDK's retry made the change")
		require.Equal(t, event.Retrying, got.Status)
		_, err = other.Transition(ctx, "tenant-a", e.ID, []event.Status{event.Retrying}, event.Failed)
		require.NoError(t, err)
		land()

		stored, err := st.Get(ctx, "tenant-a", e.ID)
		require.NoError(t, err)
		if once {
			assert.Equal(t, event.Failed, stored.Status, "the late copy refused")
			assert.Equal(t, 1, stored.RetryCount)
		} else {
			assert.Equal(t, event.Retrying, stored.Status, "Transition takes the late copy: why the dispatcher uses TransitionOnce")
			assert.Equal(t, 2, stored.RetryCount)
		}
	}
}

// A late copy of a first round's hold (its first try held on the network
// past the SDK's attempt timeout, landing after the retry and after the
// round finished) does not hold the event's settles again. (Found by
// review: it held them for the round hold, 6 hours, and a retry's
// delivery meanwhile left the event failed.) A lost answer is still the
// call's own hold, and a new hold after the end still holds.
func TestHoldFirstRoundRefusesALateCopy(t *testing.T) {
	ctx := context.Background()
	proxy, st, _ := lossyStores(t)
	e := putEvent(t, st)
	at := time.Now().UTC()

	land := proxy.LateCall("UpdateItem")
	require.NoError(t, st.HoldFirstRound(ctx, "tenant-a", e.ID, at, e.TTL), "the SDK's retry holds it")
	_, running, err := st.SettleAttempts(ctx, "tenant-a", e.ID)
	require.NoError(t, err)
	require.True(t, running)
	require.NoError(t, st.FinishRound(ctx, "tenant-a", e.ID, event.FirstRound))
	land()
	_, running, err = st.SettleAttempts(ctx, "tenant-a", e.ID)
	require.NoError(t, err)
	assert.False(t, running, "the late copy of the ended hold is refused")

	proxy.LoseResponse("UpdateItem", 1)
	require.NoError(t, st.HoldFirstRound(ctx, "tenant-a", e.ID, at, e.TTL), "a new hold, its answer lost")
	_, running, err = st.SettleAttempts(ctx, "tenant-a", e.ID)
	require.NoError(t, err)
	assert.True(t, running)
}

// A late copy of a subscription change (its first try held on the
// network past the SDK's attempt timeout, landing after the SDK's retry
// made the change and after a later change) is refused: the later change
// stays. Before, the older change was put back over it: an endpoint's old
// URL, or a subscription enabled again after its owner disabled it (the
// enabled state, the only condition then, was back to what the late copy
// was decided on). Found by review.
func TestUpdateSubscriptionRefusesALateCopy(t *testing.T) {
	ctx := context.Background()
	proxy, st, other := lossyStores(t)
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	require.NoError(t, other.CreateSubscription(ctx, "tenant-a", newSub("sub_a", "order.paid")))

	land := proxy.LateCall("UpdateItem")
	got, err := st.UpdateSubscription(ctx, "tenant-a", "sub_a", event.SubscriptionPatch{URL: aws.String("https://old.example.com/in")}, t0)
	require.NoError(t, err, "the SDK's retry made the change")
	require.Equal(t, "https://old.example.com/in", got.URL)
	_, err = other.UpdateSubscription(ctx, "tenant-a", "sub_a", event.SubscriptionPatch{URL: aws.String("https://new.example.com/in")}, t0)
	require.NoError(t, err)
	land()
	sub, err := other.GetSubscription(ctx, "tenant-a", "sub_a")
	require.NoError(t, err)
	assert.Equal(t, "https://new.example.com/in", sub.URL, "the late copy of the older URL is refused")

	// Disabled by its owner, enabled (late), disabled again.
	_, err = other.UpdateSubscription(ctx, "tenant-a", "sub_a", event.SubscriptionPatch{Disabled: aws.Bool(true)}, t0)
	require.NoError(t, err)
	land = proxy.LateCall("UpdateItem")
	got, err = st.UpdateSubscription(ctx, "tenant-a", "sub_a", event.SubscriptionPatch{Disabled: aws.Bool(false)}, t0)
	require.NoError(t, err)
	require.False(t, got.Disabled)
	_, err = other.UpdateSubscription(ctx, "tenant-a", "sub_a", event.SubscriptionPatch{Disabled: aws.Bool(true)}, t0)
	require.NoError(t, err)
	land()
	sub, err = other.GetSubscription(ctx, "tenant-a", "sub_a")
	require.NoError(t, err)
	assert.True(t, sub.Disabled, "the late copy of the enabling is refused")
	assert.Equal(t, store.ReasonDisabledByAPI, sub.DisabledReason)
}

// A subscription change whose answer was lost is the call's own change
// when the SDK's resend finds it, also with another writer's change to
// the subscription (a failure recorded by the delivery path) between
// them: the call returns the subscription as stored, changed once.
func TestUpdateSubscriptionSurvivesALostAnswer(t *testing.T) {
	ctx := context.Background()
	proxy, st, other := lossyStores(t)
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	require.NoError(t, other.CreateSubscription(ctx, "tenant-a", newSub("sub_a", "order.paid")))

	proxy.LoseResponseThen("UpdateItem", func() {
		_, err := other.SubscriptionFailed(ctx, "tenant-a", "sub_a", "", t0, time.Hour, "HTTP 503")
		assert.NoError(t, err)
	})
	got, err := st.UpdateSubscription(ctx, "tenant-a", "sub_a", event.SubscriptionPatch{Description: aws.String("once")}, t0)
	require.NoError(t, err)
	assert.Equal(t, "once", got.Description)
	assert.Equal(t, 1, got.ConsecutiveFailures, "as stored, with the other writer's change")
	assert.Equal(t, 2, proxy.Calls("UpdateItem"), "the change and the SDK's resend, refused as this call's own")
}

// A PATCH whose answer was lost, with another PATCH landing before the
// SDK's resend, is the change made: the resend finds its token as the one
// the other change replaced (patch_prev) and answers with the
// subscription as stored, both changes in it, the other one last. Before,
// it read again and applied its change a second time, over the other one.
func TestUpdateSubscriptionSurvivesALostAnswerAndAnotherChange(t *testing.T) {
	ctx := context.Background()
	proxy, st, other := lossyStores(t)
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	require.NoError(t, other.CreateSubscription(ctx, "tenant-a", newSub("sub_a", "order.paid")))

	proxy.LoseResponseThen("UpdateItem", func() {
		_, err := other.UpdateSubscription(ctx, "tenant-a", "sub_a", event.SubscriptionPatch{Description: aws.String("second")}, t0)
		assert.NoError(t, err)
	})
	got, err := st.UpdateSubscription(ctx, "tenant-a", "sub_a", event.SubscriptionPatch{
		Description: aws.String("first"), EventTypes: &[]string{"order.shipped"},
	}, t0)
	require.NoError(t, err)
	assert.Equal(t, "second", got.Description, "the other change came after this one")
	assert.Equal(t, []string{"order.shipped"}, got.EventTypes, "this change is in it")
	stored, err := other.GetSubscription(ctx, "tenant-a", "sub_a")
	require.NoError(t, err)
	assert.Equal(t, "second", stored.Description, "not put back over the other change")
	assert.Equal(t, 2, proxy.Calls("UpdateItem"), "the change and the SDK's resend, refused as this call's own")
}

// A late copy of a circuit's opening (its first try held on the network
// past the SDK's attempt timeout, landing after the SDK's retry opened
// the circuit and after a success closed it) is refused: the circuit
// stays closed. Before, it opened the circuit again for the cooldown, and
// the endpoint's backlog was parked behind it. Found by review: for the
// success of a request in flight when the opening was decided (the
// success keeps the opening it closed), and for a probe's success after
// another, longer opening replaced this one (the success is later than
// the decision; found by the review of the first fix). A new opening
// after the success still opens it.
func TestOpenCircuitRefusesALateCopy(t *testing.T) {
	ctx := context.Background()
	proxy, st := lossySubscription(t)
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	isClosed := func(why string) {
		t.Helper()
		sub, err := st.GetSubscription(ctx, "tenant-a", "sub_a")
		require.NoError(t, err)
		assert.True(t, sub.CircuitOpenUntil.IsZero(), "%s: open until %v", why, sub.CircuitOpenUntil)
	}

	land := proxy.LateCall("UpdateItem")
	opened, err := st.OpenCircuit(ctx, "tenant-a", "sub_a", "", t0, t0.Add(time.Minute), time.Minute)
	require.NoError(t, err)
	require.True(t, opened, "the SDK's retry opened it")
	closed, err := st.SubscriptionSucceeded(ctx, "tenant-a", "sub_a", "", t0.Add(-time.Second))
	require.NoError(t, err)
	require.True(t, closed, "a request in flight before the opening succeeded")
	land()
	isClosed("the late copy does not open the circuit its success closed")

	t1 := t0.Add(time.Hour)
	land = proxy.LateCall("UpdateItem")
	opened, err = st.OpenCircuit(ctx, "tenant-a", "sub_a", "", t1, t1.Add(time.Minute), time.Minute)
	require.NoError(t, err)
	require.True(t, opened)
	opened, err = st.OpenCircuit(ctx, "tenant-a", "sub_a", "", t1, t1.Add(2*time.Minute), 2*time.Minute)
	require.NoError(t, err)
	require.True(t, opened, "a longer opening replaces it")
	closed, err = st.SubscriptionSucceeded(ctx, "tenant-a", "sub_a", "", t1.Add(2*time.Minute+time.Second))
	require.NoError(t, err)
	require.True(t, closed, "the probe after the cooldown succeeded")
	land()
	isClosed("the late copy of the replaced opening does not open the circuit")

	// The same, closed by a request in flight before both openings: the
	// success is older than both decisions, and it closed the longer
	// opening, not this one; it keeps the one that opening replaced.
	t2 := t1.Add(time.Hour)
	land = proxy.LateCall("UpdateItem")
	opened, err = st.OpenCircuit(ctx, "tenant-a", "sub_a", "", t2, t2.Add(time.Minute), time.Minute)
	require.NoError(t, err)
	require.True(t, opened)
	opened, err = st.OpenCircuit(ctx, "tenant-a", "sub_a", "", t2, t2.Add(2*time.Minute), 2*time.Minute)
	require.NoError(t, err)
	require.True(t, opened, "a longer opening replaces it")
	closed, err = st.SubscriptionSucceeded(ctx, "tenant-a", "sub_a", "", t2.Add(-time.Second))
	require.NoError(t, err)
	require.True(t, closed, "a request in flight before both openings succeeded")
	land()
	isClosed("the late copy of the opening the closed one replaced does not open the circuit")

	opened, err = st.OpenCircuit(ctx, "tenant-a", "sub_a", "", t2.Add(4*time.Minute), t2.Add(5*time.Minute), time.Minute)
	require.NoError(t, err)
	assert.True(t, opened, "a new opening")
	sub, err := st.GetSubscription(ctx, "tenant-a", "sub_a")
	require.NoError(t, err)
	assert.Equal(t, t2.Add(5*time.Minute).UnixMilli(), sub.CircuitOpenUntil.UnixMilli())
}

// A late copy of a retry's failed -> retrying that lands after later
// retries moved and settled the event again (each overwriting the token
// TransitionOnce's condition checks) is refused by the retry_count it
// read: the event stays failed, its retry_count as the retries made it.
// (Found by the crash harness's late copies: the copy left the event
// retrying for good.) A lost answer is still the call's own move.
func TestStartRetryRefusesALateCopyAfterLaterRetries(t *testing.T) {
	ctx := context.Background()
	proxy, st, other := lossyStores(t)
	e := putEvent(t, other)
	failed, err := other.Transition(ctx, "tenant-a", e.ID, []event.Status{event.Received}, event.Failed)
	require.NoError(t, err)

	land := proxy.LateCall("UpdateItem")
	got, err := st.StartRetry(ctx, "tenant-a", failed)
	require.NoError(t, err, "the SDK's retry made the move")
	require.Equal(t, event.Retrying, got.Status)
	failed, err = other.Transition(ctx, "tenant-a", e.ID, []event.Status{event.Retrying}, event.Failed)
	require.NoError(t, err)
	_, err = other.StartRetry(ctx, "tenant-a", failed)
	require.NoError(t, err, "a later retry")
	_, err = other.Transition(ctx, "tenant-a", e.ID, []event.Status{event.Retrying}, event.Failed)
	require.NoError(t, err)
	land()
	stored, err := other.Get(ctx, "tenant-a", e.ID)
	require.NoError(t, err)
	assert.Equal(t, event.Failed, stored.Status, "the late copy is refused")
	assert.Equal(t, 2, stored.RetryCount)

	proxy.LoseResponse("UpdateItem", 1)
	got, err = st.StartRetry(ctx, "tenant-a", stored)
	require.NoError(t, err, "its answer lost, the move is the call's own")
	assert.Equal(t, event.Retrying, got.Status)
	assert.Equal(t, 3, got.RetryCount)

	_, err = st.StartRetry(ctx, "tenant-a", stored)
	var te *event.TransitionError
	assert.ErrorAs(t, err, &te, "a move from a state read before another move")
}
