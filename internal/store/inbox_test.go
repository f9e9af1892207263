package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/shard"
	"github.com/triggers-dev/triggers/internal/store"
	"github.com/triggers-dev/triggers/schema"
)

// seedInbox stores n events for tenant, one millisecond apart, of types
// alternating "a" and "b"; every third one (0, 3, 6, ...) is delivered.
// It returns them oldest first, as stored.
func seedInbox(t *testing.T, st *store.Store, tenant string, n int) []event.Event {
	t.Helper()
	ctx := context.Background()
	base := time.Now().Add(-time.Hour)
	var evs []event.Event
	for i := 0; i < n; i++ {
		typ := "a"
		if i%2 == 1 {
			typ = "b"
		}
		e, err := event.New(event.CreateRequest{EventType: typ, Payload: event.Payload{}}, base.Add(time.Duration(i)*time.Millisecond), event.DefaultRetention, event.Metadata{})
		require.NoError(t, err)
		evs = append(evs, e)
	}
	for i := 0; i < n; i += 25 {
		for j, err := range st.PutBatch(ctx, tenant, evs[i:min(i+25, n)]) {
			require.NoError(t, err, "event %d", i+j)
		}
	}
	for i := 0; i < n; i += 3 {
		got, err := st.Transition(ctx, tenant, evs[i].ID, []event.Status{event.Received}, event.Delivered)
		require.NoError(t, err)
		evs[i] = got
	}
	return evs
}

// pages reads the whole inbox for q, page by page, and returns the ids in
// order and the number of pages.
func pages(t *testing.T, st *store.Store, q event.InboxQuery) ([]string, int) {
	t.Helper()
	var ids []string
	n := 0
	for {
		page, err := st.List(context.Background(), q)
		require.NoError(t, err)
		n++
		require.LessOrEqual(t, len(page.Events), q.Limit, "page %d", n)
		for _, e := range page.Events {
			ids = append(ids, e.ID)
		}
		if page.Next == nil {
			return ids, n
		}
		q.After = page.Next
		require.Less(t, n, 100)
	}
}

func idsOf(evs []event.Event, keep func(int, event.Event) bool, ascending bool) []string {
	var ids []string
	for i, e := range evs {
		if keep(i, e) {
			ids = append(ids, e.ID)
		}
	}
	if !ascending {
		for i, j := 0, len(ids)-1; i < j; i, j = i+1, j-1 {
			ids[i], ids[j] = ids[j], ids[i]
		}
	}
	return ids
}

// forProfiles runs f once per events table profile (schema.EventsFor),
// each on its own table.
func forProfiles(t *testing.T, f func(t *testing.T, p schema.EventsProfile)) {
	for _, p := range []schema.EventsProfile{schema.ProfileSeed, schema.ProfileLean} {
		t.Run(string(p), func(t *testing.T) { f(t, p) })
	}
}

// Each filter reads its own key (table, status index, type index with a
// status filter), pages continue exactly where they ended (the cursor
// carries the index key), in both orders, and another tenant's events
// never appear.
func TestListFiltersAndPages(t *testing.T) {
	forProfiles(t, func(t *testing.T, p schema.EventsProfile) {
		table := db.CreateTable(t, schema.EventsFor(p))
		st := store.New(db.Client, table, store.WithProfile(p))
		evs := seedInbox(t, st, "tenant-a", 20)
		seedInbox(t, st, "tenant-b", 4)
		delivered := func(i int, _ event.Event) bool { return i%3 == 0 }
		cases := []struct {
			name string
			q    event.InboxQuery
			keep func(int, event.Event) bool
		}{
			{"all", event.InboxQuery{}, func(int, event.Event) bool { return true }},
			{"status", event.InboxQuery{Status: event.Delivered}, delivered},
			{"received", event.InboxQuery{Status: event.Received}, func(i int, _ event.Event) bool { return i%3 != 0 }},
			{"type", event.InboxQuery{EventType: "b"}, func(i int, _ event.Event) bool { return i%2 == 1 }},
			{"type and status", event.InboxQuery{EventType: "a", Status: event.Delivered}, func(i int, _ event.Event) bool { return i%2 == 0 && i%3 == 0 }},
			{"type and received", event.InboxQuery{EventType: "b", Status: event.Received}, func(i int, _ event.Event) bool { return i%2 == 1 && i%3 != 0 }},
			{"failed (none)", event.InboxQuery{Status: event.Failed}, func(int, event.Event) bool { return false }},
		}
		for _, c := range cases {
			for _, asc := range []bool{false, true} {
				for _, limit := range []int{1, 3, 100} {
					q := c.q
					q.Tenant, q.Ascending, q.Limit = "tenant-a", asc, limit
					got, _ := pages(t, st, q)
					assert.Equal(t, idsOf(evs, c.keep, asc), got, "%s ascending=%v limit=%d", c.name, asc, limit)
				}
			}
		}
		// The events come back whole.
		page, err := st.List(context.Background(), event.InboxQuery{Tenant: "tenant-a", Limit: 1, Ascending: true})
		require.NoError(t, err)
		require.Len(t, page.Events, 1)
		assert.Equal(t, evs[0], page.Events[0])
		require.NotNil(t, page.Next)
		assert.Equal(t, evs[0].SortKey(), page.Next.SortKey)
		assert.Empty(t, page.Next.IndexKey, "a table query has no index key")
		page, err = st.List(context.Background(), event.InboxQuery{Tenant: "tenant-a", Limit: 1, Ascending: true, Status: event.Delivered})
		require.NoError(t, err)
		require.NotNil(t, page.Next)
		if p == schema.ProfileLean {
			// The lean StatusIndex has no delivered events: the table.
			assert.Equal(t, event.Position{SortKey: evs[0].SortKey()}, *page.Next)
		} else {
			assert.Equal(t, event.Position{SortKey: evs[0].SortKey(), IndexKey: "delivered#" + evs[0].Timestamp}, *page.Next)
		}
		page, err = st.List(context.Background(), event.InboxQuery{Tenant: "tenant-a", Limit: 1, Ascending: true, Status: event.Received})
		require.NoError(t, err)
		require.NotNil(t, page.Next)
		require.Len(t, page.Events, 1)
		assert.Equal(t, evs[1], page.Events[0], "read whole from the table in the lean profile")
		assert.Equal(t, event.Position{SortKey: evs[1].SortKey(), IndexKey: "received#" + evs[1].Timestamp}, *page.Next)
		page, err = st.List(context.Background(), event.InboxQuery{Tenant: "tenant-a", Limit: 1, Ascending: true, EventType: "a"})
		require.NoError(t, err)
		require.NotNil(t, page.Next)
		if p == schema.ProfileLean {
			// No EventTypeIndex: the table with a filter.
			assert.Equal(t, event.Position{SortKey: evs[0].SortKey()}, *page.Next)
		} else {
			assert.Equal(t, event.Position{SortKey: evs[0].SortKey(), IndexKey: "a#" + evs[0].Timestamp}, *page.Next)
		}
	})
}

// A filtered page is topped up with more Query calls until it is full,
// so a full page means "maybe more" and a short one "the end".
func TestListTopsUpFilteredPages(t *testing.T) {
	forProfiles(t, func(t *testing.T, p schema.EventsProfile) {
		table := db.CreateTable(t, schema.EventsFor(p))
		st := store.New(db.Client, table, store.WithProfile(p))
		evs := seedInbox(t, st, "tenant-a", 12)
		// Seed: type a and delivered, events 0 and 6 only, far apart in
		// EventTypeIndex. Lean: type b and received, events 1, 5, 7 and 11,
		// apart in StatusIndex (with 2, 4, 8 and 10 between them), so the
		// top-ups read the index and the table.
		q := event.InboxQuery{Tenant: "tenant-a", EventType: "a", Status: event.Delivered, Limit: 2, Ascending: true}
		want := [][]string{{evs[0].ID, evs[6].ID}}
		if p == schema.ProfileLean {
			q.EventType, q.Status = "b", event.Received
			want = [][]string{{evs[1].ID, evs[5].ID}, {evs[7].ID, evs[11].ID}}
		}
		for i, w := range want {
			page, err := st.List(context.Background(), q)
			require.NoError(t, err)
			assert.Equal(t, w, idsOf(page.Events, func(int, event.Event) bool { return true }, true), "page %d", i)
			require.NotNil(t, page.Next, "a full page")
			q.After = page.Next
		}
		page, err := st.List(context.Background(), q)
		require.NoError(t, err)
		assert.Empty(t, page.Events)
		assert.Nil(t, page.Next)
	})
}

// A limit outside 1-100 is the default page of 50; 1 and 100 are kept.
func TestListLimits(t *testing.T) {
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table)
	seedInbox(t, st, "tenant-a", 101)
	for limit, want := range map[int]int{0: 50, -1: 50, 1: 1, 2: 2, 99: 99, 100: 100, 101: 50} {
		page, err := st.List(context.Background(), event.InboxQuery{Tenant: "tenant-a", Limit: limit})
		require.NoError(t, err)
		assert.Len(t, page.Events, want, "limit %d", limit)
		assert.NotNil(t, page.Next, "limit %d", limit)
	}
}

// Expired events are hidden from every filter (the clock is past their
// ttl; the items themselves are never written expired).
func TestListHidesExpired(t *testing.T) {
	forProfiles(t, func(t *testing.T, p schema.EventsProfile) {
		table := db.CreateTable(t, schema.EventsFor(p))
		st := store.New(db.Client, table, store.WithProfile(p))
		evs := seedInbox(t, st, "tenant-a", 3)
		at := func(sec int64) *store.Store {
			return store.New(db.Client, table, store.WithProfile(p), store.WithClock(func() time.Time { return time.Unix(sec, 0) }))
		}
		for _, q := range []event.InboxQuery{{}, {Status: event.Received}, {EventType: "a"}, {EventType: "a", Status: event.Delivered}, {EventType: "b", Status: event.Received}} {
			q.Tenant, q.Limit = "tenant-a", 10
			page, err := at(evs[2].TTL+1).List(context.Background(), q)
			require.NoError(t, err)
			assert.Empty(t, page.Events, "%+v", q)
			page, err = at(evs[0].TTL).List(context.Background(), q)
			require.NoError(t, err)
			assert.NotEmpty(t, page.Events, "%+v: alive at its ttl second", q)
		}
	})
}

// Top-up rounds ask only for what the page still lacks, so a page never
// holds more than its limit even when later items all match.
func TestListTopUpAsksForWhatIsMissing(t *testing.T) {
	forProfiles(t, func(t *testing.T, p schema.EventsProfile) {
		ctx := context.Background()
		table := db.CreateTable(t, schema.EventsFor(p))
		st := store.New(db.Client, table, store.WithProfile(p))
		base := time.Now().Add(-time.Hour)
		var evs []event.Event
		for i := 0; i < 10; i++ {
			e, err := event.New(event.CreateRequest{EventType: "t", Payload: event.Payload{}}, base.Add(time.Duration(i)*time.Millisecond), event.DefaultRetention, event.Metadata{})
			require.NoError(t, err)
			evs = append(evs, e)
		}
		for i, err := range st.PutBatch(ctx, "tenant-a", evs) {
			require.NoError(t, err, "event %d", i)
		}
		// The two oldest stay received, the rest are delivered.
		for _, e := range evs[2:] {
			_, err := st.Transition(ctx, "tenant-a", e.ID, []event.Status{event.Received}, event.Delivered)
			require.NoError(t, err)
		}
		q := event.InboxQuery{Tenant: "tenant-a", EventType: "t", Status: event.Delivered, Limit: 3, Ascending: true}
		page, err := st.List(ctx, q)
		require.NoError(t, err)
		assert.Equal(t, []string{evs[2].ID, evs[3].ID, evs[4].ID}, idsOf(page.Events, func(int, event.Event) bool { return true }, true))
		require.NotNil(t, page.Next)
		assert.Equal(t, evs[4].SortKey(), page.Next.SortKey, "the page ends on its last event")
		got, _ := pages(t, st, q)
		assert.Equal(t, idsOf(evs[2:], func(int, event.Event) bool { return true }, true), got)
	})
}

// A page ends before the event that would take the answer past the byte
// bound (Lambda's response limit, event.MaxPageWireBytes; a small bound
// here): the next page starts with that event, whatever the filter, order
// and profile, in one partition and merged over shards, and a page always
// holds at least one event.
func TestPagesStayWithinTheResponseLimit(t *testing.T) {
	forProfiles(t, func(t *testing.T, p schema.EventsProfile) {
		table := db.CreateTable(t, schema.EventsFor(p))
		evs := seedInbox(t, store.New(db.Client, table, store.WithProfile(p)), "tenant-a", 20)
		size := evs[1].WireSize()
		for _, bound := range []int{1, 3*size + size/2} {
			st := store.New(db.Client, table, store.WithProfile(p), store.WithPageBytes(bound))
			for _, c := range []struct {
				name string
				q    event.InboxQuery
				keep func(int, event.Event) bool
			}{
				{"all", event.InboxQuery{}, func(int, event.Event) bool { return true }},
				{"received", event.InboxQuery{Status: event.Received}, func(i int, _ event.Event) bool { return i%3 != 0 }},
				{"type b", event.InboxQuery{EventType: "b"}, func(i int, _ event.Event) bool { return i%2 == 1 }},
			} {
				for _, asc := range []bool{false, true} {
					q := c.q
					q.Tenant, q.Ascending, q.Limit = "tenant-a", asc, 100
					var ids []string
					for n := 0; ; n++ {
						require.Less(t, n, 50)
						page, err := st.List(context.Background(), q)
						require.NoError(t, err)
						total := 0
						for _, e := range page.Events {
							total += e.WireSize()
							ids = append(ids, e.ID)
						}
						if page.Next == nil {
							break
						}
						require.NotEmpty(t, page.Events, "%s: a page holds an event", c.name)
						if bound == 1 {
							assert.Len(t, page.Events, 1, "%s: one event past the bound", c.name)
						} else {
							assert.LessOrEqual(t, total, bound, "%s", c.name)
							assert.Len(t, page.Events, 3, "%s: as many as fit", c.name)
						}
						q.After = page.Next
					}
					assert.Equal(t, idsOf(evs, c.keep, asc), ids, "%s ascending=%v bound=%d", c.name, asc, bound)
				}
			}
		}

		// Sharded: the merge stops at the bound too, and resumes every
		// shard where it was.
		sharded := db.CreateTable(t, schema.EventsFor(p))
		ctx := shardedCtx(shard.Config{Write: 4, Read: 4})
		st := store.New(db.Client, sharded, store.WithSharding(true), store.WithProfile(p), store.WithPageBytes(3*size+size/2))
		written := writeSharded(t, st, ctx, "acme", time.Now().Add(-time.Hour), 30)
		for _, asc := range []bool{false, true} {
			q := event.InboxQuery{Tenant: "acme", Ascending: asc, Limit: 100}
			var ids []string
			for n := 0; ; n++ {
				require.Less(t, n, 50)
				page, err := st.List(ctx, q)
				require.NoError(t, err)
				if page.Next != nil {
					assert.Len(t, page.Events, 3, "as many as fit")
				}
				for _, e := range page.Events {
					ids = append(ids, e.ID)
				}
				if page.Next == nil {
					break
				}
				q.After = page.Next
			}
			assert.Equal(t, newest(written, nil, asc), ids, "ascending=%v", asc)
		}
	})
}
