package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/shard"
	"github.com/triggers-dev/triggers/internal/store"
	"github.com/triggers-dev/triggers/schema"
)

// A shard a page read to its end is read again by the next page, from the
// last item it returned: an event written there later (oldest-first, the
// newest of all) is listed at the end of the pass, as in one partition.
// The cursor used to mark such a shard done ("-") for the rest of the
// pass, and the event was never listed (found by review).
func TestShardedPassListsEventsWrittenToAnExhaustedShard(t *testing.T) {
	for _, shards := range []int{1, 2} {
		t.Run(fmt.Sprintf("shards=%d", shards), func(t *testing.T) {
			table := db.CreateTable(t, schema.Events())
			st := store.New(db.Client, table, store.WithSharding(true))
			ctx := shardedCtx(shard.Config{Write: shards, Read: shards})
			base := time.Now().Add(-time.Hour)
			var evs []event.Event
			// Shard 1 (when sharded) holds the two oldest events, shard 0
			// the 20 newer ones: the first page of 5 reads shard 1 to its end.
			for i := range 22 {
				k := 0
				if i < 2 {
					k = 1 % shards
				}
				evs = append(evs, eventInShard(t, k, 2, base.Add(time.Duration(i)*time.Millisecond)))
			}
			putAll(t, st, ctx, evs)
			q := event.InboxQuery{Tenant: "acme", Limit: 5, Ascending: true}
			page, err := st.List(ctx, q)
			require.NoError(t, err)
			require.NotNil(t, page.Next)
			got := ids(page.Events)
			for _, p := range page.Next.Shards {
				assert.NotEqual(t, event.ShardDone, p, "a shard read to its end in this pass is not done: %v", page.Next.Shards)
			}

			late := eventInShard(t, 1%shards, 2, time.Now())
			require.NoError(t, st.Put(ctx, "acme", late))
			evs = append(evs, late)
			q.After = page.Next
			got = append(got, readAll(t, st, ctx, q)...)
			assert.Equal(t, newest(evs, nil, true), got, "every event once, oldest first, the late one last")
		})
	}
}

// Newest-first on a status view: an older event that enters the view
// (received -> failed) behind the reader's position, in a shard an earlier
// page read to its end, is listed by the rest of the pass, as in one
// partition.
func TestShardedStatusViewListsAnEventThatEntersBehindTheReader(t *testing.T) {
	for _, shards := range []int{1, 2} {
		t.Run(fmt.Sprintf("shards=%d", shards), func(t *testing.T) {
			table := db.CreateTable(t, schema.Events())
			st := store.New(db.Client, table, store.WithSharding(true))
			ctx := shardedCtx(shard.Config{Write: shards, Read: shards})
			base := time.Now().Add(-time.Hour)
			old := eventInShard(t, 1%shards, 2, base)
			evs := []event.Event{old, eventInShard(t, 1%shards, 2, base.Add(100*time.Millisecond))}
			for i := 1; i <= 9; i++ {
				evs = append(evs, eventInShard(t, 0, 2, base.Add(time.Duration(10*i)*time.Millisecond)))
			}
			putAll(t, st, ctx, evs)
			for _, e := range evs[1:] {
				_, err := st.Transition(ctx, "acme", e.ID, []event.Status{event.Received}, event.Failed)
				require.NoError(t, err)
			}
			q := event.InboxQuery{Tenant: "acme", Status: event.Failed, Limit: 3}
			page, err := st.List(ctx, q)
			require.NoError(t, err)
			require.NotNil(t, page.Next)
			got := ids(page.Events)
			_, err = st.Transition(ctx, "acme", old.ID, []event.Status{event.Received}, event.Failed)
			require.NoError(t, err)
			old.Status = event.Failed
			q.After = page.Next
			got = append(got, readAll(t, st, ctx, q)...)
			assert.Equal(t, newest(evs[1:], nil, false), got[:10], "the ten failed before the pass, newest first")
			assert.Equal(t, []string{old.ID}, got[10:], "then the one that failed behind the reader")
		})
	}
}

// Resharding 1 -> 4 -> 8 between the pages of every filtered view (the
// table and its indexes, both profiles, both orders): an oldest-first pass
// lists every event once, in order, the newest-first one every event
// older than its first page, once (newer ones are for the next pass).
func TestReshardingBetweenPagesOfFilteredViews(t *testing.T) {
	for _, profile := range []schema.EventsProfile{schema.ProfileSeed, schema.ProfileLean} {
		table := db.CreateTable(t, schema.EventsFor(profile))
		st := store.New(db.Client, table, store.WithSharding(true), store.WithProfile(profile))
		one := shardedCtx(shard.Config{Write: 1, Read: 1})
		four := shardedCtx(shard.Config{Write: 4, Read: 4})
		eight := shardedCtx(shard.Config{Write: 8, Read: 8})
		base := time.Now().Add(-time.Hour)
		for _, asc := range []bool{false, true} {
			for qi, q := range []event.InboxQuery{{}, {Status: event.Received}, {EventType: "a"}, {EventType: "b", Status: event.Received}} {
				for _, limit := range []int{1, 7} {
					tenant := fmt.Sprintf("t-%v-%d-%d", asc, qi, limit)
					q.Tenant, q.Limit, q.Ascending, q.After = tenant, limit, asc, nil
					keep := func(e event.Event) bool {
						return (q.EventType == "" || e.Type == q.EventType) && (q.Status == "" || e.Status == q.Status)
					}
					all := writeSharded(t, st, one, tenant, base, 30)
					before := newest(all, keep, asc)
					var got []string
					c := one
					for n := 0; ; n++ {
						require.Less(t, n, 300)
						switch n {
						case 2:
							all = append(all, writeSharded(t, st, four, tenant, base.Add(time.Minute), 30)...)
							c = four
						case 4:
							all = append(all, writeSharded(t, st, eight, tenant, base.Add(2*time.Minute), 30)...)
							c = eight
						}
						p, err := st.List(c, q)
						require.NoError(t, err)
						got = append(got, ids(p.Events)...)
						if p.Next == nil {
							break
						}
						q.After = p.Next
					}
					if asc {
						assert.Equal(t, newest(all, keep, asc), got, "%s %+v", profile, q)
					} else {
						assert.Equal(t, before, got, "%s %+v", profile, q)
					}
				}
			}
		}
	}
}

// A sharded page that took no event (its rounds ran out on a filter) has
// a cursor without a sort key. Given to a store with sharding off
// (EVENTS_SHARDING rolled back), it starts the pass over, as it would on
// the sharded store, instead of failing on DynamoDB's refusal of an empty
// start key (which the API answered as a 400 invalid_payload, "DynamoDB
// cannot store this event").
func TestShardCursorWithoutPositionOnAnUnshardedStore(t *testing.T) {
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table, store.WithSharding(true))
	ctx := shardedCtx(shard.Config{Write: 2, Read: 2})
	base := time.Now().Add(-time.Hour)
	var evs []event.Event
	for i := range 40 {
		evs = append(evs, eventInShard(t, i%2, 2, base.Add(time.Duration(i)*time.Millisecond)))
	}
	putAll(t, st, ctx, evs)
	q := event.InboxQuery{Tenant: "acme", EventType: "a", Status: event.Failed, Limit: 1}
	page, err := st.List(ctx, q)
	require.NoError(t, err)
	require.NotNil(t, page.Next, "the rounds ran out before the page's end")
	require.Empty(t, page.Events)
	require.Empty(t, page.Next.SortKey, "no event taken: no position")
	q.After = page.Next
	_, err = st.List(ctx, q)
	require.NoError(t, err, "sharded store")
	off := store.New(db.Client, table)
	got, err := off.List(ctx, q)
	require.NoError(t, err, "store with sharding off")
	assert.Empty(t, got.Events, "no failed event of type a")
}

// A request whose shard counts are stale (an authorizer answer cached
// before the tenant grew from 4 to 8 shards) finds, reads and acks an event
// a fresh request wrote to shard 6, which it does not read: it used to
// answer 404 (GET, PATCH) and "unknown" (ack) for it (found by review).
func TestStaleReadCountFindsAnEventInANewShard(t *testing.T) {
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table, store.WithSharding(true))
	fresh := shardedCtx(shard.Config{Write: 8, Read: 8})
	for _, stale := range []shard.Config{{Write: 4, Read: 4}, {Write: 1, Read: 1}} {
		e := eventInShard(t, 6, 8, time.Now())
		require.NoError(t, st.Put(fresh, "acme", e))
		ctx := shardedCtx(stale)
		got, err := st.Get(ctx, "acme", e.ID)
		require.NoError(t, err, "GET with %+v", stale)
		assert.Equal(t, e.ID, got.ID)
		_, err = st.Transition(ctx, "acme", e.ID, []event.Status{event.Received}, event.Delivered)
		require.NoError(t, err, "ack with %+v", stale)
		got, err = st.Get(fresh, "acme", e.ID)
		require.NoError(t, err)
		assert.Equal(t, event.Delivered, got.Status)
	}
}

// Newest-first on a tenant whose shard 1 is empty when the pass starts (a
// growth just added it): the next pages go on from the page's position in
// that shard, so the events written there since the pass began (ahead of
// the reader, for the next pass) are not read and skipped page after
// page: no empty page while older events remain (found by review: 8 of 15
// pages were empty).
func TestShardedPassGoesOnPastAnEmptyShard(t *testing.T) {
	table := db.CreateTable(t, schema.Events())
	st := store.New(db.Client, table, store.WithSharding(true))
	ctx := shardedCtx(shard.Config{Write: 2, Read: 2})
	base := time.Now().Add(-time.Hour)
	var old []event.Event
	for i := range 30 {
		old = append(old, eventInShard(t, 0, 2, base.Add(time.Duration(i)*time.Millisecond)))
	}
	putAll(t, st, ctx, old)
	q := event.InboxQuery{Tenant: "acme", Limit: 5}
	page, err := st.List(ctx, q)
	require.NoError(t, err)
	require.Len(t, page.Events, 5)
	require.NotNil(t, page.Next)
	assert.Equal(t, page.Events[4].ID, page.Next.Shards[1], "the empty shard goes on from the page's position")

	now := time.Now()
	var fresh []event.Event
	for i := range 200 {
		fresh = append(fresh, eventInShard(t, 1, 2, now.Add(time.Duration(i)*time.Millisecond)))
	}
	putAll(t, st, ctx, fresh)
	got := ids(page.Events)
	q.After = page.Next
	rest, empty := readRest(t, st, ctx, q)
	got = append(got, rest...)
	assert.Equal(t, newest(old, nil, false), got, "the pass lists the older events, once, newest first")
	assert.Zero(t, empty, "no empty page while older events remain")
}

// putAll stores evs for tenant acme, 25 a batch.
func putAll(t *testing.T, st *store.Store, ctx context.Context, evs []event.Event) {
	t.Helper()
	for i := 0; i < len(evs); i += 25 {
		for _, err := range st.PutBatch(ctx, "acme", evs[i:min(i+25, len(evs))]) {
			require.NoError(t, err)
		}
	}
}

// Newest-first on a tenant of 8 shards, with a first page of one event:
// the seven shards that gave it nothing have their next events buffered,
// and the pass goes on from the page's position in them, not from their
// start. From their start, each page re-read every event written there
// since the pass began (ahead of the reader, skipped), and the tenant's
// write rate turned into empty pages and wasted reads until each shard had
// given the pass an event (found by review: 10 empty pages of 50 with 50
// new events a shard).
func TestShardedPassGoesOnPastShardsThatGaveNothingYet(t *testing.T) {
	table := db.CreateTable(t, schema.Events())
	api := &readsAPI{API: db.Client}
	st := store.New(api, table, store.WithSharding(true))
	const shards = 8
	ctx := shardedCtx(shard.Config{Write: shards, Read: shards})
	base := time.Now().Add(-time.Hour)
	var old []event.Event
	for i := range 5 * shards {
		old = append(old, eventInShard(t, i%shards, shards, base.Add(time.Duration(i)*time.Millisecond)))
	}
	putAll(t, st, ctx, old)
	q := event.InboxQuery{Tenant: "acme", Limit: 1}
	page, err := st.List(ctx, q)
	require.NoError(t, err)
	require.Len(t, page.Events, 1)
	require.NotNil(t, page.Next)
	for k, p := range page.Next.Shards {
		if k != shard.Of(page.Events[0].ID) {
			assert.Equal(t, page.Events[0].ID, p, "shard %d, which gave nothing, goes on from the page's position", k)
		}
	}

	now := time.Now()
	var fresh []event.Event
	for i := range 60 * shards {
		fresh = append(fresh, eventInShard(t, i%shards, shards, now.Add(time.Duration(i)*time.Microsecond)))
	}
	putAll(t, st, ctx, fresh)
	got := ids(page.Events)
	api.mu.Lock()
	api.read = map[string]bool{}
	api.mu.Unlock()
	q.After = page.Next
	rest, empty := readRest(t, st, ctx, q)
	got = append(got, rest...)
	assert.Equal(t, newest(old, nil, false), got, "the pass lists the older events, once, newest first")
	assert.Zero(t, empty, "no empty page while older events remain")
	reread := 0
	for _, e := range fresh {
		if api.read[e.ID] {
			reread++
		}
	}
	assert.Zero(t, reread, "events written since the pass began (for the next pass) read by its pages")
}

// readsAPI records the ids of the events the Queries return (a page
// runs its shards' Queries in parallel).
type readsAPI struct {
	store.API
	mu   sync.Mutex
	read map[string]bool
}

func (r *readsAPI) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	out, err := r.API.Query(ctx, in, optFns...)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil && r.read != nil {
		for _, it := range out.Items {
			if v, ok := it[schema.AttrEventID].(*types.AttributeValueMemberS); ok {
				r.read[v.Value] = true
			}
		}
	}
	return out, err
}

// readRest lists the pages of q from q.After to the pass's end: the ids
// in order, and how many pages came back empty with a cursor to go on.
func readRest(t *testing.T, st *store.Store, ctx context.Context, q event.InboxQuery) (got []string, empty int) {
	t.Helper()
	for q.After != nil {
		p, err := st.List(ctx, q)
		require.NoError(t, err)
		if len(p.Events) == 0 && p.Next != nil {
			empty++
		}
		got = append(got, ids(p.Events)...)
		q.After = p.Next
	}
	return got, empty
}
