package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/apikey"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/shard"
	"github.com/triggers-dev/triggers/internal/store"
	"github.com/triggers-dev/triggers/schema"
)

// cachedAnswer is one API key's authorizer answer as API Gateway caches
// it: the key's sharding as apikey.Principal gave it at `at` (the
// simulated clock), reused for the cache TTL.
type cachedAnswer struct {
	name string
	key  string
	at   time.Time
	cfg  shard.Config
}

// authorizerCache simulates API Gateway's authorizer cache over keys,
// whose clock is *now.
type authorizerCache struct {
	t       *testing.T
	keys    *apikey.Store
	now     *time.Time
	ttl     time.Duration
	answers []*cachedAnswer
}

// add evaluates key now and caches the answer.
func (c *authorizerCache) add(name, key string) *cachedAnswer {
	a := &cachedAnswer{name: name, key: key}
	c.answers = append(c.answers, a)
	c.refresh(a)
	return a
}

func (c *authorizerCache) refresh(a *cachedAnswer) {
	p, err := c.keys.Principal(context.Background(), a.key)
	require.NoError(c.t, err)
	a.at, a.cfg = *c.now, p.Shards
}

// ctx is the context of a request with a's key now: its cached answer, or
// a new one once the cached one has expired.
func (c *authorizerCache) ctx(a *cachedAnswer) context.Context {
	if !c.now.Before(a.at.Add(c.ttl)) {
		c.refresh(a)
	}
	return shardedCtx(a.cfg)
}

// live returns the answers cached now.
func (c *authorizerCache) live() []*cachedAnswer {
	var out []*cachedAnswer
	for _, a := range c.answers {
		if c.now.Before(a.at.Add(c.ttl)) {
			out = append(out, a)
		}
	}
	return out
}

// The reviewer's scenario (a live tenant grown 4 -> 8, or 1 -> 8, while a
// key of the tenant is still cached with the old counts and an
// oldest-first reader pages through it), with the counts each request
// carries coming from apikey.Principal through a simulated authorizer
// cache, under the two-phase growth: no request writes to a shard that a
// live cached answer does not read, so the reader lists every event
// exactly once and in order, and every event is found by id with every
// answer live when it was written. (With the counts applied at once the
// reader listed 23 of 26: shards new to its cursor start at its position,
// and events older than that had been written there meanwhile.)
func TestTwoPhaseGrowthListsEveryEventToAStaleReader(t *testing.T) {
	for _, before := range []int{4, 1} {
		t.Run(fmt.Sprintf("%d to 8", before), func(t *testing.T) {
			ctx := context.Background()
			events := db.CreateTable(t, schema.Events())
			st := store.New(db.Client, events, store.WithSharding(true))
			t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
			now := t0.Add(-200 * time.Second)
			keysTable := db.CreateTable(t, schema.APIKeys())
			keys := apikey.NewStore(db.Client, keysTable, apikey.WithClock(func() time.Time { return now }))
			writerKey, _, err := keys.Create(ctx, "acme", "writer")
			require.NoError(t, err)
			readerKey, _, err := keys.Create(ctx, "acme", "reader")
			require.NoError(t, err)
			if before > 1 {
				_, err = apikey.NewStore(db.Client, keysTable, apikey.WithShardSwitchDelay(0)).SetShards(ctx, "acme", before)
				require.NoError(t, err)
			}
			cache := &authorizerCache{t: t, keys: keys, now: &now, ttl: contract.DefaultAuthorizerCacheSeconds * time.Second}
			writer := cache.add("writer", writerKey) // cached at t0-200s, until t0+100s
			now = t0.Add(-50 * time.Second)
			reader := cache.add("reader", readerKey) // cached at t0-50s, until t0+250s

			base := time.Now().Add(-time.Hour) // event times follow the simulated clock
			var all []event.Event
			write := func(n int) {
				t.Helper()
				wctx := cache.ctx(writer)
				for _, a := range cache.live() {
					require.GreaterOrEqual(t, a.cfg.Read, writer.cfg.Write, "at +%v the %s's cached answer %+v does not read the shards the writer's %+v writes to", now.Sub(t0), a.name, a.cfg, writer.cfg)
				}
				evs := writeSharded(t, st, wctx, "acme", base.Add(now.Sub(t0)), n)
				for _, a := range cache.live() {
					for _, e := range evs {
						_, err := st.Get(shardedCtx(a.cfg), "acme", e.ID)
						require.NoError(t, err, "the %s's cached answer %+v finds %s", a.name, a.cfg, e.ID)
					}
				}
				all = append(all, evs...)
			}
			q := event.InboxQuery{Tenant: "acme", Limit: 4, Ascending: true}
			var got []string
			read := func(pages int) {
				t.Helper()
				for i := 0; i < pages && (len(got) == 0 || q.After != nil); i++ {
					p, err := st.List(cache.ctx(reader), q)
					require.NoError(t, err)
					for _, e := range p.Events {
						got = append(got, e.ID)
					}
					q.After = p.Next
				}
			}

			now = t0
			write(10)
			read(1)
			require.NotNil(t, q.After)

			// The operator grows the tenant to 8 shards.
			now = t0.Add(10 * time.Second)
			g, err := keys.SetShards(ctx, "acme", 8)
			require.NoError(t, err)
			require.Equal(t, now.Add(apikey.DefaultShardSwitchDelay), g.From)

			// The writer's answer expires and is evaluated again: the
			// new read count, the previous write count. The reader's is
			// still the one cached before the change.
			now = t0.Add(110 * time.Second)
			write(16)
			assert.Equal(t, shard.Config{Write: before, Read: 8}, writer.cfg)
			assert.Equal(t, shard.Config{Write: before, Read: before}, reader.cfg)
			read(3)
			assert.Equal(t, shard.Config{Write: before, Read: before}, reader.cfg, "the reader paged with its stale answer")

			// The reader's answer refreshes before the switch time...
			now = t0.Add(260 * time.Second)
			read(1)
			assert.Equal(t, shard.Config{Write: before, Read: 8}, reader.cfg)
			// ...an answer evaluated just before the switch still writes
			// to the previous count, for its whole TTL...
			now = g.From.Add(-time.Millisecond)
			late := cache.add("writer evaluated just before the switch", writerKey)
			assert.Equal(t, shard.Config{Write: before, Read: 8}, late.cfg)
			// ...and from the switch, once its answer expires, the writer
			// writes to 8 shards.
			now = g.From.Add(time.Second)
			write(16) // still cached with the previous count
			now = t0.Add(420 * time.Second)
			write(16)
			assert.Equal(t, shard.Config{Write: 8, Read: 8}, writer.cfg)
			read(2)
			require.NotNil(t, q.After, "the pass is not over before the last writes")
			now = t0.Add(600 * time.Second)
			write(6)
			read(1000)
			assert.Greater(t, len(partitionsOf(t, events, "acme", 8)), before, "events in the new shards")
			assert.Equal(t, newest(all, nil, true), got, "every event listed once, in order")
			assert.Equal(t, newest(all, nil, true), readAll(t, st, cache.ctx(reader), event.InboxQuery{Tenant: "acme", Limit: 7, Ascending: true}))
		})
	}
}
