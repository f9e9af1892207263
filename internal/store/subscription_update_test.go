package store_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/ddb/ddbtest"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/store"
	"github.com/triggers-dev/triggers/schema"
)

// A patch changes only the fields it names; a new URL starts a closed
// breaker; re-enabling clears the failing run and leaves the circuit
// half-open at now (the next attempt is a probe); disabling records why.
func TestUpdateSubscription(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table)
	orig := newSub("sub_a", "order.paid")
	require.NoError(t, st.CreateSubscription(ctx, "tenant-a", orig))
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	get := func() event.Subscription {
		sub, err := st.GetSubscription(ctx, "tenant-a", "sub_a")
		require.NoError(t, err)
		return sub
	}

	got, err := st.UpdateSubscription(ctx, "tenant-a", "sub_a", event.SubscriptionPatch{Description: aws.String("new words")}, t0)
	require.NoError(t, err)
	want := orig
	want.Description = "new words"
	assert.Equal(t, want, got)
	assert.Equal(t, want, get())

	got, err = st.UpdateSubscription(ctx, "tenant-a", "sub_a", event.SubscriptionPatch{EventTypes: &[]string{}, Description: aws.String("")}, t0)
	require.NoError(t, err)
	want.EventTypes, want.Description = []string{}, ""
	assert.Equal(t, want, got, "[] is every type, \"\" clears the description")

	// A failing endpoint with an open circuit, then a new URL.
	for i := 1; i <= 3; i++ {
		_, err := st.SubscriptionFailed(ctx, "tenant-a", "sub_a", "", t0.Add(time.Duration(i)*time.Second), time.Hour, "r")
		require.NoError(t, err)
	}
	_, err = st.OpenCircuit(ctx, "tenant-a", "sub_a", "", t0, t0.Add(time.Minute), time.Minute)
	require.NoError(t, err)
	_, err = st.UpdateSubscription(ctx, "tenant-a", "sub_a", event.SubscriptionPatch{URL: aws.String(orig.URL)}, t0)
	require.NoError(t, err)
	assert.Equal(t, 3, get().ConsecutiveFailures, "the same URL is the same endpoint")
	// Another path or query string, the host's case, the default port
	// spelled out: the same server keeps its breaker (a query-string
	// PATCH re-armed a hanging endpoint's circuit at will).
	for _, u := range []string{"https://hooks.example.com/other?r=1", "https://HOOKS.example.com:443/sub_a?r=2",
		"https://hooks.example.com./sub_a", "https://hooks.example.com:0443/sub_a"} {
		got, err = st.UpdateSubscription(ctx, "tenant-a", "sub_a", event.SubscriptionPatch{URL: aws.String(u)}, t0)
		require.NoError(t, err)
		assert.Equal(t, u, got.URL)
		assert.Equal(t, 3, got.ConsecutiveFailures, "%s: the same server", u)
		assert.Equal(t, t0.Add(time.Minute), got.CircuitOpenUntil, "%s: still open", u)
		assert.Equal(t, time.Minute, got.CircuitCooldown, "%s: for as long", u)
		assert.NotEmpty(t, got.FailingSince, "%s: the failing run goes on", u)
	}
	// An IP address's spellings are one server.
	_, err = st.UpdateSubscription(ctx, "tenant-a", "sub_a", event.SubscriptionPatch{URL: aws.String("https://[2606:4700::1111]/a")}, t0)
	require.NoError(t, err)
	for i := 1; i <= 2; i++ {
		_, err := st.SubscriptionFailed(ctx, "tenant-a", "sub_a", "", t0.Add(time.Duration(i)*time.Second), time.Hour, "r")
		require.NoError(t, err)
	}
	for _, u := range []string{"https://[2606:4700:0:0:0:0:0:1111]/a", "https://[2606:4700:0000::1111]:443/b"} {
		got, err = st.UpdateSubscription(ctx, "tenant-a", "sub_a", event.SubscriptionPatch{URL: aws.String(u)}, t0)
		require.NoError(t, err)
		assert.Equal(t, 2, got.ConsecutiveFailures, "%s: the same address", u)
	}
	// Another port or scheme is another server.
	got, err = st.UpdateSubscription(ctx, "tenant-a", "sub_a", event.SubscriptionPatch{URL: aws.String("https://hooks.example.com:8443/sub_a")}, t0)
	require.NoError(t, err)
	assert.Zero(t, got.ConsecutiveFailures, "another port")
	for i := 1; i <= 3; i++ {
		_, err := st.SubscriptionFailed(ctx, "tenant-a", "sub_a", "", t0.Add(time.Duration(i)*time.Second), time.Hour, "r")
		require.NoError(t, err)
	}
	_, err = st.OpenCircuit(ctx, "tenant-a", "sub_a", "", t0, t0.Add(time.Minute), time.Minute)
	require.NoError(t, err)
	got, err = st.UpdateSubscription(ctx, "tenant-a", "sub_a", event.SubscriptionPatch{URL: aws.String("https://new.example.com/h")}, t0)
	require.NoError(t, err)
	assert.Equal(t, "https://new.example.com/h", got.URL)
	assert.Zero(t, got.ConsecutiveFailures)
	assert.True(t, got.CircuitOpenUntil.IsZero(), "closed")
	assert.Zero(t, got.CircuitCooldown, "a failed probe of the new server starts from Cooldown")
	assert.Empty(t, got.FailingSince)

	// Disabled after failing for too long, then re-enabled.
	_, err = st.SubscriptionFailed(ctx, "tenant-a", "sub_a", "", t0.Add(time.Second), time.Hour, "r")
	require.NoError(t, err)
	run, err := st.SubscriptionFailed(ctx, "tenant-a", "sub_a", "", t0.Add(2*time.Hour), time.Hour, "failing for 1h")
	require.NoError(t, err)
	require.True(t, run.Disabled)
	t1 := t0.Add(3 * time.Hour)
	got, err = st.UpdateSubscription(ctx, "tenant-a", "sub_a", event.SubscriptionPatch{Disabled: aws.Bool(false)}, t1)
	require.NoError(t, err)
	assert.False(t, got.Disabled)
	assert.Empty(t, got.DisabledReason)
	assert.Empty(t, got.FailingSince)
	assert.Zero(t, got.ConsecutiveFailures)
	assert.Equal(t, t1, got.CircuitOpenUntil)
	assert.True(t, got.HalfOpen(t1), "the next attempt is a probe")
	ok, err := st.AcquireProbe(ctx, "tenant-a", "sub_a", t1, t1.Add(10*time.Second))
	require.NoError(t, err)
	assert.True(t, ok)
	ok, err = st.AcquireProbe(ctx, "tenant-a", "sub_a", t1, t1.Add(10*time.Second))
	require.NoError(t, err)
	assert.False(t, ok, "one probe at a time")
	run, err = st.SubscriptionFailed(ctx, "tenant-a", "sub_a", "", t1.Add(time.Second), time.Hour, "r")
	require.NoError(t, err)
	assert.Equal(t, event.FailureRun{Consecutive: 1}, runChecked(t, st, "tenant-a", "sub_a", run), "a new run starts: not disabled again at once")

	// Re-enabling an enabled subscription changes nothing.
	before := get()
	got, err = st.UpdateSubscription(ctx, "tenant-a", "sub_a", event.SubscriptionPatch{Disabled: aws.Bool(false)}, t1.Add(time.Hour))
	require.NoError(t, err)
	assert.Equal(t, before, got)

	got, err = st.UpdateSubscription(ctx, "tenant-a", "sub_a", event.SubscriptionPatch{Disabled: aws.Bool(true)}, t1)
	require.NoError(t, err)
	assert.True(t, got.Disabled)
	assert.Equal(t, store.ReasonDisabledByAPI, got.DisabledReason)

	for _, c := range []struct{ tenant, id string }{{"tenant-a", "sub_none"}, {"tenant-b", "sub_a"}, {"tenant-a", "#count"}} {
		_, err = st.UpdateSubscription(ctx, c.tenant, c.id, event.SubscriptionPatch{Description: aws.String("x")}, t1)
		assert.ErrorIs(t, err, event.ErrSubscriptionNotFound, "%v", c)
	}
	subs, err := st.ListSubscriptions(ctx, "tenant-b")
	require.NoError(t, err)
	assert.Empty(t, subs, "nothing created by a patch")
}

// deleteRacer deletes the subscription just before the first UpdateItem
// it forwards.
type deleteRacer struct {
	store.API
	other *store.Store
	done  bool
}

func (r *deleteRacer) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if !r.done {
		r.done = true
		if err := r.other.DeleteSubscription(ctx, "tenant-a", "sub_a"); err != nil {
			return nil, err
		}
	}
	return r.API.UpdateItem(ctx, in, optFns...)
}

// A delete between the patch's read and its write wins: the patch is
// ErrSubscriptionNotFound and writes nothing, not a resurrected item.
func TestUpdateSubscriptionConcurrentDelete(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table)
	require.NoError(t, st.CreateSubscription(ctx, "tenant-a", newSub("sub_a")))
	racer := &deleteRacer{API: db.Client, other: st}
	_, err := store.New(racer, table).UpdateSubscription(ctx, "tenant-a", "sub_a", event.SubscriptionPatch{URL: aws.String("https://x.example.com/")}, time.Now())
	assert.ErrorIs(t, err, event.ErrSubscriptionNotFound)
	_, err = st.GetSubscription(ctx, "tenant-a", "sub_a")
	assert.ErrorIs(t, err, event.ErrSubscriptionNotFound)
	for _, it := range scan(t, table) {
		assert.NotEqual(t, "sub_a", attrS(it, schema.AttrTimestampEventID), "no item resurrected")
	}
}

// A subscription's attempts are listed newest event first (latest attempt
// first within an event), paged by limit and position, filtered by
// outcome, kept per tenant and subscription, and hidden once expired.
func TestListSubscriptionAttempts(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table)
	ttl := time.Now().Add(time.Hour).Unix()
	base := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	var ids []string
	for i := range 5 {
		id, _, err := event.NewID(base.Add(time.Duration(i)*time.Minute), nil)
		require.NoError(t, err)
		ids = append(ids, id)
	}
	ts := func(i int) string { return event.FormatTime(base.Add(time.Duration(i) * time.Second)) }
	for i, id := range ids {
		outcome := "delivered"
		if i%2 == 0 {
			outcome = "failed"
		}
		record(t, st, "tenant-a", id, event.Attempt{SubscriptionID: "sub_a", Number: 1, Timestamp: ts(i), Outcome: outcome, StatusCode: 200}, ttl)
	}
	record(t, st, "tenant-a", ids[4], event.Attempt{SubscriptionID: "sub_a", Number: 2, Timestamp: ts(9), Outcome: "delivered"}, ttl)
	record(t, st, "tenant-a", ids[4], event.Attempt{SubscriptionID: "sub_b", Number: 1, Timestamp: ts(9), Outcome: "delivered"}, ttl)
	record(t, st, "tenant-b", ids[3], event.Attempt{SubscriptionID: "sub_a", Number: 1, Timestamp: ts(9), Outcome: "delivered"}, ttl)
	// Scheduled (not yet made) attempts are listed too.
	_, ok, err := st.ScheduleAttempt(ctx, "tenant-a", ids[0], event.Attempt{SubscriptionID: "sub_a", Number: 2, Timestamp: ts(20), NextAttemptAt: ts(30)}, ttl)
	require.NoError(t, err)
	require.True(t, ok)

	key := func(a event.SubscriptionAttempt) string {
		return fmt.Sprintf("%s#%d:%s", a.EventID[len(a.EventID)-4:], a.Number, a.Outcome)
	}
	k := func(i, n int, outcome string) string {
		return fmt.Sprintf("%s#%d:%s", ids[i][len(ids[i])-4:], n, outcome)
	}
	all := func(q event.AttemptsQuery) ([]string, []string) {
		var got, cursors []string
		for {
			page, err := st.ListSubscriptionAttempts(ctx, q)
			require.NoError(t, err)
			assert.LessOrEqual(t, len(page.Attempts), q.Limit)
			for _, a := range page.Attempts {
				got = append(got, key(a))
			}
			if page.Next == "" {
				return got, cursors
			}
			cursors = append(cursors, page.Next)
			q.After = page.Next
		}
	}
	want := []string{k(4, 2, "delivered"), k(4, 1, "failed"), k(3, 1, "delivered"), k(2, 1, "failed"), k(1, 1, "delivered"), k(0, 2, "scheduled"), k(0, 1, "failed")}
	got, cursors := all(event.AttemptsQuery{Tenant: "tenant-a", SubscriptionID: "sub_a", Limit: 100})
	assert.Equal(t, want, got)
	assert.Empty(t, cursors)
	got, cursors = all(event.AttemptsQuery{Tenant: "tenant-a", SubscriptionID: "sub_a", Limit: 2})
	assert.Equal(t, want, got, "pages of 2")
	assert.Len(t, cursors, 3)
	got, _ = all(event.AttemptsQuery{Tenant: "tenant-a", SubscriptionID: "sub_a", Limit: 2, Outcome: "failed"})
	assert.Equal(t, []string{k(4, 1, "failed"), k(2, 1, "failed"), k(0, 1, "failed")}, got)
	// A later round asks only for what the page still needs: asking for
	// more put three delivered attempts on a page of 2 (mutant need :=
	// q.Limit + len(page.Attempts), which outlived the suite).
	got, _ = all(event.AttemptsQuery{Tenant: "tenant-a", SubscriptionID: "sub_a", Limit: 2, Outcome: "delivered"})
	assert.Equal(t, []string{k(4, 2, "delivered"), k(3, 1, "delivered"), k(1, 1, "delivered")}, got)
	got, _ = all(event.AttemptsQuery{Tenant: "tenant-a", SubscriptionID: "sub_b", Limit: 10})
	assert.Equal(t, []string{k(4, 1, "delivered")}, got)
	got, _ = all(event.AttemptsQuery{Tenant: "tenant-b", SubscriptionID: "sub_b", Limit: 10})
	assert.Empty(t, got, "another tenant's subscription of the same id")

	page, err := st.ListSubscriptionAttempts(ctx, event.AttemptsQuery{Tenant: "tenant-a", SubscriptionID: "sub_a", Limit: 1})
	require.NoError(t, err)
	require.Len(t, page.Attempts, 1)
	assert.Equal(t, event.SubscriptionAttempt{EventID: ids[4], Attempt: event.Attempt{SubscriptionID: "sub_a", Number: 2, Timestamp: ts(9), Outcome: "delivered", Sends: 1}}, page.Attempts[0])

	later := store.New(db.Client, table, store.WithClock(func() time.Time { return time.Unix(ttl+1, 0) }))
	page, err = later.ListSubscriptionAttempts(ctx, event.AttemptsQuery{Tenant: "tenant-a", SubscriptionID: "sub_a", Limit: 10})
	require.NoError(t, err)
	assert.Empty(t, page.Attempts, "expired")
	assert.Empty(t, page.Next)
}

// An attempt whose entry was written but whose own write failed (the
// entry comes first) is not listed; making the attempt again lists it
// once.
func TestAttemptRefWithoutAttempt(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	fail := true
	st := store.New(db.FaultClient(func(op string, _ []byte) *http.Response {
		if op == "UpdateItem" && fail {
			fail = false
			return ddbtest.AWSError("InternalServerError", "boom")
		}
		return nil
	}), table)
	ttl := time.Now().Add(time.Hour).Unix()
	now := time.Now()
	_, _, err := st.ClaimAttempt(ctx, "tenant-a", "evt_1", claim("sub_a", 1, "o", now), ttl)
	require.Error(t, err)
	q := event.AttemptsQuery{Tenant: "tenant-a", SubscriptionID: "sub_a", Limit: 10}
	page, err := st.ListSubscriptionAttempts(ctx, q)
	require.NoError(t, err)
	assert.Empty(t, page.Attempts)

	_, claimed, err := st.ClaimAttempt(ctx, "tenant-a", "evt_1", claim("sub_a", 1, "o", now), ttl)
	require.NoError(t, err)
	require.True(t, claimed)
	page, err = st.ListSubscriptionAttempts(ctx, q)
	require.NoError(t, err)
	require.Len(t, page.Attempts, 1)
	assert.Equal(t, "pending", page.Attempts[0].Outcome)
}

// ReplaceSecrets writes only over the secrets it read: a rotation since
// is a conflict, a deleted subscription not found, and another count of
// secrets is refused before any write.
func TestReplaceSecrets(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table)
	orig := newSub("sub_a", "order.paid")
	require.NoError(t, st.CreateSubscription(ctx, "tenant-a", orig))

	require.NoError(t, st.ReplaceSecrets(ctx, "tenant-a", "sub_a", orig.Secrets, []string{"sealed:1"}))
	got, err := st.GetSubscription(ctx, "tenant-a", "sub_a")
	require.NoError(t, err)
	assert.Equal(t, []string{"sealed:1"}, got.Secrets)

	assert.ErrorIs(t, st.ReplaceSecrets(ctx, "tenant-a", "sub_a", orig.Secrets, []string{"sealed:2"}), event.ErrRotationConflict)
	assert.ErrorContains(t, st.ReplaceSecrets(ctx, "tenant-a", "sub_a", []string{"sealed:1"}, []string{"a", "b"}), "2 secrets for 1")
	assert.ErrorIs(t, st.ReplaceSecrets(ctx, "tenant-a", "sub_gone", []string{"x"}, []string{"y"}), event.ErrSubscriptionNotFound)
	got, err = st.GetSubscription(ctx, "tenant-a", "sub_a")
	require.NoError(t, err)
	assert.Equal(t, []string{"sealed:1"}, got.Secrets, "unchanged by the refused writes")
}
