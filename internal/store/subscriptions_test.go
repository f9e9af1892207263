package store_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/ddb/ddbtest"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/store"
	"github.com/triggers-dev/triggers/schema"
)

func newSub(id string, types ...string) event.Subscription {
	return event.Subscription{
		ID: id, URL: "https://hooks.example.com/" + id, EventTypes: types, Description: "d-" + id,
		CreatedAt: "2026-11-23T10:00:00.000000Z", Secrets: []string{"whsec_" + id},
	}
}

// Subscriptions are per tenant, ordered by id, read back exactly as
// created, and live beside events without ever showing in an inbox.
func TestSubscriptionsCRUD(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table)
	b, a := newSub("sub_b", "order.paid"), newSub("sub_a")
	require.NoError(t, st.CreateSubscription(ctx, "tenant-a", b))
	require.NoError(t, st.CreateSubscription(ctx, "tenant-a", a))
	require.NoError(t, st.CreateSubscription(ctx, "tenant-b", newSub("sub_c")))
	require.NoError(t, st.Put(ctx, "tenant-a", newEvent(t, "t", map[string]any{})))

	subs, err := st.ListSubscriptions(ctx, "tenant-a")
	require.NoError(t, err)
	a.EventTypes = []string{} // stored empty, read back as "every type"
	assert.Equal(t, []event.Subscription{a, b}, subs)
	got, err := st.GetSubscription(ctx, "tenant-a", "sub_b")
	require.NoError(t, err)
	assert.Equal(t, b, got)
	_, err = st.GetSubscription(ctx, "tenant-b", "sub_b")
	assert.ErrorIs(t, err, event.ErrSubscriptionNotFound)

	// The same id again is refused; nothing is overwritten.
	dup := newSub("sub_b")
	dup.URL = "https://evil.example.com/"
	assert.Error(t, st.CreateSubscription(ctx, "tenant-a", dup))
	got, err = st.GetSubscription(ctx, "tenant-a", "sub_b")
	require.NoError(t, err)
	assert.Equal(t, b.URL, got.URL)

	page, err := st.List(ctx, event.InboxQuery{Tenant: "tenant-a", Limit: 100})
	require.NoError(t, err)
	assert.Len(t, page.Events, 1, "a subscription showed in the inbox")
	for _, it := range scan(t, table) {
		pk := attrS(it, schema.AttrUserID)
		if pk == "tenant-a" {
			continue
		}
		assert.False(t, contract.IsEventPartition(pk), "%s", pk)
		assert.Equal(t, contract.RecordTypeSubscription, attrS(it, "record_type"))
		for _, absent := range []string{schema.AttrStatusTS, schema.AttrEventTypeTS, schema.AttrEventType} {
			assert.NotContains(t, it, absent)
		}
	}

	require.NoError(t, st.DeleteSubscription(ctx, "tenant-a", "sub_a"))
	assert.ErrorIs(t, st.DeleteSubscription(ctx, "tenant-a", "sub_a"), event.ErrSubscriptionNotFound)
	assert.ErrorIs(t, st.DeleteSubscription(ctx, "tenant-b", "sub_b"), event.ErrSubscriptionNotFound)
	subs, err = st.ListSubscriptions(ctx, "tenant-a")
	require.NoError(t, err)
	assert.Equal(t, []event.Subscription{b}, subs)
	subs, err = st.ListSubscriptions(ctx, "tenant-none")
	require.NoError(t, err)
	assert.Empty(t, subs)
}

// A tenant holds at most event.MaxSubscriptions.
func TestSubscriptionLimit(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table)
	for i := 0; i < event.MaxSubscriptions; i++ {
		require.NoError(t, st.CreateSubscription(ctx, "tenant-a", newSub(fmt.Sprintf("sub_%02d", i))), "subscription %d", i)
	}
	err := st.CreateSubscription(ctx, "tenant-a", newSub("sub_x"))
	var ie *event.InputError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, event.CodeInvalidSubscription, ie.Code)
	assert.Equal(t, fmt.Sprintf("this tenant already has %d subscriptions, the most it may hold: delete one first", event.MaxSubscriptions), ie.Message)
	subs, err := st.ListSubscriptions(ctx, "tenant-a")
	require.NoError(t, err)
	assert.Len(t, subs, event.MaxSubscriptions)
	require.NoError(t, st.CreateSubscription(ctx, "tenant-b", newSub("sub_x")), "the limit is per tenant")
}

// A rotation puts the new secret first and keeps only the previous
// newest, with its overlap; a rotation that lost a race to another is a
// conflict and changes nothing.
func TestRotateSecret(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table)
	require.NoError(t, st.CreateSubscription(ctx, "tenant-a", newSub("sub_a")))
	until := time.Unix(2_000_000_000, 0)
	got, err := st.RotateSecret(ctx, "tenant-a", "sub_a", "whsec_2", until)
	require.NoError(t, err)
	assert.Equal(t, []string{"whsec_2", "whsec_sub_a"}, got.Secrets)
	assert.True(t, until.Equal(got.PreviousExpires), "%v", got.PreviousExpires)
	got, err = st.RotateSecret(ctx, "tenant-a", "sub_a", "whsec_3", until.Add(time.Hour))
	require.NoError(t, err)
	assert.Equal(t, []string{"whsec_3", "whsec_2"}, got.Secrets)
	read, err := st.GetSubscription(ctx, "tenant-a", "sub_a")
	require.NoError(t, err)
	assert.Equal(t, got, read)

	_, err = st.RotateSecret(ctx, "tenant-a", "sub_none", "whsec_x", until)
	assert.ErrorIs(t, err, event.ErrSubscriptionNotFound)

	// Another rotation lands between this one's read and its write.
	racer := &rotateRacer{API: db.Client, other: st}
	_, err = store.New(racer, table).RotateSecret(ctx, "tenant-a", "sub_a", "whsec_loser", until)
	assert.ErrorIs(t, err, event.ErrRotationConflict)
	read, err = st.GetSubscription(ctx, "tenant-a", "sub_a")
	require.NoError(t, err)
	assert.Equal(t, []string{"whsec_winner", "whsec_3"}, read.Secrets)
}

// rotateRacer rotates the secret through other just before the first
// UpdateItem it forwards.
type rotateRacer struct {
	store.API
	other *store.Store
	done  bool
}

func (r *rotateRacer) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if !r.done {
		r.done = true
		if _, err := r.other.RotateSecret(ctx, "tenant-a", "sub_a", "whsec_winner", time.Unix(2_000_000_000, 0)); err != nil {
			return nil, err
		}
	}
	return r.API.UpdateItem(ctx, in, optFns...)
}

// Failures start a run at the first one; the subscription is disabled
// once the run has lasted disableAfter (exactly one caller reports it),
// and a success ends the run.
func TestSubscriptionFailureRun(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table)
	require.NoError(t, st.CreateSubscription(ctx, "tenant-a", newSub("sub_a")))
	t0 := time.Unix(1_900_000_000, 0)
	const after = time.Hour

	disabled, err := st.SubscriptionFailed(ctx, "tenant-a", "sub_a", t0, after, "r")
	require.NoError(t, err)
	assert.False(t, disabled)
	sub, err := st.GetSubscription(ctx, "tenant-a", "sub_a")
	require.NoError(t, err)
	assert.Equal(t, event.FormatTime(t0), sub.FailingSince)
	assert.False(t, sub.Disabled)

	disabled, err = st.SubscriptionFailed(ctx, "tenant-a", "sub_a", t0.Add(after-time.Second), after, "r")
	require.NoError(t, err)
	assert.False(t, disabled, "one second short of the period")
	sub, err = st.GetSubscription(ctx, "tenant-a", "sub_a")
	require.NoError(t, err)
	assert.Equal(t, event.FormatTime(t0), sub.FailingSince, "the run keeps its start")

	// A success ends the run; the next failure starts a new one.
	require.NoError(t, st.SubscriptionSucceeded(ctx, "tenant-a", "sub_a"))
	sub, err = st.GetSubscription(ctx, "tenant-a", "sub_a")
	require.NoError(t, err)
	assert.Empty(t, sub.FailingSince)
	t1 := t0.Add(2 * after)
	disabled, err = st.SubscriptionFailed(ctx, "tenant-a", "sub_a", t1, after, "r")
	require.NoError(t, err)
	assert.False(t, disabled, "a new run")

	disabled, err = st.SubscriptionFailed(ctx, "tenant-a", "sub_a", t1.Add(after), after, "failing for 1h")
	require.NoError(t, err)
	assert.True(t, disabled, "the run lasted the whole period")
	sub, err = st.GetSubscription(ctx, "tenant-a", "sub_a")
	require.NoError(t, err)
	assert.True(t, sub.Disabled)
	assert.Equal(t, "failing for 1h", sub.DisabledReason)
	disabled, err = st.SubscriptionFailed(ctx, "tenant-a", "sub_a", t1.Add(2*after), after, "again")
	require.NoError(t, err)
	assert.False(t, disabled, "only the first caller disables it")
	sub, err = st.GetSubscription(ctx, "tenant-a", "sub_a")
	require.NoError(t, err)
	assert.Equal(t, "failing for 1h", sub.DisabledReason)

	_, err = st.SubscriptionFailed(ctx, "tenant-a", "sub_none", t1, after, "r")
	assert.ErrorIs(t, err, event.ErrSubscriptionNotFound)
	assert.ErrorIs(t, st.SubscriptionSucceeded(ctx, "tenant-a", "sub_none"), event.ErrSubscriptionNotFound)
	_, err = st.GetSubscription(ctx, "tenant-a", "sub_none")
	assert.ErrorIs(t, err, event.ErrSubscriptionNotFound)
}

// Attempts are recorded once per number, listed in order per
// subscription and number, kept per tenant and event, and hidden once
// expired.
func TestAttempts(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table)
	ttl := time.Now().Add(time.Hour).Unix()
	a1 := event.Attempt{SubscriptionID: "sub_b", Number: 1, Timestamp: "2026-11-23T10:00:00.000000Z", Outcome: "failed",
		StatusCode: 500, LatencyMs: 12, Response: "boom", NextAttemptAt: "2026-11-23T10:00:05.000000Z"}
	a2 := event.Attempt{SubscriptionID: "sub_b", Number: 2, Timestamp: "2026-11-23T10:00:05.000000Z", Outcome: "delivered", StatusCode: 200, LatencyMs: 7}
	a10 := event.Attempt{SubscriptionID: "sub_b", Number: 10, Timestamp: "2026-11-23T11:00:00.000000Z", Outcome: "failed", Error: "dial tcp: refused"}
	c1 := event.Attempt{SubscriptionID: "sub_a", Number: 1, Timestamp: "2026-11-23T10:00:01.000000Z", Outcome: "gone", StatusCode: 410}
	for _, a := range []event.Attempt{a10, a2, a1, c1} {
		recorded, err := st.PutAttempt(ctx, "tenant-a", "evt_1", a, ttl)
		require.NoError(t, err)
		assert.True(t, recorded)
	}
	again := a1
	again.Outcome = "delivered"
	recorded, err := st.PutAttempt(ctx, "tenant-a", "evt_1", again, ttl)
	require.NoError(t, err)
	assert.False(t, recorded, "the same attempt number twice")
	_, err = st.PutAttempt(ctx, "tenant-b", "evt_1", a1, ttl)
	require.NoError(t, err)

	got, err := st.ListAttempts(ctx, "tenant-a", "evt_1")
	require.NoError(t, err)
	assert.Equal(t, []event.Attempt{c1, a1, a2, a10}, got)
	got, err = st.ListAttempts(ctx, "tenant-a", "evt_2")
	require.NoError(t, err)
	assert.Equal(t, []event.Attempt{}, got)
	for _, it := range scan(t, table) {
		assert.Equal(t, fmt.Sprint(ttl), attrN(it, schema.AttrTTL), "attempts expire with the event")
		assert.False(t, contract.IsEventPartition(attrS(it, schema.AttrUserID)))
	}

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

// Every operation reports DynamoDB throttling that outlasted the SDK's
// retries as event.ErrUnavailable (503), never as success or not found.
func TestEveryOperationUnderThrottling(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	seed := store.New(db.Client, table)
	require.NoError(t, seed.CreateSubscription(ctx, "tenant-a", newSub("sub_a")))
	e := newEvent(t, "t", map[string]any{})
	require.NoError(t, seed.Put(ctx, "tenant-a", e))
	_, _, err := seed.PutIdempotent(ctx, "tenant-a", newEvent(t, "t", map[string]any{}), "k", "h")
	require.NoError(t, err)
	before := len(scan(t, table))

	throttledOp := ""
	st := store.New(db.FaultClient(func(op string, _ []byte) *http.Response {
		if op == throttledOp || throttledOp == "*" {
			return ddbtest.AWSError("ProvisionedThroughputExceededException", "throughput exceeded")
		}
		return nil
	}), table)
	now := time.Unix(1_900_000_000, 0)
	ops := []struct {
		name, op string
		call     func() error
	}{
		{"Get", "GetItem", func() error { _, err := st.Get(ctx, "tenant-a", e.ID); return err }},
		{"Put", "PutItem", func() error { return st.Put(ctx, "tenant-a", newEvent(t, "t", map[string]any{})) }},
		{"Transition", "UpdateItem", func() error {
			_, err := st.Transition(ctx, "tenant-a", e.ID, []event.Status{event.Received}, event.Delivered)
			return err
		}},
		{"List", "Query", func() error { _, err := st.List(ctx, event.InboxQuery{Tenant: "tenant-a"}); return err }},
		{"idempotent repeat", "GetItem", func() error {
			_, _, err := st.PutIdempotent(ctx, "tenant-a", newEvent(t, "t", map[string]any{}), "k", "h")
			return err
		}},
		{"CreateSubscription list", "Query", func() error { return st.CreateSubscription(ctx, "tenant-a", newSub("sub_b")) }},
		{"CreateSubscription put", "PutItem", func() error { return st.CreateSubscription(ctx, "tenant-a", newSub("sub_b")) }},
		{"ListSubscriptions", "Query", func() error { _, err := st.ListSubscriptions(ctx, "tenant-a"); return err }},
		{"GetSubscription", "GetItem", func() error { _, err := st.GetSubscription(ctx, "tenant-a", "sub_a"); return err }},
		{"DeleteSubscription", "DeleteItem", func() error { return st.DeleteSubscription(ctx, "tenant-a", "sub_a") }},
		{"RotateSecret read", "GetItem", func() error {
			_, err := st.RotateSecret(ctx, "tenant-a", "sub_a", "whsec_x", now)
			return err
		}},
		{"RotateSecret write", "UpdateItem", func() error {
			_, err := st.RotateSecret(ctx, "tenant-a", "sub_a", "whsec_x", now)
			return err
		}},
		{"SubscriptionSucceeded", "UpdateItem", func() error { return st.SubscriptionSucceeded(ctx, "tenant-a", "sub_a") }},
		{"SubscriptionFailed", "UpdateItem", func() error {
			_, err := st.SubscriptionFailed(ctx, "tenant-a", "sub_a", now, 0, "r")
			return err
		}},
		{"PutAttempt", "PutItem", func() error {
			_, err := st.PutAttempt(ctx, "tenant-a", e.ID, event.Attempt{SubscriptionID: "sub_a", Number: 1}, e.TTL)
			return err
		}},
		{"ListAttempts", "Query", func() error { _, err := st.ListAttempts(ctx, "tenant-a", e.ID); return err }},
	}
	for _, o := range ops {
		throttledOp = o.op
		err := o.call()
		assert.ErrorIs(t, err, event.ErrUnavailable, "%s", o.name)
	}
	throttledOp = ""
	assert.Len(t, scan(t, table), before, "a throttled operation wrote something")
	sub, err := seed.GetSubscription(ctx, "tenant-a", "sub_a")
	require.NoError(t, err)
	assert.Equal(t, []string{"whsec_sub_a"}, sub.Secrets)
	assert.False(t, sub.Disabled)
	assert.Empty(t, sub.FailingSince)
}

// A subscription without any secret gets the new one alone.
func TestRotateWithoutSecrets(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table)
	sub := newSub("sub_a")
	sub.Secrets = nil
	require.NoError(t, st.CreateSubscription(ctx, "tenant-a", sub))
	got, err := st.RotateSecret(ctx, "tenant-a", "sub_a", "whsec_1", time.Unix(2_000_000_000, 0))
	require.NoError(t, err)
	assert.Equal(t, []string{"whsec_1"}, got.Secrets)
}
