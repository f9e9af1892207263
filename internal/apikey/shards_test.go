package apikey_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/apikey"
	"github.com/triggers-dev/triggers/internal/shard"
	"github.com/triggers-dev/triggers/schema"
)

// A tenant's sharding is on every key of the tenant, the read count only
// grows, a later key copies it, and Principal returns it.
func TestSetShardsOnEveryKeyOfTheTenant(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.APIKeys())
	keys := apikey.NewStore(db.Client, table)
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
		assert.Equal(t, shard.Config{Write: s.write, Read: s.read}, cfg)
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
	assert.Equal(t, shard.Config{Write: 4, Read: 20}, cfg)
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
		assert.Equal(t, shard.Config{Write: 8, Read: 8}, cfg)
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
		assert.Equal(t, shard.Config{Write: 2, Read: 4}, cfg, "the later change, the read count kept")
		assert.Equal(t, map[string]shard.Config{apikey.Hash(k1): cfg, apikey.Hash(k2): cfg}, shardsOf(t, plain, "acme"))
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
		assert.Equal(t, shard.Config{Write: 8, Read: 8}, cfg)
		assert.Equal(t, map[string]shard.Config{apikey.Hash(k1): cfg, apikey.Hash(k2): cfg}, shardsOf(t, plain, "acme"))
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
	assert.Equal(t, shard.Config{Write: 3, Read: 6}, cfg)
	// Even with the index behind, both keys change: the record lists them.
	cfg, err = apikey.NewStore(&raceDB{DB: db.Client, lag: true}, table).SetShards(ctx, "acme", 4)
	require.NoError(t, err)
	assert.Equal(t, map[string]shard.Config{apikey.Hash("trg_legacy"): cfg, apikey.Hash(k2): cfg}, shardsOf(t, keys, "acme"))
	// The record is no key: listing every key, revoking it.
	all, err := keys.List(ctx, "")
	require.NoError(t, err)
	assert.Len(t, all, 2)
	_, err = keys.Revoke(ctx, "tenant#acme")
	assert.ErrorIs(t, err, apikey.ErrNoSuchKey)
}
