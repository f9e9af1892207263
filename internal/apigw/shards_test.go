package apigw_test

import (
	"context"
	"testing"

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
	keys := apikey.NewStore(db.Client, table)
	sharded, _, err := keys.Create(ctx, "big", "")
	require.NoError(t, err)
	plain, _, err := keys.Create(ctx, "small", "")
	require.NoError(t, err)
	_, err = keys.SetShards(ctx, "big", 8)
	require.NoError(t, err)
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
