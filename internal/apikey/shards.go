// Sharding of a tenant's events, kept on every key record of the tenant.

package apikey

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/shard"
	"github.com/triggers-dev/triggers/schema"
)

// ErrShardsChanged is returned by SetShards when another change of the
// tenant's sharding ran at the same time; run it again.
var ErrShardsChanged = errors.New("the tenant's sharding changed meanwhile: run the command again")

// SetShards sets the number of shards tenant's new events are written to
// (1..shard.MaxShards) on every key of the tenant, and returns the
// resulting configuration. The read count becomes the largest of the new
// count and every count the tenant had, so the inbox keeps reading the
// shards that hold older events (see docs/sharding.md); it only grows.
// Each key's update is conditional on the values read, so two concurrent
// changes cannot lower the read count; the loser gets ErrShardsChanged.
// Handlers see the change when the authorizer's cache entry of a key
// expires (its TTL).
func (s *Store) SetShards(ctx context.Context, tenant string, write int) (shard.Config, error) {
	if !event.ValidTenantID(tenant) {
		return shard.Config{}, fmt.Errorf("tenant id %q is invalid", tenant)
	}
	if write < 1 || write > shard.MaxShards {
		return shard.Config{}, fmt.Errorf("shard count %d is invalid: use 1 to %d", write, shard.MaxShards)
	}
	keys, err := s.List(ctx, tenant)
	if err != nil {
		return shard.Config{}, err
	}
	if len(keys) == 0 {
		return shard.Config{}, fmt.Errorf("tenant %q has no API keys", tenant)
	}
	cfg := shard.Config{Write: write, Read: write}
	for _, k := range keys {
		cfg.Read = max(cfg.Read, k.Shards.Write, k.Shards.Read)
	}
	num := func(v int) types.AttributeValue { return &types.AttributeValueMemberN{Value: strconv.Itoa(v)} }
	for _, k := range keys {
		names := map[string]string{"#w": schema.AttrShards, "#r": schema.AttrReadShards}
		values := map[string]types.AttributeValue{":w": num(cfg.Write), ":r": num(cfg.Read)}
		cond := "attribute_not_exists(#r)"
		if k.Shards.Read > 0 {
			cond = "#r = :old"
			values[":old"] = num(k.Shards.Read)
		}
		_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(s.table),
			Key:                       map[string]types.AttributeValue{schema.AttrKeyHash: &types.AttributeValueMemberS{Value: k.Hash}},
			UpdateExpression:          aws.String("SET #w = :w, #r = :r"),
			ConditionExpression:       aws.String(cond),
			ExpressionAttributeNames:  names,
			ExpressionAttributeValues: values,
		})
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			return shard.Config{}, ErrShardsChanged
		}
		if err != nil {
			return shard.Config{}, fmt.Errorf("set the shards of key %s: %w", k.Prefix, err)
		}
	}
	return cfg, nil
}

// tenantShards returns the sharding the keys of tenant carry (zero when
// it has none), for a new key of the tenant to copy.
func (s *Store) tenantShards(ctx context.Context, tenant string) (shard.Config, error) {
	keys, err := s.List(ctx, tenant)
	if err != nil {
		return shard.Config{}, err
	}
	var cfg shard.Config
	for _, k := range keys {
		cfg.Write = max(cfg.Write, k.Shards.Write)
		cfg.Read = max(cfg.Read, k.Shards.Read)
	}
	return cfg, nil
}
