package apigw_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/apigw"
	"github.com/triggers-dev/triggers/internal/apikey"
	"github.com/triggers-dev/triggers/internal/shard"
	"github.com/triggers-dev/triggers/schema"
)

// The authorizer hands a sharded tenant's counts to the API function, as
// strings (what API Gateway passes on), and nothing for an unsharded one;
// the proxy puts them in the request's context, reading absent or bad
// values as one shard.
func TestShardCountsTravelFromTheKeyToTheRequest(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.APIKeys())
	now := time.Now()
	keys := apikey.NewStore(db.Client, table, apikey.WithClock(func() time.Time { return now }))
	sharded, _, err := keys.Create(ctx, "big", "")
	require.NoError(t, err)
	plain, _, err := keys.Create(ctx, "small", "")
	require.NoError(t, err)
	_, err = keys.SetShards(ctx, "big", 8)
	require.NoError(t, err)
	now = now.Add(apikey.DefaultShardSwitchDelay) // the growth in effect
	_, err = keys.SetShards(ctx, "big", 2)
	require.NoError(t, err)
	auth := apigw.Authorizer(keys, contract.KeySourcesBearer, quiet)
	req := func(key string) events.APIGatewayCustomAuthorizerRequestTypeRequest {
		return events.APIGatewayCustomAuthorizerRequestTypeRequest{Type: "REQUEST", MethodArn: "arn:aws:execute-api:us-east-1:1:api/live/GET/v1/inbox", Headers: map[string]string{"Authorization": "Bearer " + key}}
	}
	res, err := auth(ctx, req(sharded))
	require.NoError(t, err)
	assert.Equal(t, map[string]any{contract.AuthorizerTenantKey: "big", contract.AuthorizerShardsKey: "2", contract.AuthorizerReadShardsKey: "8"}, res.Context)
	res, err = auth(ctx, req(plain))
	require.NoError(t, err)
	assert.Equal(t, map[string]any{contract.AuthorizerTenantKey: "small"}, res.Context, "an unsharded tenant's answer is unchanged")

	for _, c := range []struct {
		name string
		auth map[string]any
		want shard.Config
	}{
		{"strings", map[string]any{contract.AuthorizerShardsKey: "2", contract.AuthorizerReadShardsKey: "8"}, shard.Config{Write: 2, Read: 8}},
		{"numbers", map[string]any{contract.AuthorizerShardsKey: 4.0, contract.AuthorizerReadShardsKey: 4.0}, shard.Config{Write: 4, Read: 4}},
		{"absent (cached before sharding)", map[string]any{}, shard.Config{Write: 1, Read: 1}},
		{"invalid", map[string]any{contract.AuthorizerShardsKey: "99", contract.AuthorizerReadShardsKey: "x"}, shard.Config{Write: 1, Read: 1}},
	} {
		ev := proxyEvent("GET", "/v1/inbox", "big", "")
		for k, v := range c.auth {
			ev.RequestContext.Authorizer[k] = v
		}
		r, err := apigw.Request(ctx, ev)
		require.NoError(t, err)
		got, ok := shard.FromContext(r.Context())
		assert.True(t, ok, c.name)
		assert.Equal(t, c.want, got, c.name)
	}
}

// A growth of a tenant's write count reaches the authorizer's answers in
// two phases: right after triggers-keys shards, the answer carries the
// new read count and the previous write count (an answer cached now, for
// up to the TTL, writes only to shards every other cached answer reads),
// and the new write count only from the switch time (the change plus the
// cache TTL and a margin), when every answer cached before the change,
// with the old read count, has expired.
func TestAuthorizerGivesTheNewWriteCountOnlyFromTheSwitchTime(t *testing.T) {
	ctx := context.Background()
	table := db.CreateTable(t, schema.APIKeys())
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	now := t0
	keys := apikey.NewStore(db.Client, table, apikey.WithClock(func() time.Time { return now }))
	k1, _, err := keys.Create(ctx, "acme", "")
	require.NoError(t, err)
	k2, _, err := keys.Create(ctx, "acme", "")
	require.NoError(t, err)
	_, err = apikey.NewStore(db.Client, table, apikey.WithShardSwitchDelay(0)).SetShards(ctx, "acme", 4)
	require.NoError(t, err)
	auth := apigw.Authorizer(keys, contract.KeySourcesBearer, quiet)
	counts := func(key string) map[string]any {
		t.Helper()
		res, err := auth(ctx, events.APIGatewayCustomAuthorizerRequestTypeRequest{Type: "REQUEST", MethodArn: "arn:aws:execute-api:us-east-1:1:api/live/POST/v1/events", Headers: map[string]string{"Authorization": "Bearer " + key}})
		require.NoError(t, err)
		return res.Context
	}
	four := map[string]any{contract.AuthorizerTenantKey: "acme", contract.AuthorizerShardsKey: "4", contract.AuthorizerReadShardsKey: "4"}
	assert.Equal(t, four, counts(k1), "an answer cached before the change")

	got, err := keys.SetShards(ctx, "acme", 8)
	require.NoError(t, err)
	switchAt := t0.Add(time.Duration(contract.DefaultAuthorizerCacheSeconds)*time.Second + apikey.ShardSwitchMargin)
	assert.Equal(t, switchAt, got.From)
	pending := map[string]any{contract.AuthorizerTenantKey: "acme", contract.AuthorizerShardsKey: "4", contract.AuthorizerReadShardsKey: "8"}
	for _, at := range []time.Duration{0, time.Second, time.Duration(contract.DefaultAuthorizerCacheSeconds) * time.Second, switchAt.Sub(t0) - time.Millisecond} {
		now = t0.Add(at)
		assert.Equal(t, pending, counts(k1), "before the switch, +%v", at)
		assert.Equal(t, pending, counts(k2), "before the switch, +%v", at)
	}
	now = switchAt
	eight := map[string]any{contract.AuthorizerTenantKey: "acme", contract.AuthorizerShardsKey: "8", contract.AuthorizerReadShardsKey: "8"}
	assert.Equal(t, eight, counts(k1), "from the switch")
	assert.Equal(t, eight, counts(k2), "from the switch")
}
