package apikey_test

import (
	"context"
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
