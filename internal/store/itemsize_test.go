package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/dev/loadmodel"
	"github.com/triggers-dev/triggers/internal/event"
	itemconv "github.com/triggers-dev/triggers/internal/item"
	"github.com/triggers-dev/triggers/internal/store"
	"github.com/triggers-dev/triggers/schema"
)

// A subscription item stays within one write unit (1 KB) through its
// health writes: every delivery writes it (SubscriptionSucceeded), so a
// second unit would double the delivery path's busiest write. The
// subscription is an ordinary one: a 64-character URL, three event types,
// one sealed secret (a KMS ciphertext of a secret is about 200 bytes:
// "kms1:" and 268 base64 characters). Each state of a failing run is
// measured: failures counted, the circuit opened, a probe held, the rate
// cap counting, a success closing the run, after a change through the
// API. The tokens the writes carry (callToken) are part of it.
func TestSubscriptionItemFitsOneWriteUnit(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table)
	const tenant = "tenant-acme-production"
	sub := event.Subscription{
		ID: "sub_01JDXYZABCDEFGHJKMNPQRSTVW", URL: "https://hooks.example-customer.com/triggers/webhooks/incoming-01",
		EventTypes: []string{"order.paid", "order.refunded", "user.created"}, Description: "orders to fulfilment",
		CreatedAt: "2026-11-23T10:00:00.000000Z", Secrets: []string{"kms1:" + strings.Repeat("A", 268)},
	}
	require.Len(t, sub.URL, 64)
	require.NoError(t, st.CreateSubscription(ctx, tenant, sub))
	most := 0
	measure := func(state string) {
		t.Helper()
		found := false
		for _, it := range scan(t, table) {
			if itemconv.GetS(it, schema.AttrTimestampEventID) != sub.ID {
				continue
			}
			found = true
			size := loadmodel.ItemSize(it)
			t.Logf("%s: %d bytes", state, size)
			most = max(most, size)
		}
		require.True(t, found, "%s: no subscription item", state)
	}
	measure("created")
	now := time.Unix(1_900_000_000, 0)
	// Changed through the API twice: its token (patch_by) and the one
	// before it (patch_prev) stay.
	var err error
	for range 2 {
		_, err = st.UpdateSubscription(ctx, tenant, sub.ID, event.SubscriptionPatch{Description: &sub.Description}, now)
		require.NoError(t, err)
	}
	measure("patched")
	for i := range 3 {
		_, err := st.SubscriptionFailed(ctx, tenant, sub.ID, "", now.Add(time.Duration(i)*time.Second), time.Hour, "HTTP 503 Service Unavailable")
		require.NoError(t, err)
	}
	measure("failing")
	_, err = st.TakeRateToken(ctx, tenant, sub.ID, now, 10)
	require.NoError(t, err)
	_, err = st.OpenCircuit(ctx, tenant, sub.ID, sub.URL, now, now.Add(time.Minute), time.Minute)
	require.NoError(t, err)
	// A longer opening replaces it: the token of the one it replaced
	// (open_prev) stays, and the success below keeps it (closed_prev).
	_, err = st.OpenCircuit(ctx, tenant, sub.ID, sub.URL, now, now.Add(2*time.Minute), 2*time.Minute)
	require.NoError(t, err)
	measure("circuit open")
	ok, err := st.AcquireProbe(ctx, tenant, sub.ID, now.Add(2*time.Minute), now.Add(3*time.Minute))
	require.NoError(t, err)
	require.True(t, ok)
	measure("probe held")
	closed, err := st.SubscriptionSucceeded(ctx, tenant, sub.ID, "", now.Add(150*time.Second))
	require.NoError(t, err)
	require.True(t, closed)
	measure("closed")
	assert.LessOrEqual(t, most, loadmodel.WriteUnitBytes, "the subscription item's largest state")
}
