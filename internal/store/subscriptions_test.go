package store_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
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
		if attrS(it, schema.AttrTimestampEventID) == contract.SubscriptionCountKey {
			assert.Equal(t, contract.RecordTypeSubscriptionCount, attrS(it, "record_type"))
			continue
		}
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
	assert.Equal(t, map[string]string{"tenant-a": "1", "tenant-b": "1"}, subscriptionCounts(t, table), "the counters follow creates and deletes")
	// The counter is no subscription.
	_, err = st.GetSubscription(ctx, "tenant-a", contract.SubscriptionCountKey)
	assert.ErrorIs(t, err, event.ErrSubscriptionNotFound)
	assert.ErrorIs(t, st.DeleteSubscription(ctx, "tenant-a", contract.SubscriptionCountKey), event.ErrSubscriptionNotFound)
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
	require.NoError(t, st.CheckSubscriptionLimit(ctx, "tenant-b"), "a tenant without a counter")
	limitErr := func(err error) {
		t.Helper()
		var ie *event.InputError
		require.ErrorAs(t, err, &ie)
		assert.Equal(t, event.CodeInvalidSubscription, ie.Code)
		assert.Equal(t, fmt.Sprintf("this tenant already has %d subscriptions, the most it may hold: delete one first", event.MaxSubscriptions), ie.Message)
	}
	limitErr(st.CheckSubscriptionLimit(ctx, "tenant-a"))
	limitErr(st.CreateSubscription(ctx, "tenant-a", newSub("sub_x")))
	subs, err := st.ListSubscriptions(ctx, "tenant-a")
	require.NoError(t, err)
	assert.Len(t, subs, event.MaxSubscriptions)
	require.NoError(t, st.CreateSubscription(ctx, "tenant-b", newSub("sub_x")), "the limit is per tenant")
	require.NoError(t, st.CheckSubscriptionLimit(ctx, "tenant-b"), "a tenant below the limit")
	require.NoError(t, st.DeleteSubscription(ctx, "tenant-a", "sub_03"))
	require.NoError(t, st.CheckSubscriptionLimit(ctx, "tenant-a"), "a deletion frees a place")
	require.NoError(t, st.CreateSubscription(ctx, "tenant-a", newSub("sub_x")), "a deletion frees a place")
	assert.Equal(t, map[string]string{"tenant-a": "20", "tenant-b": "1"}, subscriptionCounts(t, table))
}

// subscriptionCounts returns every tenant's subscription counter.
func subscriptionCounts(t *testing.T, table string) map[string]string {
	out := map[string]string{}
	for _, it := range scan(t, table) {
		if attrS(it, schema.AttrTimestampEventID) == contract.SubscriptionCountKey {
			out[strings.TrimPrefix(attrS(it, schema.AttrUserID), contract.SubscriptionPrefix)] = attrN(it, "count")
		}
	}
	return out
}

// Concurrent creates cannot pass the limit together: 25 at once for a
// tenant give exactly MaxSubscriptions subscriptions and a clear
// invalid_subscription error for each of the others, with the counter
// starting absent (the first creates race to write it) or present.
func TestSubscriptionLimitUnderConcurrency(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table)
	for _, tenant := range []string{"tenant-new", "tenant-counted"} {
		if tenant == "tenant-counted" {
			require.NoError(t, st.CreateSubscription(ctx, tenant, newSub("sub_first")))
		}
		const n = 25
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { errs[i] = st.CreateSubscription(ctx, tenant, newSub(fmt.Sprintf("sub_%02d", i))) })
		}
		wg.Wait()
		ok, limited := 0, 0
		for i, err := range errs {
			var ie *event.InputError
			switch {
			case err == nil:
				ok++
			case errors.As(err, &ie) && ie.Code == event.CodeInvalidSubscription:
				limited++
			default:
				t.Errorf("%s create %d: %v", tenant, i, err)
			}
		}
		want := event.MaxSubscriptions
		if tenant == "tenant-counted" {
			want--
		}
		assert.Equal(t, want, ok, "%s: creates that succeeded", tenant)
		assert.Equal(t, n-want, limited, "%s: creates refused at the limit", tenant)
		subs, err := st.ListSubscriptions(ctx, tenant)
		require.NoError(t, err)
		assert.Len(t, subs, event.MaxSubscriptions, tenant)
		assert.Equal(t, fmt.Sprint(event.MaxSubscriptions), subscriptionCounts(t, table)[tenant])
	}
}

// A table written before the counter existed: the first create counts
// the subscriptions there are, so the limit holds for them too; a delete
// without a counter still deletes.
func TestSubscriptionLimitWithoutCounter(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table)
	putLegacySubscriptions(t, table, "tenant-a", event.MaxSubscriptions)
	require.NoError(t, st.DeleteSubscription(ctx, "tenant-a", "sub_00"), "no counter to decrement")
	require.NoError(t, st.CreateSubscription(ctx, "tenant-a", newSub("sub_x")), "19 counted")
	var ie *event.InputError
	require.ErrorAs(t, st.CreateSubscription(ctx, "tenant-a", newSub("sub_y")), &ie)
	assert.Equal(t, "20", subscriptionCounts(t, table)["tenant-a"])
}

// A failed condition on a transaction's last try (after conflicts with
// other transactions on every try before) is still the call's answer: a
// tenant at the limit gets the limit's error, a delete of a subscription
// that is gone ErrSubscriptionNotFound. Both were a 500: the tries ran
// out before the reasons were read (found by review).
func TestSubscriptionAnswersOnTheLastTry(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table)
	for i := range event.MaxSubscriptions {
		require.NoError(t, st.CreateSubscription(ctx, "tenant-a", newSub(fmt.Sprintf("sub_%02d", i))))
	}
	var calls, conflicts atomic.Int32
	busy := store.New(conflictingClient(&calls, &conflicts), table)
	const before = 7 // transactTries - 1
	conflicts.Store(before)
	var ie *event.InputError
	require.ErrorAs(t, busy.CreateSubscription(ctx, "tenant-a", newSub("sub_x")), &ie)
	assert.Equal(t, event.CodeInvalidSubscription, ie.Code)
	assert.Equal(t, int32(before+1), calls.Load(), "the conflicts, then the try that failed the limit")

	calls.Store(0)
	conflicts.Store(before)
	assert.ErrorIs(t, busy.DeleteSubscription(ctx, "tenant-a", "sub_none"), event.ErrSubscriptionNotFound)
	assert.Equal(t, int32(before+1), calls.Load())

	// Conflicts on every try: unavailable (503), not a 500.
	calls.Store(0)
	conflicts.Store(1000)
	assert.ErrorIs(t, busy.DeleteSubscription(ctx, "tenant-a", "sub_00"), event.ErrUnavailable)
	assert.Equal(t, int32(before+1), calls.Load())
	assert.Equal(t, map[string]string{"tenant-a": "20"}, subscriptionCounts(t, table), "nothing changed")
}

// A tenant's first counter (a table written before the counter existed)
// counts the subscriptions there are when it is written: a delete between
// the count and the write of the counter (run here right before that
// write) is not counted. The counter was one too high for good, and the
// tenant refused a create below the limit (found by review).
func TestSubscriptionCountRacesADelete(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table)
	putLegacySubscriptions(t, table, "tenant-a", 3)
	// The create's writes: its transaction (no counter: refused), then
	// the counter's; the tenant's delete runs right before that one.
	var writes atomic.Int32
	client := db.FaultClient(func(op string, _ []byte) *http.Response {
		if op != "PutItem" && op != "TransactWriteItems" {
			return nil
		}
		if writes.Add(1) == 2 {
			require.NoError(t, st.DeleteSubscription(ctx, "tenant-a", "sub_00"))
		}
		return nil
	})
	require.NoError(t, store.New(client, table).CreateSubscription(ctx, "tenant-a", newSub("sub_x")))
	subs, err := st.ListSubscriptions(ctx, "tenant-a")
	require.NoError(t, err)
	assert.Len(t, subs, 3, "sub_01, sub_02, sub_x")
	assert.Equal(t, "3", subscriptionCounts(t, table)["tenant-a"], "the counter counts what is there")

	// A delete whose first try finds no counter, and a create writes it
	// (counting the subscription being deleted) before its next try:
	// the delete decrements it.
	putLegacySubscriptions(t, table, "tenant-b", 3)
	writes.Store(0)
	deleting := db.FaultClient(func(op string, _ []byte) *http.Response {
		if op == "TransactWriteItems" && writes.Add(1) == 2 {
			require.NoError(t, st.CreateSubscription(ctx, "tenant-b", newSub("sub_x")))
		}
		return nil
	})
	require.NoError(t, store.New(deleting, table).DeleteSubscription(ctx, "tenant-b", "sub_00"))
	subs, err = st.ListSubscriptions(ctx, "tenant-b")
	require.NoError(t, err)
	assert.Len(t, subs, 3, "sub_01, sub_02, sub_x")
	assert.Equal(t, "3", subscriptionCounts(t, table)["tenant-b"], "the counter counts what is there")
}

// putLegacySubscriptions writes n subscriptions of tenant (sub_00, ...)
// as a version before the subscription counter did: no counter.
func putLegacySubscriptions(t *testing.T, table, tenant string, n int) {
	t.Helper()
	for i := range n {
		putRaw(t, table, map[string]types.AttributeValue{
			schema.AttrUserID:           &types.AttributeValueMemberS{Value: contract.SubscriptionPrefix + tenant},
			schema.AttrTimestampEventID: &types.AttributeValueMemberS{Value: fmt.Sprintf("sub_%02d", i)},
			"record_type":               &types.AttributeValueMemberS{Value: contract.RecordTypeSubscription},
			"url":                       &types.AttributeValueMemberS{Value: "https://hooks.example.com/"},
			"created_at":                &types.AttributeValueMemberS{Value: "2026-11-23T10:00:00.000000Z"},
		})
	}
}

func putRaw(t *testing.T, table string, item map[string]types.AttributeValue) {
	t.Helper()
	_, err := db.Client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item})
	require.NoError(t, err)
}

// A rotation puts the new secret first; the one it replaces signs until
// the new overlap ends, older ones until their own overlaps end, at most
// event.MaxSigningSecrets in all; a rotation that lost a race to another
// is a conflict and changes nothing.
func TestRotateSecret(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table)
	require.NoError(t, st.CreateSubscription(ctx, "tenant-a", newSub("sub_a")))
	now := time.Unix(1_999_900_000, 0)
	until := now.Add(24 * time.Hour)
	got, err := st.RotateSecret(ctx, "tenant-a", "sub_a", "whsec_2", now, until)
	require.NoError(t, err)
	assert.Equal(t, []string{"whsec_2", "whsec_sub_a"}, got.Secrets)
	assert.Equal(t, []time.Time{until}, got.PreviousExpires)

	// A rotation sent again within the overlap (its answer lost): the
	// receiver's secret, whsec_sub_a, still signs until its overlap ends.
	got, err = st.RotateSecret(ctx, "tenant-a", "sub_a", "whsec_3", now.Add(time.Minute), until.Add(time.Minute))
	require.NoError(t, err)
	assert.Equal(t, []string{"whsec_3", "whsec_2", "whsec_sub_a"}, got.Secrets)
	assert.Equal(t, []time.Time{until.Add(time.Minute), until}, got.PreviousExpires)
	assert.Equal(t, []string{"whsec_3", "whsec_2", "whsec_sub_a"}, got.SigningSecrets(until.Add(-time.Second)))
	assert.Equal(t, []string{"whsec_3", "whsec_2"}, got.SigningSecrets(until))
	read, err := st.GetSubscription(ctx, "tenant-a", "sub_a")
	require.NoError(t, err)
	assert.Equal(t, got, read)

	// A third within the overlap drops the oldest: three secrets at most.
	got, err = st.RotateSecret(ctx, "tenant-a", "sub_a", "whsec_4", now.Add(2*time.Minute), until.Add(2*time.Minute))
	require.NoError(t, err)
	assert.Equal(t, []string{"whsec_4", "whsec_3", "whsec_2"}, got.Secrets)
	assert.Equal(t, []time.Time{until.Add(2 * time.Minute), until.Add(time.Minute)}, got.PreviousExpires)

	// Once their overlaps have ended, the older secrets are dropped.
	later := until.Add(time.Hour)
	got, err = st.RotateSecret(ctx, "tenant-a", "sub_a", "whsec_5", later, later.Add(24*time.Hour))
	require.NoError(t, err)
	assert.Equal(t, []string{"whsec_5", "whsec_4"}, got.Secrets)
	assert.Equal(t, []time.Time{later.Add(24 * time.Hour)}, got.PreviousExpires)
	read, err = st.GetSubscription(ctx, "tenant-a", "sub_a")
	require.NoError(t, err)
	assert.Equal(t, got, read)

	_, err = st.RotateSecret(ctx, "tenant-a", "sub_none", "whsec_x", now, until)
	assert.ErrorIs(t, err, event.ErrSubscriptionNotFound)

	// Another rotation lands between this one's read and its write.
	racer := &rotateRacer{API: db.Client, other: st}
	_, err = store.New(racer, table).RotateSecret(ctx, "tenant-a", "sub_a", "whsec_loser", later, until)
	assert.ErrorIs(t, err, event.ErrRotationConflict)
	read, err = st.GetSubscription(ctx, "tenant-a", "sub_a")
	require.NoError(t, err)
	assert.Equal(t, []string{"whsec_winner", "whsec_5"}, read.Secrets)

	// A delete lands between the read and the write: the subscription is
	// not found (404), not a conflict, and nothing is written back.
	deleter := &rotateRacer{API: db.Client, del: st}
	_, err = store.New(deleter, table).RotateSecret(ctx, "tenant-a", "sub_a", "whsec_late", later, until)
	assert.ErrorIs(t, err, event.ErrSubscriptionNotFound)
	_, err = st.GetSubscription(ctx, "tenant-a", "sub_a")
	assert.ErrorIs(t, err, event.ErrSubscriptionNotFound, "the rotation recreated nothing")
}

// A subscription rotated before several previous secrets were kept has
// one overlap end, previous_expires: it still bounds its previous secret,
// and the next rotation keeps that secret while it lasts. A rotation also
// keeps previous_expires up to date for a reader of that version.
func TestRotateSecretOfAnEarlierRotation(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table)
	require.NoError(t, st.CreateSubscription(ctx, "tenant-a", newSub("sub_a")))
	now := time.Unix(1_999_900_000, 0)
	rotateAsPreviousVersion(t, table, []string{"whsec_b", "whsec_a"}, now.Add(time.Hour))
	sub, err := st.GetSubscription(ctx, "tenant-a", "sub_a")
	require.NoError(t, err)
	assert.Equal(t, []time.Time{now.Add(time.Hour)}, sub.PreviousExpires)
	assert.Equal(t, []string{"whsec_b", "whsec_a"}, sub.SigningSecrets(now))
	assert.Equal(t, []string{"whsec_b"}, sub.SigningSecrets(now.Add(time.Hour)))

	got, err := st.RotateSecret(ctx, "tenant-a", "sub_a", "whsec_c", now, now.Add(24*time.Hour))
	require.NoError(t, err)
	assert.Equal(t, []string{"whsec_c", "whsec_b", "whsec_a"}, got.Secrets)
	assert.Equal(t, []time.Time{now.Add(24 * time.Hour), now.Add(time.Hour)}, got.PreviousExpires)
	for _, it := range scan(t, table) {
		if attrS(it, schema.AttrTimestampEventID) == "sub_a" {
			assert.Contains(t, it, "secrets_expire")
			assert.Equal(t, fmt.Sprint(now.Add(24*time.Hour).Unix()), attrN(it, "previous_expires"),
				"the previous version reads previous_expires alone: it keeps Secrets[1]'s overlap")
		}
	}
	read, err := st.GetSubscription(ctx, "tenant-a", "sub_a")
	require.NoError(t, err)
	assert.Equal(t, got, read)
}

// A rotation by the previous version (it writes secrets and
// previous_expires only) after one by this version leaves a stale
// secrets_expire: previous_expires, which then disagrees with it, wins,
// so the secret that rotation replaced signs through its overlap (found
// by review: the stale list ended it at once).
func TestRotationByThePreviousVersionAfterThisOne(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table)
	require.NoError(t, st.CreateSubscription(ctx, "tenant-a", newSub("sub_a")))
	now := time.Unix(1_999_900_000, 0)
	_, err := st.RotateSecret(ctx, "tenant-a", "sub_a", "whsec_b", now, now.Add(24*time.Hour))
	require.NoError(t, err)
	// The previous version rotates a day later: whsec_c, whsec_b until
	// two days on.
	later := now.Add(24 * time.Hour)
	rotateAsPreviousVersion(t, table, []string{"whsec_c", "whsec_b"}, later.Add(24*time.Hour))
	sub, err := st.GetSubscription(ctx, "tenant-a", "sub_a")
	require.NoError(t, err)
	assert.Equal(t, []time.Time{later.Add(24 * time.Hour)}, sub.PreviousExpires)
	assert.Equal(t, []string{"whsec_c", "whsec_b"}, sub.SigningSecrets(later.Add(time.Hour)), "whsec_b signs through its overlap")
	got, err := st.RotateSecret(ctx, "tenant-a", "sub_a", "whsec_d", later.Add(time.Hour), later.Add(25*time.Hour))
	require.NoError(t, err)
	assert.Equal(t, []string{"whsec_d", "whsec_c", "whsec_b"}, got.Secrets, "the next rotation keeps whsec_b while its overlap lasts")
	assert.Equal(t, []time.Time{later.Add(25 * time.Hour), later.Add(24 * time.Hour)}, got.PreviousExpires)
}

// rotateAsPreviousVersion writes tenant-a's sub_a as a rotation of the
// version before secrets_expire does: the secrets and previous_expires.
func rotateAsPreviousVersion(t *testing.T, table string, secrets []string, previousExpires time.Time) {
	t.Helper()
	list := make([]types.AttributeValue, len(secrets))
	for i, sec := range secrets {
		list[i] = &types.AttributeValueMemberS{Value: sec}
	}
	_, err := db.Client.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(table),
		Key: map[string]types.AttributeValue{
			schema.AttrUserID:           &types.AttributeValueMemberS{Value: contract.SubscriptionPrefix + "tenant-a"},
			schema.AttrTimestampEventID: &types.AttributeValueMemberS{Value: "sub_a"},
		},
		UpdateExpression: aws.String("SET secrets = :s, previous_expires = :pe"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":s":  &types.AttributeValueMemberL{Value: list},
			":pe": &types.AttributeValueMemberN{Value: fmt.Sprint(previousExpires.Unix())},
		},
	})
	require.NoError(t, err)
}

// rotateRacer rotates the secret through other just before the first
// UpdateItem it forwards.
// rotateRacer runs, before its first UpdateItem, another rotation of
// tenant-a's sub_a (other) or its deletion (del).
type rotateRacer struct {
	store.API
	other, del *store.Store
	done       bool
}

func (r *rotateRacer) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if !r.done {
		r.done = true
		if r.del != nil {
			if err := r.del.DeleteSubscription(ctx, "tenant-a", "sub_a"); err != nil {
				return nil, err
			}
		} else if _, err := r.other.RotateSecret(ctx, "tenant-a", "sub_a", "whsec_winner", time.Unix(2_100_000_000, 0), time.Unix(2_100_086_400, 0)); err != nil {
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

	run, err := st.SubscriptionFailed(ctx, "tenant-a", "sub_a", "", t0, after, "r")
	require.NoError(t, err)
	assert.Equal(t, event.FailureRun{Consecutive: 1}, runChecked(t, st, "tenant-a", "sub_a", run))
	sub, err := st.GetSubscription(ctx, "tenant-a", "sub_a")
	require.NoError(t, err)
	assert.Equal(t, event.FormatTime(t0), sub.FailingSince)
	assert.False(t, sub.Disabled)

	run, err = st.SubscriptionFailed(ctx, "tenant-a", "sub_a", "", t0.Add(after-time.Second), after, "r")
	require.NoError(t, err)
	assert.Equal(t, event.FailureRun{Consecutive: 2}, runChecked(t, st, "tenant-a", "sub_a", run), "one second short of the period")
	run, err = st.SubscriptionFailed(ctx, "tenant-a", "sub_a", "", t0.Add(after-time.Second), after, "r")
	require.NoError(t, err)
	assert.Equal(t, event.FailureRun{Consecutive: 3}, runChecked(t, st, "tenant-a", "sub_a", run), "a failure recorded again counts again (the breaker's count is a heuristic)")
	sub, err = st.GetSubscription(ctx, "tenant-a", "sub_a")
	require.NoError(t, err)
	assert.Equal(t, event.FormatTime(t0), sub.FailingSince, "the run keeps its start")

	// A success ends the run; the next failure starts a new one.
	closed, err := st.SubscriptionSucceeded(ctx, "tenant-a", "sub_a", "", t0.Add(after))
	require.NoError(t, err)
	assert.True(t, closed, "it ended the run")
	sub, err = st.GetSubscription(ctx, "tenant-a", "sub_a")
	require.NoError(t, err)
	assert.Empty(t, sub.FailingSince)
	t1 := t0.Add(2 * after)
	run, err = st.SubscriptionFailed(ctx, "tenant-a", "sub_a", "", t1, after, "r")
	require.NoError(t, err)
	assert.Equal(t, event.FailureRun{Consecutive: 1}, runChecked(t, st, "tenant-a", "sub_a", run), "a new run")

	run, err = st.SubscriptionFailed(ctx, "tenant-a", "sub_a", "", t1.Add(after), after, "failing for 1h")
	require.NoError(t, err)
	assert.Equal(t, event.FailureRun{Disabled: true, Consecutive: 2}, runChecked(t, st, "tenant-a", "sub_a", run), "the run lasted the whole period; the count began again after the success")
	sub, err = st.GetSubscription(ctx, "tenant-a", "sub_a")
	require.NoError(t, err)
	assert.True(t, sub.Disabled)
	assert.Equal(t, "failing for 1h", sub.DisabledReason)
	run, err = st.SubscriptionFailed(ctx, "tenant-a", "sub_a", "", t1.Add(2*after), after, "again")
	require.NoError(t, err)
	assert.False(t, run.Disabled, "only the first caller disables it")
	sub, err = st.GetSubscription(ctx, "tenant-a", "sub_a")
	require.NoError(t, err)
	assert.Equal(t, "failing for 1h", sub.DisabledReason)

	_, err = st.SubscriptionFailed(ctx, "tenant-a", "sub_none", "", t1, after, "r")
	assert.ErrorIs(t, err, event.ErrSubscriptionNotFound)
	_, err = st.SubscriptionSucceeded(ctx, "tenant-a", "sub_none", "", t1)
	assert.ErrorIs(t, err, event.ErrSubscriptionNotFound)
	_, err = st.GetSubscription(ctx, "tenant-a", "sub_none")
	assert.ErrorIs(t, err, event.ErrSubscriptionNotFound)
}

// A subscription moved to another URL while a request to the old one was
// under way: the old URL's 410 Gone does not delete it, and the old
// server's failure does not count towards the new server's breaker. A
// failure at another path of the same server still counts (the breaker
// is per server: sameServer).
func TestSubscriptionMovedDuringARequest(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table)
	require.NoError(t, st.CreateSubscription(ctx, "tenant-a", newSub("sub_a")))
	require.NoError(t, st.CreateSubscription(ctx, "tenant-a", newSub("sub_b")))
	old := newSub("sub_a").URL // https://hooks.example.com/sub_a
	t0 := time.Unix(1_900_000_000, 0)
	move := func(url string) {
		t.Helper()
		_, err := st.UpdateSubscription(ctx, "tenant-a", "sub_a", event.SubscriptionPatch{URL: &url}, t0)
		require.NoError(t, err)
	}
	get := func() event.Subscription {
		t.Helper()
		sub, err := st.GetSubscription(ctx, "tenant-a", "sub_a")
		require.NoError(t, err)
		return sub
	}

	// Another path of the same server: the failure counts, the 410 does
	// not delete.
	move("https://HOOKS.example.com:443/sub_a/v2")
	run, err := st.SubscriptionFailed(ctx, "tenant-a", "sub_a", old, t0, time.Hour, "r")
	require.NoError(t, err)
	assert.Equal(t, event.FailureRun{Consecutive: 1}, runChecked(t, st, "tenant-a", "sub_a", run), "the same server: its breaker counts the failure")
	assert.Equal(t, event.FormatTime(t0), get().FailingSince)
	assert.ErrorIs(t, st.DeleteGoneSubscription(ctx, "tenant-a", "sub_a", old), event.ErrSubscriptionMoved)
	assert.Equal(t, "https://HOOKS.example.com:443/sub_a/v2", get().URL, "kept as moved")
	opened, err := st.OpenCircuit(ctx, "tenant-a", "sub_a", old, t0, t0.Add(time.Minute), time.Minute)
	require.NoError(t, err)
	assert.True(t, opened, "the same server: its circuit opens")
	assert.True(t, t0.Add(time.Minute).Equal(get().CircuitOpenUntil))

	// Another server: the breaker started afresh and stays so.
	move("https://other.example.net/in")
	run, err = st.SubscriptionFailed(ctx, "tenant-a", "sub_a", old, t0.Add(time.Minute), time.Hour, "r")
	require.NoError(t, err)
	assert.Equal(t, event.FailureRun{}, runChecked(t, st, "tenant-a", "sub_a", run), "the old server's failure is not the new one's")
	sub := get()
	assert.Zero(t, sub.ConsecutiveFailures)
	assert.Empty(t, sub.FailingSince)
	assert.True(t, sub.CircuitOpenUntil.IsZero(), "the move closed it")
	assert.ErrorIs(t, st.DeleteGoneSubscription(ctx, "tenant-a", "sub_a", old), event.ErrSubscriptionMoved)
	// Nor does a failed probe or a slow request of the old server open
	// the new one's circuit (found by review: for up to an hour).
	opened, err = st.OpenCircuit(ctx, "tenant-a", "sub_a", old, t0, t0.Add(2*time.Minute), 2*time.Minute)
	assert.ErrorIs(t, err, event.ErrSubscriptionMoved)
	assert.False(t, opened)
	sub = get()
	assert.True(t, sub.CircuitOpenUntil.IsZero(), "the old server's circuit is not the new one's")
	assert.Zero(t, sub.CircuitCooldown)
	opened, err = st.OpenCircuit(ctx, "tenant-a", "sub_a", "https://other.example.net/in", t0, t0.Add(2*time.Minute), 2*time.Minute)
	require.NoError(t, err)
	assert.True(t, opened, "at the URL it points to")
	assert.Equal(t, 2*time.Minute, get().CircuitCooldown)

	// A success of the server it left changes nothing; one of another
	// path of the server it is on counts.
	_, err = st.OpenCircuit(ctx, "tenant-a", "sub_a", "https://other.example.net/in", t0.Add(59*time.Minute), t0.Add(time.Hour), time.Minute)
	require.NoError(t, err)
	closed, err := st.SubscriptionSucceeded(ctx, "tenant-a", "sub_a", old, t0.Add(90*time.Second))
	require.NoError(t, err)
	assert.False(t, closed, "the old server's success closes nothing")
	assert.Equal(t, t0.Add(time.Hour).UTC(), get().CircuitOpenUntil, "the old server's success does not close the new one's circuit")
	closed, err = st.SubscriptionSucceeded(ctx, "tenant-a", "sub_a", "https://other.example.net/v2", t0.Add(100*time.Second))
	require.NoError(t, err)
	assert.True(t, closed)
	assert.True(t, get().CircuitOpenUntil.IsZero(), "the same server's success closes it")

	// At the URL it points to, both act; without a URL, wherever it points.
	run, err = st.SubscriptionFailed(ctx, "tenant-a", "sub_a", "https://other.example.net/in", t0.Add(2*time.Minute), time.Hour, "r")
	require.NoError(t, err)
	assert.Equal(t, event.FailureRun{Consecutive: 1}, runChecked(t, st, "tenant-a", "sub_a", run))
	run, err = st.SubscriptionFailed(ctx, "tenant-a", "sub_a", "", t0.Add(3*time.Minute), time.Hour, "r")
	require.NoError(t, err)
	assert.Equal(t, event.FailureRun{Consecutive: 2}, runChecked(t, st, "tenant-a", "sub_a", run))
	require.NoError(t, st.DeleteGoneSubscription(ctx, "tenant-a", "sub_a", "https://other.example.net/in"))
	_, err = st.GetSubscription(ctx, "tenant-a", "sub_a")
	require.ErrorIs(t, err, event.ErrSubscriptionNotFound)
	assert.ErrorIs(t, st.DeleteGoneSubscription(ctx, "tenant-a", "sub_a", old), event.ErrSubscriptionNotFound, "gone already")
	_, err = st.SubscriptionFailed(ctx, "tenant-a", "sub_a", old, t0, time.Hour, "r")
	assert.ErrorIs(t, err, event.ErrSubscriptionNotFound)
	require.NoError(t, st.DeleteGoneSubscription(ctx, "tenant-a", "sub_b", ""), "no URL: wherever it points")

	// Both deletes gave their places back: the tenant's counter is 0.
	assert.Equal(t, "0", counter(t, table, "tenant-a"), "the subscription counter")
}

// disableRacer runs race just before the UpdateItem that disables a
// subscription (SubscriptionFailed's second write), once.
type disableRacer struct {
	store.API
	race func(ctx context.Context)
}

func (r *disableRacer) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if r.race != nil && in.ExpressionAttributeNames["#dr"] == "disabled_reason" {
		race := r.race
		r.race = nil
		race(ctx)
	}
	return r.API.UpdateItem(ctx, in, optFns...)
}

// A failure ends a run that has lasted disableAfter, and the subscription
// changes between SubscriptionFailed's two writes (the count, then the
// disable): moved to another server by a PATCH, or its run ended by a
// success. The disable does not land: the run it measured is gone. (It
// landed unconditionally: the old server's failure disabled the
// subscription the tenant had just moved to a working server, or one that
// had just succeeded; found by review.)
func TestSubscriptionFailedDisablesOnlyTheRunItMeasured(t *testing.T) {
	ctx := context.Background()
	t0 := time.Unix(1_900_000_000, 0)
	const after = time.Hour
	for name, race := range map[string]func(st *store.Store) func(context.Context){
		"moved to another server": func(st *store.Store) func(context.Context) {
			return func(ctx context.Context) {
				_, err := st.UpdateSubscription(ctx, "tenant-a", "sub_a", event.SubscriptionPatch{URL: aws.String("https://other.example.net/in")}, t0)
				require.NoError(t, err)
			}
		},
		"a success": func(st *store.Store) func(context.Context) {
			return func(ctx context.Context) {
				_, err := st.SubscriptionSucceeded(ctx, "tenant-a", "sub_a", "", t0.Add(2*after+time.Second))
				require.NoError(t, err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			table := db.CreateTable(t, schema.Events())
			st := store.New(db.Client, table)
			require.NoError(t, st.CreateSubscription(ctx, "tenant-a", newSub("sub_a")))
			old := newSub("sub_a").URL
			_, err := st.SubscriptionFailed(ctx, "tenant-a", "sub_a", old, t0, after, "r")
			require.NoError(t, err)

			racer := &disableRacer{API: db.Client, race: race(st)}
			run, err := store.New(racer, table).SubscriptionFailed(ctx, "tenant-a", "sub_a", old, t0.Add(2*after), after, "failing for 2h")
			require.NoError(t, err)
			require.Nil(t, racer.race, "the race ran before the disable")
			assert.False(t, run.Disabled)
			sub, err := st.GetSubscription(ctx, "tenant-a", "sub_a")
			require.NoError(t, err)
			assert.False(t, sub.Disabled, "the run it measured ended before the disable")
			assert.Empty(t, sub.DisabledReason)
		})
	}
}

// Health updates arrive out of order when queue messages come back: an
// older success does not end a run that began after it, an older failure
// does not start a run before a later success, and repeating either
// changes nothing.
func TestSubscriptionHealthOutOfOrder(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table)
	require.NoError(t, st.CreateSubscription(ctx, "tenant-a", newSub("sub_a")))
	t0 := time.Unix(1_900_000_000, 0)
	get := func() event.Subscription {
		sub, err := st.GetSubscription(ctx, "tenant-a", "sub_a")
		require.NoError(t, err)
		return sub
	}
	succeeded := func(at time.Duration) bool {
		t.Helper()
		closed, err := st.SubscriptionSucceeded(ctx, "tenant-a", "sub_a", "", t0.Add(at))
		require.NoError(t, err)
		return closed
	}
	assert.False(t, succeeded(10*time.Second), "no run, no circuit: nothing to close (recorded all the same)")
	run, err := st.SubscriptionFailed(ctx, "tenant-a", "sub_a", "", t0, 0, "r")
	require.NoError(t, err)
	assert.Equal(t, event.FailureRun{}, runChecked(t, st, "tenant-a", "sub_a", run), "a failure older than the latest success counts nothing and disables nothing, even with no grace")
	assert.Empty(t, get().FailingSince, "an older failure starts no run")

	_, err = st.SubscriptionFailed(ctx, "tenant-a", "sub_a", "", t0.Add(20*time.Second), time.Hour, "r")
	require.NoError(t, err)
	assert.False(t, succeeded(15*time.Second), "a success older than the run closes nothing")
	assert.Equal(t, event.FormatTime(t0.Add(20*time.Second)), get().FailingSince, "a success older than the run keeps it")
	assert.False(t, succeeded(15*time.Second), "repeated")
	assert.Equal(t, event.FormatTime(t0.Add(20*time.Second)), get().FailingSince)
	// That older success was remembered: a failure between it and the run
	// changes nothing either.
	_, err = st.SubscriptionFailed(ctx, "tenant-a", "sub_a", "", t0.Add(12*time.Second), time.Hour, "r")
	require.NoError(t, err)
	assert.Equal(t, event.FormatTime(t0.Add(20*time.Second)), get().FailingSince)

	assert.True(t, succeeded(30*time.Second))
	assert.Empty(t, get().FailingSince, "a later success ends the run")
	assert.False(t, succeeded(30*time.Second), "repeated: nothing left to close")
	_, err = st.SubscriptionFailed(ctx, "tenant-a", "sub_a", "", t0.Add(30*time.Second), time.Hour, "r")
	require.NoError(t, err)
	assert.Empty(t, get().FailingSince, "a failure in the second of the latest success is not newer than it")
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
		{"CreateSubscription", "TransactWriteItems", func() error { return st.CreateSubscription(ctx, "tenant-a", newSub("sub_b")) }},
		{"CreateSubscription's first count", "Query", func() error { return st.CreateSubscription(ctx, "tenant-c", newSub("sub_b")) }},
		{"ListSubscriptions", "Query", func() error { _, err := st.ListSubscriptions(ctx, "tenant-a"); return err }},
		{"GetSubscription", "GetItem", func() error { _, err := st.GetSubscription(ctx, "tenant-a", "sub_a"); return err }},
		{"DeleteSubscription", "TransactWriteItems", func() error { return st.DeleteSubscription(ctx, "tenant-a", "sub_a") }},
		{"DeleteGoneSubscription", "TransactWriteItems", func() error {
			return st.DeleteGoneSubscription(ctx, "tenant-a", "sub_a", newSub("sub_a").URL)
		}},
		{"RotateSecret read", "GetItem", func() error {
			_, err := st.RotateSecret(ctx, "tenant-a", "sub_a", "whsec_x", now, now)
			return err
		}},
		{"RotateSecret write", "UpdateItem", func() error {
			_, err := st.RotateSecret(ctx, "tenant-a", "sub_a", "whsec_x", now, now)
			return err
		}},
		{"SubscriptionSucceeded", "UpdateItem", func() error {
			_, err := st.SubscriptionSucceeded(ctx, "tenant-a", "sub_a", "", now)
			return err
		}},
		{"SubscriptionFailed", "UpdateItem", func() error {
			_, err := st.SubscriptionFailed(ctx, "tenant-a", "sub_a", "", now, 0, "r")
			return err
		}},
		{"SubscriptionFailed at a URL", "UpdateItem", func() error {
			_, err := st.SubscriptionFailed(ctx, "tenant-a", "sub_a", newSub("sub_a").URL, now, 0, "r")
			return err
		}},
		{"ClaimAttempt's entry", "PutItem", func() error {
			_, _, err := st.ClaimAttempt(ctx, "tenant-a", e.ID, claim("sub_a", 1, "o", now), e.TTL)
			return err
		}},
		{"UpdateSubscription read", "GetItem", func() error {
			_, err := st.UpdateSubscription(ctx, "tenant-a", "sub_a", event.SubscriptionPatch{Disabled: aws.Bool(true)}, now)
			return err
		}},
		{"UpdateSubscription write", "UpdateItem", func() error {
			_, err := st.UpdateSubscription(ctx, "tenant-a", "sub_a", event.SubscriptionPatch{Disabled: aws.Bool(true)}, now)
			return err
		}},
		{"ListSubscriptionAttempts", "Query", func() error {
			_, err := st.ListSubscriptionAttempts(ctx, event.AttemptsQuery{Tenant: "tenant-a", SubscriptionID: "sub_a", Limit: 10})
			return err
		}},
		{"ClaimAttempt", "UpdateItem", func() error {
			_, _, err := st.ClaimAttempt(ctx, "tenant-a", e.ID, claim("sub_a", 1, "o", now), e.TTL)
			return err
		}},
		{"FinishAttempt", "UpdateItem", func() error {
			return st.FinishAttempt(ctx, "tenant-a", e.ID, event.Attempt{SubscriptionID: "sub_a", Number: 1, Outcome: "delivered"}, "o")
		}},
		{"MarkFollowUp", "UpdateItem", func() error { return st.MarkFollowUp(ctx, "tenant-a", e.ID, "sub_a", 1, event.FollowUpQueued) }},
		{"Settle", "TransactWriteItems", func() error {
			return st.Settle(ctx, "tenant-a", e.ID, event.Received, event.Delivered, nil)
		}},
		{"StartRedelivery", "TransactWriteItems", func() error {
			failed := e
			failed.Status = event.Failed
			return st.StartRedelivery(ctx, "tenant-a", failed, "r1", now)
		}},
		{"RedeliveryRound", "GetItem", func() error { _, _, err := st.RedeliveryRound(ctx, "tenant-a", e.ID, "r1"); return err }},
		{"ListAttempts", "Query", func() error { _, err := st.ListAttempts(ctx, "tenant-a", e.ID); return err }},
		{"ScheduleAttempt", "UpdateItem", func() error {
			_, _, err := st.ScheduleAttempt(ctx, "tenant-a", e.ID, event.Attempt{SubscriptionID: "sub_a", Number: 1, Timestamp: event.FormatTime(now), NextAttemptAt: event.FormatTime(now)}, e.TTL)
			return err
		}},
		{"OpenCircuit", "UpdateItem", func() error {
			_, err := st.OpenCircuit(ctx, "tenant-a", "sub_a", "", now.Add(-time.Minute), now, time.Minute)
			return err
		}},
		{"OpenCircuit at a URL", "UpdateItem", func() error {
			_, err := st.OpenCircuit(ctx, "tenant-a", "sub_a", newSub("sub_a").URL, now.Add(-time.Minute), now, time.Minute)
			return err
		}},
		{"AcquireProbe", "UpdateItem", func() error { _, err := st.AcquireProbe(ctx, "tenant-a", "sub_a", now, now); return err }},
		{"TakeRateToken", "UpdateItem", func() error { _, err := st.TakeRateToken(ctx, "tenant-a", "sub_a", now, 1); return err }},
		{"ParkAttempt", "PutItem", func() error {
			return st.ParkAttempt(ctx, "tenant-a", "sub_a", event.Parked{EventID: e.ID, Number: 1, Token: "p"}, e.TTL)
		}},
		{"ListParked", "Query", func() error { _, err := st.ListParked(ctx, "tenant-a", "sub_a", 10); return err }},
		{"UnparkAttempt", "DeleteItem", func() error {
			_, err := st.UnparkAttempt(ctx, "tenant-a", "sub_a", event.Parked{EventID: e.ID, Number: 1, Token: "p"})
			return err
		}},
		{"ClaimWake", "UpdateItem", func() error { _, err := st.ClaimWake(ctx, "tenant-a", "sub_a", "o", "p", false, now, now); return err }},
		{"ConfirmWake", "UpdateItem", func() error { _, err := st.ConfirmWake(ctx, "tenant-a", "sub_a", "o"); return err }},
		{"TakeWake", "UpdateItem", func() error { _, err := st.TakeWake(ctx, "tenant-a", "sub_a", "o", now); return err }},
	}
	for _, o := range ops {
		throttledOp = o.op
		err := o.call()
		assert.ErrorIs(t, err, event.ErrUnavailable, "%s", o.name)
	}
	throttledOp = ""
	// An attempt's entry in its subscription's list is written before the
	// attempt: when the attempt's own write fails, the entry names
	// nothing and lists nothing (TestAttemptRefWithoutAttempt).
	var written []map[string]types.AttributeValue
	for _, it := range scan(t, table) {
		if attrS(it, contract.AttrRecordType) != contract.RecordTypeAttemptRef {
			written = append(written, it)
		}
	}
	assert.Len(t, written, before, "a throttled operation wrote something")
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
	got, err := st.RotateSecret(ctx, "tenant-a", "sub_a", "whsec_1", time.Unix(1_999_900_000, 0), time.Unix(2_000_000_000, 0))
	require.NoError(t, err)
	assert.Equal(t, []string{"whsec_1"}, got.Secrets)
}

// The circuit breaker's state is shared through the subscription item:
// an opening only ever extends the open time; one probe at a time holds
// a half-open circuit; a later success closes it and clears the count.
func TestCircuitBreakerState(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table)
	require.NoError(t, st.CreateSubscription(ctx, "tenant-a", newSub("sub_a")))
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	get := func() event.Subscription {
		sub, err := st.GetSubscription(ctx, "tenant-a", "sub_a")
		require.NoError(t, err)
		return sub
	}
	for i := 1; i <= 3; i++ {
		run, err := st.SubscriptionFailed(ctx, "tenant-a", "sub_a", "", t0.Add(time.Duration(i)*time.Millisecond), time.Hour, "r")
		require.NoError(t, err)
		assert.Equal(t, i, run.Consecutive)
	}
	assert.Equal(t, 3, get().ConsecutiveFailures)

	opened, err := st.OpenCircuit(ctx, "tenant-a", "sub_a", "", t0, t0.Add(time.Minute), time.Minute)
	require.NoError(t, err)
	assert.True(t, opened)
	opened, err = st.OpenCircuit(ctx, "tenant-a", "sub_a", "", t0, t0.Add(30*time.Second), 30*time.Second)
	require.NoError(t, err)
	assert.False(t, opened, "a shorter opening does not shorten it")
	assert.Equal(t, t0.Add(time.Minute), get().CircuitOpenUntil)
	assert.Equal(t, time.Minute, get().CircuitCooldown, "nor its cooldown")
	assert.False(t, get().HalfOpen(t0.Add(time.Minute-time.Millisecond)))
	assert.True(t, get().HalfOpen(t0.Add(time.Minute)))

	probe := func(now time.Time) bool {
		ok, err := st.AcquireProbe(ctx, "tenant-a", "sub_a", now, now.Add(10*time.Second))
		require.NoError(t, err)
		return ok
	}
	assert.False(t, probe(t0.Add(59*time.Second)), "open: no probe")
	assert.True(t, probe(t0.Add(time.Minute)), "half-open: a probe")
	assert.False(t, probe(t0.Add(time.Minute+time.Second)), "one probe at a time")
	// The probe held until +1m10s: taken over once that plus the skew
	// margin has passed (TestProbeTakenOverOnlyPastTheSkewMargin).
	lapsed := t0.Add(time.Minute + 10*time.Second + event.HoldSkewMargin)
	assert.True(t, probe(lapsed), "a lapsed probe is taken over")
	assert.Equal(t, lapsed.Add(10*time.Second), get().ProbeUntil)

	// A failed probe opens it again, and frees the probe.
	opened, err = st.OpenCircuit(ctx, "tenant-a", "sub_a", "", lapsed, t0.Add(3*time.Minute), 3*time.Minute)
	require.NoError(t, err)
	assert.True(t, opened)
	assert.True(t, get().ProbeUntil.IsZero())
	assert.Equal(t, 3*time.Minute, get().CircuitCooldown, "the latest opening's cooldown")

	closed, err := st.SubscriptionSucceeded(ctx, "tenant-a", "sub_a", "", t0.Add(4*time.Minute))
	require.NoError(t, err)
	assert.True(t, closed)
	sub := get()
	assert.Equal(t, 0, sub.ConsecutiveFailures)
	assert.True(t, sub.CircuitOpenUntil.IsZero())
	assert.Zero(t, sub.CircuitCooldown)
	assert.False(t, sub.HalfOpen(t0.Add(time.Hour)), "closed")

	// An opening decided before the latest success, or at its instant
	// (a failed probe's follow-up applied again after a stop, once a
	// later probe got through), is refused: a request started since the
	// failed one got through. Decided after it, it opens.
	for _, at := range []time.Time{t0.Add(3 * time.Minute), t0.Add(4 * time.Minute)} {
		opened, err = st.OpenCircuit(ctx, "tenant-a", "sub_a", "", at, t0.Add(time.Hour), time.Minute)
		require.NoError(t, err)
		assert.False(t, opened, "decided at %v, before the success at %v", at, t0.Add(4*time.Minute))
	}
	assert.True(t, get().CircuitOpenUntil.IsZero(), "still closed")
	opened, err = st.OpenCircuit(ctx, "tenant-a", "sub_a", "", t0.Add(4*time.Minute+time.Microsecond), t0.Add(time.Hour), time.Minute)
	require.NoError(t, err)
	assert.True(t, opened, "decided after the success")
	assert.Equal(t, t0.Add(time.Hour), get().CircuitOpenUntil)

	opened, err = st.OpenCircuit(ctx, "tenant-a", "sub_none", "", t0.Add(-time.Minute), t0, time.Minute)
	require.NoError(t, err)
	assert.False(t, opened, "a subscription that is gone")
	ok, err := st.AcquireProbe(ctx, "tenant-a", "sub_none", t0, t0)
	require.NoError(t, err)
	assert.False(t, ok)
}

// A success reports that it closed something only when there was a run
// of failures or a circuit to close: the dispatcher wakes the attempts
// parked behind a circuit on that report, and a healthy subscription's
// deliveries (the common case) need no such write.
func TestSuccessClosesOnlyWhatWasOpen(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table)
	require.NoError(t, st.CreateSubscription(ctx, "tenant-a", newSub("sub_a")))
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	succeeded := func(at time.Time) bool {
		t.Helper()
		closed, err := st.SubscriptionSucceeded(ctx, "tenant-a", "sub_a", "", at)
		require.NoError(t, err)
		return closed
	}
	assert.False(t, succeeded(t0), "healthy: nothing to close")
	assert.False(t, succeeded(t0.Add(time.Second)), "still healthy")

	// A failure's run, no circuit.
	_, err := st.SubscriptionFailed(ctx, "tenant-a", "sub_a", "", t0.Add(2*time.Second), time.Hour, "r")
	require.NoError(t, err)
	assert.True(t, succeeded(t0.Add(3*time.Second)), "it ended the run")
	assert.False(t, succeeded(t0.Add(4*time.Second)), "nothing left")

	// A circuit opened without a failure (a slow request's watch),
	// decided after the latest success.
	decided := t0.Add(4500 * time.Millisecond)
	opened, err := st.OpenCircuit(ctx, "tenant-a", "sub_a", "", decided, decided.Add(time.Minute), time.Minute)
	require.NoError(t, err)
	require.True(t, opened)
	assert.True(t, succeeded(t0.Add(5*time.Second)), "it closed the circuit")
	sub, err := st.GetSubscription(ctx, "tenant-a", "sub_a")
	require.NoError(t, err)
	assert.True(t, sub.CircuitOpenUntil.IsZero())
	assert.False(t, succeeded(t0.Add(6*time.Second)), "nothing left")
}

// A half-open circuit's probe is taken over only once its hold's end
// plus event.HoldSkewMargin has passed by the taker's clock: the holder
// bounds its request by the end on its own clock, which may run behind
// the taker's. Before, a probe whose hold had ended by the taker's clock
// was taken over at once: with the clocks 1 s apart, a second probe went
// out while the first was still in flight.
func TestProbeTakenOverOnlyPastTheSkewMargin(t *testing.T) {
	ctx := context.Background()
	st := store.New(db.Client, db.CreateTable(t, schema.Events()))
	require.NoError(t, st.CreateSubscription(ctx, "tenant-a", newSub("sub_a")))
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	_, err := st.OpenCircuit(ctx, "tenant-a", "sub_a", "", t0.Add(-time.Minute), t0, time.Minute)
	require.NoError(t, err)
	end := t0.Add(13 * time.Second)
	ok, err := st.AcquireProbe(ctx, "tenant-a", "sub_a", t0, end)
	require.NoError(t, err)
	require.True(t, ok)
	for _, past := range []time.Duration{0, time.Second, event.HoldSkewMargin - time.Millisecond} {
		at := end.Add(past)
		ok, err := st.AcquireProbe(ctx, "tenant-a", "sub_a", at, at.Add(13*time.Second))
		require.NoError(t, err)
		assert.False(t, ok, "AcquireProbe %v after the probe's hold ended = true, want false: taken over within the skew margin %v", past, event.HoldSkewMargin)
	}
	at := end.Add(event.HoldSkewMargin)
	ok, err = st.AcquireProbe(ctx, "tenant-a", "sub_a", at, at.Add(13*time.Second))
	require.NoError(t, err)
	assert.True(t, ok, "AcquireProbe the skew margin %v after the probe's hold ended = false, want it taken over", event.HoldSkewMargin)
	sub, err := st.GetSubscription(ctx, "tenant-a", "sub_a")
	require.NoError(t, err)
	assert.Equal(t, at.Add(13*time.Second), sub.ProbeUntil)
}

// The rate cap counts requests per second across every caller: exactly
// limit of the callers of one second get a token (0), the others each a
// place of their own past the limit (1, 2, ...: their turns come in the
// next seconds), the next second starts afresh; an older second and a
// subscription that is gone wait a second (1).
func TestTakeRateToken(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table)
	require.NoError(t, st.CreateSubscription(ctx, "tenant-a", newSub("sub_a")))
	sec := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	take := func(now time.Time) int {
		ahead, err := st.TakeRateToken(ctx, "tenant-a", "sub_a", now, 3)
		require.NoError(t, err)
		return ahead
	}
	const n = 10
	got := make([]int, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		// The calls on the goroutines; the checks (require) on the test's.
		wg.Go(func() {
			got[i], errs[i] = st.TakeRateToken(ctx, "tenant-a", "sub_a", sec.Add(time.Duration(i)*time.Millisecond), 3)
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	slices.Sort(got)
	assert.Equal(t, []int{0, 0, 0, 1, 2, 3, 4, 5, 6, 7}, got, "3 of 10 concurrent callers in one second, the others one place each")
	assert.Equal(t, 8, take(sec.Add(999*time.Millisecond)))
	assert.Equal(t, 0, take(sec.Add(time.Second)), "the next second")
	assert.Equal(t, 0, take(sec.Add(1500*time.Millisecond)))
	assert.Equal(t, 1, take(sec.Add(-time.Second)), "an older second")
	ahead, err := st.TakeRateToken(ctx, "tenant-a", "sub_none", sec, 3)
	require.NoError(t, err)
	assert.Equal(t, 1, ahead, "a subscription that is gone")
}
