package store_test

import (
	"context"
	"strconv"
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

// SubscriptionEvents reads a time range of one subscription's list,
// oldest first, each event once (however many attempts it has, and when
// its entries straddle two reads), and nothing of another subscription or
// tenant.
func TestSubscriptionEvents(t *testing.T) {
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
		for n := 1; n <= 3; n++ {
			record(t, st, "tenant-a", id, event.Attempt{SubscriptionID: "sub_a", Number: n, Timestamp: event.FormatTime(base), Outcome: "failed"}, ttl)
		}
	}
	record(t, st, "tenant-a", ids[2], event.Attempt{SubscriptionID: "sub_b", Number: 1, Timestamp: event.FormatTime(base), Outcome: "failed"}, ttl)
	record(t, st, "tenant-b", ids[2], event.Attempt{SubscriptionID: "sub_a", Number: 1, Timestamp: event.FormatTime(base), Outcome: "failed"}, ttl)

	all := func(tenant, sub string, since, until time.Time, limit int) (got []string, reads int) {
		from, to := event.IDFloor(since), event.IDFloor(until)
		for {
			page, next, err := st.SubscriptionEvents(ctx, tenant, sub, from, to, limit)
			require.NoError(t, err)
			reads++
			got = append(got, page...)
			if next == "" {
				return got, reads
			}
			require.Greater(t, next, from, "next moves forward")
			from = next
			require.Less(t, reads, 20, "SubscriptionEvents does not end")
		}
	}
	got, reads := all("tenant-a", "sub_a", base, base.Add(time.Hour), 100)
	assert.Equal(t, ids, got)
	assert.Equal(t, 1, reads)
	got, _ = all("tenant-a", "sub_a", base, base.Add(time.Hour), 2)
	assert.Equal(t, ids, got, "reads of 2 entries: an event's 3 entries straddle reads")
	got, _ = all("tenant-a", "sub_a", base.Add(time.Minute), base.Add(3*time.Minute), 100)
	assert.Equal(t, ids[1:3], got, "since inclusive, until exclusive")
	got, _ = all("tenant-a", "sub_a", base.Add(time.Minute+time.Microsecond), base.Add(3*time.Minute+time.Microsecond), 100)
	assert.Equal(t, ids[2:4], got)
	got, _ = all("tenant-a", "sub_b", base, base.Add(time.Hour), 100)
	assert.Equal(t, ids[2:3], got)
	got, _ = all("tenant-b", "sub_b", base, base.Add(time.Hour), 100)
	assert.Empty(t, got, "another tenant's subscription of the same id")
	got, _ = all("tenant-a", "sub_a", base.Add(time.Hour), base, 100)
	assert.Empty(t, got, "an empty range")

	later := store.New(db.Client, table, store.WithClock(func() time.Time { return time.Unix(ttl+1, 0) }))
	page, next, err := later.SubscriptionEvents(ctx, "tenant-a", "sub_a", event.IDFloor(base), event.IDFloor(base.Add(time.Hour)), 100)
	require.NoError(t, err)
	assert.Empty(t, page, "expired")
	assert.Empty(t, next)
}

// Entries of attempts from 1000 sort after 999 (':' and nine digits); an
// entry written before that form ("<event_id>#1000") still names its
// attempt, and an attempt with an entry of each form is listed once.
func TestAttemptRefsPast999(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table)
	ttl := time.Now().Add(time.Hour).Unix()
	at := time.Now().UTC()
	id, _, err := event.NewID(at, nil)
	require.NoError(t, err)
	for _, n := range []int{999, 1000, 1001} {
		record(t, st, "tenant-a", id, event.Attempt{SubscriptionID: "sub_a", Number: n, Timestamp: event.FormatTime(at), Outcome: "gone"}, ttl)
	}
	// The entries of 1000 and 1001 as written before: "%03d".
	for _, num := range []string{"1000", "1001"} {
		_, err := db.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
			schema.AttrUserID:           &types.AttributeValueMemberS{Value: contract.AttemptRefPrefix + "tenant-a#sub_a"},
			schema.AttrTimestampEventID: &types.AttributeValueMemberS{Value: id + "#" + num},
			contract.AttrRecordType:     &types.AttributeValueMemberS{Value: contract.RecordTypeAttemptRef},
			schema.AttrTTL:              &types.AttributeValueMemberN{Value: strconv.FormatInt(ttl, 10)},
		}})
		require.NoError(t, err)
	}
	page, err := st.ListSubscriptionAttempts(ctx, event.AttemptsQuery{Tenant: "tenant-a", SubscriptionID: "sub_a", Limit: 10})
	require.NoError(t, err)
	var numbers []int
	for _, a := range page.Attempts {
		numbers = append(numbers, a.Number)
	}
	assert.Equal(t, []int{1001, 1000, 999}, numbers, "latest first, each once")
	assert.Empty(t, page.Next)
}
