package apikey_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/apikey"
	"github.com/triggers-dev/triggers/internal/shard"
	"github.com/triggers-dev/triggers/schema"
)

// A tenant's sharding is on every key of the tenant, the read count only
// grows, a later key copies it, and Principal returns it (once a growth
// is in effect: the clock moves past each change's delay).
func TestSetShardsOnEveryKeyOfTheTenant(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.APIKeys())
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	keys := apikey.NewStore(db.Client, table, apikey.WithClock(func() time.Time { return now }))
	k1, _, err := keys.Create(ctx, "acme", "one")
	require.NoError(t, err)
	k2, _, err := keys.Create(ctx, "acme", "two")
	require.NoError(t, err)
	other, _, err := keys.Create(ctx, "acme2", "")
	require.NoError(t, err)

	p, err := keys.Principal(ctx, k1)
	require.NoError(t, err)
	assert.Equal(t, apikey.Principal{Tenant: "acme", Shards: shard.Config{Write: 1, Read: 1}}, p, "unsharded by default")

	steps := []struct{ write, read int }{{8, 8}, {2, 8}, {16, 16}, {1, 16}}
	for _, s := range steps {
		cfg, err := keys.SetShards(ctx, "acme", s.write)
		require.NoError(t, err)
		assert.Equal(t, shard.Config{Write: s.write, Read: s.read}, cfg.Config)
		now = now.Add(apikey.DefaultShardSwitchDelay)
		for _, k := range []string{k1, k2} {
			p, err := keys.Principal(ctx, k)
			require.NoError(t, err)
			assert.Equal(t, shard.Config{Write: s.write, Read: s.read}, p.Shards)
		}
	}
	k3, rec, err := keys.Create(ctx, "acme", "three")
	require.NoError(t, err)
	assert.Equal(t, shard.Config{Write: 1, Read: 16}, rec.Shards)
	p, err = keys.Principal(ctx, k3)
	require.NoError(t, err)
	assert.Equal(t, shard.Config{Write: 1, Read: 16}, p.Shards, "a new key copies the tenant's sharding")
	p, err = keys.Principal(ctx, other)
	require.NoError(t, err)
	assert.Equal(t, shard.Config{Write: 1, Read: 1}, p.Shards, "another tenant is untouched")

	for _, n := range []int{0, 33} {
		_, err := keys.SetShards(ctx, "acme", n)
		assert.ErrorContains(t, err, "1 to 32")
	}
	_, err = keys.SetShards(ctx, "nobody", 4)
	assert.ErrorContains(t, err, "no API keys")

	// A key whose read count is higher (set by hand, or by an older
	// change) is never lowered: the read count is the largest of all.
	_, err = db.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(table),
		Key:                       map[string]types.AttributeValue{schema.AttrKeyHash: &types.AttributeValueMemberS{Value: apikey.Hash(k2)}},
		UpdateExpression:          aws.String("SET #r = :r"),
		ExpressionAttributeNames:  map[string]string{"#r": schema.AttrReadShards},
		ExpressionAttributeValues: map[string]types.AttributeValue{":r": &types.AttributeValueMemberN{Value: "20"}},
	})
	require.NoError(t, err)
	cfg, err := keys.SetShards(ctx, "acme", 4)
	require.NoError(t, err, "the read count it lists is the current one")
	assert.Equal(t, shard.Config{Write: 4, Read: 20}, cfg.Config)
}

// raceDB runs a hook before the n-th TransactWriteItems (1-based), between
// a Create's or SetShards's reads and its write, where a second operator's
// change lands; fail makes the n-th fail instead; lag answers every Query
// with no item, as a global secondary index that has not caught up yet.
type raceDB struct {
	apikey.DB
	n    int
	hook map[int]func()
	fail map[int]error
	lag  bool
	// staleWrite, when set, is the write count the index shows for every
	// key (an index behind the last change).
	staleWrite string
}

func (r *raceDB) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	r.n++
	if f := r.hook[r.n]; f != nil {
		f()
	}
	if err := r.fail[r.n]; err != nil {
		return nil, err
	}
	return r.DB.TransactWriteItems(ctx, in, o...)
}

func (r *raceDB) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	if r.lag {
		return &dynamodb.QueryOutput{}, nil
	}
	out, err := r.DB.Query(ctx, in, o...)
	if err == nil && r.staleWrite != "" {
		for _, it := range out.Items {
			it[schema.AttrShards] = &types.AttributeValueMemberN{Value: r.staleWrite}
		}
	}
	return out, err
}

// shardsOf returns the sharding each key of tenant carries, by hash.
func shardsOf(t *testing.T, keys *apikey.Store, tenant string) map[string]shard.Config {
	t.Helper()
	list, err := keys.List(context.Background(), tenant)
	require.NoError(t, err)
	out := map[string]shard.Config{}
	for _, k := range list {
		out[k.Hash] = k.Shards
	}
	return out
}

// Creates and sharding changes of one tenant serialize on the tenant's
// record: whichever lands between another's reads and write, every key
// ends with the tenant's counts, and no change is half made. (Each case
// failed when the counts were copied key by key: found by review.)
func TestConcurrentKeyAndShardChanges(t *testing.T) {
	ctx := context.Background()
	setup := func(t *testing.T) (string, *apikey.Store, string) {
		table := db.CreateTable(t, schema.APIKeys())
		plain := apikey.NewStore(db.Client, table)
		k1, _, err := plain.Create(ctx, "acme", "one")
		require.NoError(t, err)
		_, err = plain.SetShards(ctx, "acme", 4)
		require.NoError(t, err)
		return table, plain, k1
	}
	t.Run("a sharding change lands during a create", func(t *testing.T) {
		table, plain, k1 := setup(t)
		race := &raceDB{DB: db.Client, hook: map[int]func(){1: func() {
			_, err := plain.SetShards(ctx, "acme", 8)
			require.NoError(t, err)
		}}}
		k2, rec, err := apikey.NewStore(race, table).Create(ctx, "acme", "two")
		require.NoError(t, err)
		assert.Equal(t, shard.Config{Write: 8, Read: 8}, rec.Shards)
		assert.Equal(t, map[string]shard.Config{apikey.Hash(k1): {Write: 8, Read: 8}, apikey.Hash(k2): {Write: 8, Read: 8}}, shardsOf(t, plain, "acme"))
		assert.Equal(t, 2, race.n, "the create started again after the change")
	})
	t.Run("a create lands during a sharding change", func(t *testing.T) {
		table, plain, k1 := setup(t)
		var k2 string
		race := &raceDB{DB: db.Client, hook: map[int]func(){1: func() {
			var err error
			k2, _, err = plain.Create(ctx, "acme", "two")
			require.NoError(t, err)
		}}}
		cfg, err := apikey.NewStore(race, table).SetShards(ctx, "acme", 8)
		require.NoError(t, err)
		assert.Equal(t, shard.Config{Write: 8, Read: 8}, cfg.Config)
		assert.Equal(t, map[string]shard.Config{apikey.Hash(k1): {Write: 8, Read: 8}, apikey.Hash(k2): {Write: 8, Read: 8}}, shardsOf(t, plain, "acme"))
	})
	t.Run("two sharding changes at once", func(t *testing.T) {
		table, plain, k1 := setup(t)
		k2, _, err := plain.Create(ctx, "acme", "two")
		require.NoError(t, err)
		race := &raceDB{DB: db.Client, hook: map[int]func(){1: func() {
			_, err := plain.SetShards(ctx, "acme", 3)
			require.NoError(t, err)
		}}}
		cfg, err := apikey.NewStore(race, table).SetShards(ctx, "acme", 2)
		require.NoError(t, err)
		assert.Equal(t, shard.Config{Write: 2, Read: 4}, cfg.Config, "the later change, the read count kept")
		assert.Equal(t, map[string]shard.Config{apikey.Hash(k1): cfg.Config, apikey.Hash(k2): cfg.Config}, shardsOf(t, plain, "acme"))
	})
	t.Run("a failed change changes nothing", func(t *testing.T) {
		table, plain, k1 := setup(t)
		k2, _, err := plain.Create(ctx, "acme", "two")
		require.NoError(t, err)
		race := &raceDB{DB: db.Client, fail: map[int]error{1: errors.New("throttled")}}
		_, err = apikey.NewStore(race, table).SetShards(ctx, "acme", 8)
		require.ErrorContains(t, err, "set the shards of tenant acme (nothing changed): throttled")
		four := shard.Config{Write: 4, Read: 4}
		assert.Equal(t, map[string]shard.Config{apikey.Hash(k1): four, apikey.Hash(k2): four}, shardsOf(t, plain, "acme"))
	})
	t.Run("a key the tenant index does not show yet", func(t *testing.T) {
		// Create then shards, back to back: the index may not list the
		// new key yet; the tenant's record does.
		table, plain, k1 := setup(t)
		k2, _, err := plain.Create(ctx, "acme", "two")
		require.NoError(t, err)
		cfg, err := apikey.NewStore(&raceDB{DB: db.Client, lag: true}, table).SetShards(ctx, "acme", 8)
		require.NoError(t, err)
		assert.Equal(t, shard.Config{Write: 8, Read: 8}, cfg.Config)
		assert.Equal(t, map[string]shard.Config{apikey.Hash(k1): cfg.Config, apikey.Hash(k2): cfg.Config}, shardsOf(t, plain, "acme"))
	})
	t.Run("a create after a shrink, the index behind", func(t *testing.T) {
		// 4 -> 2 leaves read 4; an index still showing the old write
		// count 4 must not give the new key 4: the record's count holds.
		table, plain, _ := setup(t)
		_, err := plain.SetShards(ctx, "acme", 2)
		require.NoError(t, err)
		_, rec, err := apikey.NewStore(&raceDB{DB: db.Client, staleWrite: "4"}, table).Create(ctx, "acme", "two")
		require.NoError(t, err)
		assert.Equal(t, shard.Config{Write: 2, Read: 4}, rec.Shards)
	})
	t.Run("concurrent changes that keep winning", func(t *testing.T) {
		table, plain, _ := setup(t)
		hook := map[int]func(){}
		for i := 1; i <= 5; i++ {
			hook[i] = func() {
				_, err := plain.SetShards(ctx, "acme", 4+i)
				require.NoError(t, err)
			}
		}
		_, err := apikey.NewStore(&raceDB{DB: db.Client, hook: hook}, table).SetShards(ctx, "acme", 2)
		assert.ErrorIs(t, err, apikey.ErrShardsChanged)
	})
}

// Keys written before tenants had a record (or by an older triggers-keys)
// are found through the tenant index: the first create or change makes
// the record from them, their counts included.
func TestKeysWithoutTheTenantsRecord(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.APIKeys())
	keys := apikey.NewStore(db.Client, table)
	legacy := map[string]types.AttributeValue{
		schema.AttrKeyHash: &types.AttributeValueMemberS{Value: apikey.Hash("trg_legacy")}, schema.AttrKeyPrefix: &types.AttributeValueMemberS{Value: "trg_legacy"},
		schema.AttrTenantID: &types.AttributeValueMemberS{Value: "acme"}, schema.AttrKeyStatus: &types.AttributeValueMemberS{Value: apikey.StatusActive},
		schema.AttrCreatedAt: &types.AttributeValueMemberN{Value: "1"},
		schema.AttrShards:    &types.AttributeValueMemberN{Value: "2"}, schema.AttrReadShards: &types.AttributeValueMemberN{Value: "6"},
	}
	_, err := db.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: legacy})
	require.NoError(t, err)
	k2, rec, err := keys.Create(ctx, "acme", "new")
	require.NoError(t, err)
	assert.Equal(t, shard.Config{Write: 2, Read: 6}, rec.Shards, "the new key copies the legacy key's counts")
	cfg, err := keys.SetShards(ctx, "acme", 3)
	require.NoError(t, err)
	assert.Equal(t, shard.Config{Write: 3, Read: 6}, cfg.Config)
	// Even with the index behind, both keys change: the record lists them.
	cfg, err = apikey.NewStore(&raceDB{DB: db.Client, lag: true}, table).SetShards(ctx, "acme", 4)
	require.NoError(t, err)
	assert.Equal(t, map[string]shard.Config{apikey.Hash("trg_legacy"): cfg.Config, apikey.Hash(k2): cfg.Config}, shardsOf(t, keys, "acme"))
	// The record is no key: listing every key, revoking it.
	all, err := keys.List(ctx, "")
	require.NoError(t, err)
	assert.Len(t, all, 2)
	_, err = keys.Revoke(ctx, "tenant#acme")
	assert.ErrorIs(t, err, apikey.ErrNoSuchKey)
}

// itemOf reads the raw item of key_hash h.
func itemOf(t *testing.T, table, h string) map[string]types.AttributeValue {
	t.Helper()
	out, err := db.Client.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(table), Key: map[string]types.AttributeValue{schema.AttrKeyHash: &types.AttributeValueMemberS{Value: h}}, ConsistentRead: aws.Bool(true),
	})
	require.NoError(t, err)
	return out.Item
}

// A growth of the write count is two-phase: the read count is raised at
// once, the write count takes effect the switch delay (the authorizer
// cache TTL plus a margin) later, and until then Principal gives the
// previous one; on every key, the tenant's record and a key created
// meanwhile. A shrink, and a change with no delay, take effect at once.
func TestGrowthTakesEffectAfterTheCacheTTL(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.APIKeys())
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0
	keys := apikey.NewStore(db.Client, table, apikey.WithClock(func() time.Time { return now }))
	k1, _, err := keys.Create(ctx, "acme", "one")
	require.NoError(t, err)
	principal := func(key string) shard.Config {
		t.Helper()
		p, err := keys.Principal(ctx, key)
		require.NoError(t, err)
		return p.Shards
	}
	d := apikey.DefaultShardSwitchDelay
	assert.Equal(t, time.Duration(contract.DefaultAuthorizerCacheSeconds)*time.Second+apikey.ShardSwitchMargin, d)

	// 1 -> 4: read 4 at once, write 1 until t0+d.
	got, err := keys.SetShards(ctx, "acme", 4)
	require.NoError(t, err)
	from := t0.Add(d)
	assert.Equal(t, apikey.Sharding{Config: shard.Config{Write: 4, Read: 4}, Prev: 1, From: from}, got)
	assert.Equal(t, shard.Config{Write: 1, Read: 4}, principal(k1))
	for _, h := range []string{apikey.Hash(k1), schema.TenantRecordPrefix + "acme"} {
		it := itemOf(t, table, h)
		assert.Equal(t, &types.AttributeValueMemberN{Value: "1"}, it[schema.AttrShardsPrev], h)
		assert.Equal(t, &types.AttributeValueMemberN{Value: strconv.FormatInt(from.UnixMilli(), 10)}, it[schema.AttrShardsFrom], h)
		assert.Equal(t, &types.AttributeValueMemberN{Value: "4"}, it[schema.AttrShards], h)
		assert.Equal(t, &types.AttributeValueMemberN{Value: "4"}, it[schema.AttrReadShards], h)
	}

	// A key created meanwhile waits for the same time.
	now = t0.Add(10 * time.Second)
	k2, rec, err := keys.Create(ctx, "acme", "two")
	require.NoError(t, err)
	assert.Equal(t, 1, rec.ShardsPrev)
	assert.True(t, from.Equal(rec.ShardsFrom))
	assert.Equal(t, shard.Config{Write: 1, Read: 4}, principal(k2))

	// Running it again, or growing within the pending count, keeps the
	// time: the read count covering it was raised at t0.
	now = t0.Add(20 * time.Second)
	got, err = keys.SetShards(ctx, "acme", 4)
	require.NoError(t, err)
	assert.Equal(t, apikey.Sharding{Config: shard.Config{Write: 4, Read: 4}, Prev: 1, From: from}, got)
	got, err = keys.SetShards(ctx, "acme", 3)
	require.NoError(t, err)
	assert.Equal(t, apikey.Sharding{Config: shard.Config{Write: 3, Read: 4}, Prev: 1, From: from}, got)

	// Just before the time: the previous count; at it: the new one.
	now = from.Add(-time.Millisecond)
	assert.Equal(t, shard.Config{Write: 1, Read: 4}, principal(k1))
	assert.Equal(t, shard.Config{Write: 1, Read: 4}, principal(k2))
	now = from
	assert.Equal(t, shard.Config{Write: 3, Read: 4}, principal(k1))
	assert.Equal(t, shard.Config{Write: 3, Read: 4}, principal(k2))

	// Growing beyond a pending count starts the delay again, from the
	// count in effect.
	now = t0.Add(30 * time.Second)
	_, err = keys.SetShards(ctx, "acme", 4)
	require.NoError(t, err)
	now = t0.Add(40 * time.Second)
	got, err = keys.SetShards(ctx, "acme", 8)
	require.NoError(t, err)
	from = now.Add(d)
	assert.Equal(t, apikey.Sharding{Config: shard.Config{Write: 8, Read: 8}, Prev: 1, From: from}, got)
	assert.Equal(t, shard.Config{Write: 1, Read: 8}, principal(k1))
	now = from
	assert.Equal(t, shard.Config{Write: 8, Read: 8}, principal(k1))

	// A shrink is at once, and clears the pending growth from the records.
	got, err = keys.SetShards(ctx, "acme", 2)
	require.NoError(t, err)
	assert.Equal(t, apikey.Sharding{Config: shard.Config{Write: 2, Read: 8}}, got)
	assert.Equal(t, shard.Config{Write: 2, Read: 8}, principal(k2))
	for _, h := range []string{apikey.Hash(k1), apikey.Hash(k2), schema.TenantRecordPrefix + "acme"} {
		it := itemOf(t, table, h)
		assert.NotContains(t, it, schema.AttrShardsPrev, h)
		assert.NotContains(t, it, schema.AttrShardsFrom, h)
	}

	// Growing again within the read count still waits: a cached answer
	// may carry any count, and the delay makes no assumption.
	got, err = keys.SetShards(ctx, "acme", 6)
	require.NoError(t, err)
	assert.Equal(t, apikey.Sharding{Config: shard.Config{Write: 6, Read: 8}, Prev: 2, From: now.Add(d)}, got)
	assert.Equal(t, shard.Config{Write: 2, Read: 8}, got.At(now))
	assert.Equal(t, shard.Config{Write: 6, Read: 8}, got.At(now.Add(d)))
	assert.Equal(t, shard.Config{Write: 2, Read: 8}, principal(k1))

	// A shrink below the count in effect cancels a pending growth.
	got, err = keys.SetShards(ctx, "acme", 1)
	require.NoError(t, err)
	assert.Equal(t, apikey.Sharding{Config: shard.Config{Write: 1, Read: 8}}, got)
	assert.Equal(t, shard.Config{Write: 1, Read: 8}, principal(k1))

	// With no delay (a tenant whose keys no request has used yet), at once.
	at := apikey.NewStore(db.Client, table, apikey.WithClock(func() time.Time { return now }), apikey.WithShardSwitchDelay(0))
	got, err = at.SetShards(ctx, "acme", 16)
	require.NoError(t, err)
	assert.Equal(t, apikey.Sharding{Config: shard.Config{Write: 16, Read: 16}}, got)
	assert.Equal(t, shard.Config{Write: 16, Read: 16}, principal(k1))

	// A custom delay (another authorizer cache TTL).
	custom := apikey.NewStore(db.Client, table, apikey.WithClock(func() time.Time { return now }), apikey.WithShardSwitchDelay(time.Hour+apikey.ShardSwitchMargin))
	_, err = custom.SetShards(ctx, "acme", 4)
	require.NoError(t, err)
	got, err = custom.SetShards(ctx, "acme", 20)
	require.NoError(t, err)
	assert.Equal(t, now.Add(time.Hour+apikey.ShardSwitchMargin), got.From)
	assert.Equal(t, 4, got.Prev)
}

// A key record of an earlier version (no shards_prev, shards_from) keeps
// today's meaning: its write count applies at once.
func TestKeyRecordsOfEarlierVersionsApplyTheirCounts(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.APIKeys())
	_, err := db.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
		schema.AttrKeyHash: &types.AttributeValueMemberS{Value: apikey.Hash("trg_old")}, schema.AttrTenantID: &types.AttributeValueMemberS{Value: "acme"},
		schema.AttrKeyStatus: &types.AttributeValueMemberS{Value: apikey.StatusActive}, schema.AttrCreatedAt: &types.AttributeValueMemberN{Value: "1"},
		schema.AttrShards: &types.AttributeValueMemberN{Value: "8"}, schema.AttrReadShards: &types.AttributeValueMemberN{Value: "8"},
	}})
	require.NoError(t, err)
	p, err := apikey.NewStore(db.Client, table).Principal(ctx, "trg_old")
	require.NoError(t, err)
	assert.Equal(t, shard.Config{Write: 8, Read: 8}, p.Shards)
}

// A key item deleted by hand (as the key limit's message once said to
// remove unused keys) while the tenant's record still lists it: SetShards
// drops it from the record and changes the other keys. It used to fail
// every time, each transaction cancelled by the gone key's condition.
func TestSetShardsDropsAKeyDeletedByHand(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.APIKeys())
	keys := apikey.NewStore(db.Client, table, apikey.WithShardSwitchDelay(0))
	kept, _, err := keys.Create(ctx, "acme", "kept")
	require.NoError(t, err)
	_, removed, err := keys.Create(ctx, "acme", "removed")
	require.NoError(t, err)
	_, err = db.Client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(table),
		Key:       map[string]types.AttributeValue{schema.AttrKeyHash: &types.AttributeValueMemberS{Value: removed.Hash}},
	})
	require.NoError(t, err)

	cfg, err := keys.SetShards(ctx, "acme", 4)
	require.NoError(t, err)
	assert.Equal(t, shard.Config{Write: 4, Read: 4}, cfg.Config)
	p, err := keys.Principal(ctx, kept)
	require.NoError(t, err)
	assert.Equal(t, shard.Config{Write: 4, Read: 4}, p.Shards)
	rec, err := db.Client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{schema.AttrKeyHash: &types.AttributeValueMemberS{Value: schema.TenantRecordPrefix + "acme"}},
	})
	require.NoError(t, err)
	hashes := rec.Item[schema.AttrTenantKeyHashes].(*types.AttributeValueMemberSS).Value
	assert.NotContains(t, hashes, removed.Hash, "the gone key leaves the tenant's record")
	assert.Len(t, hashes, 1)
	got, err := db.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{schema.AttrKeyHash: &types.AttributeValueMemberS{Value: removed.Hash}}})
	require.NoError(t, err)
	assert.Nil(t, got.Item, "nothing recreated the gone key")
}

// A tenant's keys stay within what one sharding change can write: Create
// refuses a key past 99 that may still authenticate (nothing written), and
// revoking keys makes room, as the messages say, for Create and for
// SetShards, which leave revoked keys out of the tenant's record (they
// never authenticate again, so their counts do not matter). Create used
// to take a 100th key, after which every SetShards of the tenant was
// refused, and revoking keys did not help: only deleting items by hand.
func TestKeyLimitOfATenant(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.APIKeys())
	keys := apikey.NewStore(db.Client, table, apikey.WithShardSwitchDelay(0))
	var made []apikey.Key
	for i := range 99 {
		_, k, err := keys.Create(ctx, "acme", "key "+strconv.Itoa(i))
		require.NoError(t, err, "key %d", i+1)
		made = append(made, k)
	}
	_, _, err := keys.Create(ctx, "acme", "one too many")
	require.ErrorContains(t, err, `tenant "acme" has 99 API keys that are not revoked`)
	listed, err := keys.List(ctx, "acme")
	require.NoError(t, err)
	assert.Len(t, listed, 99, "the refused key was not written")
	_, err = keys.SetShards(ctx, "acme", 4)
	require.NoError(t, err, "99 keys fit one change")

	// Revoking makes room: a new key, and the change still fits.
	for _, k := range made[:2] {
		_, err := keys.Revoke(ctx, k.Hash)
		require.NoError(t, err)
	}
	newKey, _, err := keys.Create(ctx, "acme", "after a revocation")
	require.NoError(t, err)
	cfg, err := keys.SetShards(ctx, "acme", 8)
	require.NoError(t, err, "98 live keys and 2 revoked ones: the revoked ones are not written")
	assert.Equal(t, shard.Config{Write: 8, Read: 8}, cfg.Config)
	p, err := keys.Principal(ctx, newKey)
	require.NoError(t, err)
	assert.Equal(t, shard.Config{Write: 8, Read: 8}, p.Shards)

	rec, err := db.Client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{schema.AttrKeyHash: &types.AttributeValueMemberS{Value: schema.TenantRecordPrefix + "acme"}},
	})
	require.NoError(t, err)
	hashes := rec.Item[schema.AttrTenantKeyHashes].(*types.AttributeValueMemberSS).Value
	assert.Len(t, hashes, 98)
	assert.NotContains(t, hashes, made[0].Hash, "a revoked key leaves the tenant's record")

	// A tenant whose keys are all revoked has nothing to change.
	_, k, err := keys.Create(ctx, "solo", "")
	require.NoError(t, err)
	_, err = keys.Revoke(ctx, k.Hash)
	require.NoError(t, err)
	_, err = keys.SetShards(ctx, "solo", 2)
	assert.ErrorContains(t, err, `tenant "solo" has no API keys that are not revoked`)
}
