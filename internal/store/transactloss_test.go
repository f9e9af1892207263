package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/store"
	"github.com/triggers-dev/triggers/schema"
)

// counter returns tenant's subscription counter as stored ("" without
// one).
func counter(t *testing.T, table, tenant string) string {
	t.Helper()
	for _, it := range scan(t, table) {
		if attrS(it, schema.AttrUserID) == contract.SubscriptionPrefix+tenant && attrS(it, schema.AttrTimestampEventID) == contract.SubscriptionCountKey {
			return attrN(it, "count")
		}
	}
	return ""
}

// The subscription transactions with their answers lost (the write took
// effect, the connection dropped, the SDK sent it again): a create and a
// delete answer success and move the counter once, and so does the
// first count of a tenant from before the counter. Each relies on the
// SDK sending its retry with the first try's ClientRequestToken, which
// DynamoDB (and DynamoDB Local, this test shows) answers as the same
// request: sent as a new one, the create's retry would fail its own
// condition (the subscription exists: an error for a write that was
// made) and the delete's would find it gone (a 404). The count's retry
// would find its own counter, which it takes for another writer's, as it
// may. (Left unverified by the last review.)
func TestSubscriptionTransactionsSurviveLostAnswers(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	proxy, client := db.Faulty(t)
	st := store.New(client, table)
	require.NoError(t, st.CreateSubscription(ctx, "tenant-a", newSub("sub_0")))

	before := proxy.Calls("TransactWriteItems")
	proxy.LoseResponse("TransactWriteItems", 1)
	require.NoError(t, st.CreateSubscription(ctx, "tenant-a", newSub("sub_a")), "the create is the caller's")
	assert.Equal(t, 2, proxy.Calls("TransactWriteItems")-before, "the SDK sent the create again")
	assert.Equal(t, "2", counter(t, table, "tenant-a"), "counted once")
	_, err := st.GetSubscription(ctx, "tenant-a", "sub_a")
	require.NoError(t, err)

	before = proxy.Calls("TransactWriteItems")
	proxy.LoseResponse("TransactWriteItems", 1)
	require.NoError(t, st.DeleteSubscription(ctx, "tenant-a", "sub_a"), "the delete is the caller's")
	assert.Equal(t, 2, proxy.Calls("TransactWriteItems")-before, "the SDK sent the delete again")
	assert.Equal(t, "1", counter(t, table, "tenant-a"), "given back once")

	// A tenant from before the counter: the create finds none (1), the
	// count is written with its answer lost (2, and the SDK's 3), then
	// the create goes through (4).
	putLegacySubscriptions(t, table, "tenant-b", 3)
	before = proxy.Calls("TransactWriteItems")
	proxy.LoseResponseAfter("TransactWriteItems", 1)
	require.NoError(t, st.CreateSubscription(ctx, "tenant-b", newSub("sub_b")))
	assert.Equal(t, 4, proxy.Calls("TransactWriteItems")-before)
	assert.Equal(t, "4", counter(t, table, "tenant-b"), "three counted, one created")
}

// ScheduleAttempt with its answer lost counts one deferral, and reports
// the attempt scheduled: the write is the caller's. (Counted twice, the
// slow lane's backoff of the attempt grew a step; found by review.)
func TestScheduleAttemptSurvivesALostAnswer(t *testing.T) {
	ctx := context.Background()
	proxy, client := db.Faulty(t)
	st := store.New(client, db.CreateTable(t, schema.Events()))
	now := time.Now().UTC()
	for i := 1; i <= 2; i++ {
		before := proxy.Calls("UpdateItem")
		proxy.LoseResponse("UpdateItem", 1)
		a, ok, err := st.ScheduleAttempt(ctx, "tenant-a", "ev1", event.Attempt{
			SubscriptionID: "sub_x", Number: 1, Timestamp: event.FormatTime(now), NextAttemptAt: event.FormatTime(now.Add(time.Second)),
		}, now.Add(time.Hour).Unix())
		require.NoError(t, err)
		assert.Equal(t, 2, proxy.Calls("UpdateItem")-before, "the SDK sent the write again")
		assert.True(t, ok, "scheduled by this call")
		assert.Equal(t, i, a.Deferrals, "ScheduleAttempt #%d: Deferrals", i)
		assert.Equal(t, event.OutcomeScheduled, a.Outcome)
	}
}
