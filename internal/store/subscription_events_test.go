package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
