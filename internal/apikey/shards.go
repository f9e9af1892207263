// Sharding of a tenant's events, kept on every key record of the tenant
// and on the tenant's record, which serializes changes of its keys.

package apikey

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/shard"
	"github.com/triggers-dev/triggers/schema"
)

// ErrShardsChanged is returned by SetShards and Create when another change
// of the tenant's keys or sharding kept running at the same time; run it
// again.
var ErrShardsChanged = errors.New("the tenant's sharding or keys changed meanwhile: run the command again")

// A tenant's record (schema.TenantRecordPrefix) serializes the changes of
// its keys: every Create and SetShards of the tenant moves its version on
// in the same transaction as the keys it writes, so a key created while
// the sharding changes is either changed with the others or created with
// the new counts. (The tenant index cannot serve: a global secondary index
// is eventually consistent, and a key just created may be missing from
// it.)

// maxTenantAttempts bounds the attempts of a Create or SetShards that
// meets concurrent changes of the same tenant.
const maxTenantAttempts = 5

// tenantRecord is a tenant's record as read (exists false: none yet).
type tenantRecord struct {
	exists  bool
	version int64
	cfg     shard.Config
	keys    []string
}

// readTenant reads tenant's record with a strongly consistent read, and
// adds the keys the tenant index lists (those of a table written before
// the record existed, or by an older triggers-keys) with their read
// counts, and their write counts while there is no record.
func (s *Store) readTenant(ctx context.Context, tenant string) (tenantRecord, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            map[string]types.AttributeValue{schema.AttrKeyHash: &types.AttributeValueMemberS{Value: schema.TenantRecordPrefix + tenant}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return tenantRecord{}, fmt.Errorf("read the record of tenant %s: %w", tenant, err)
	}
	var r tenantRecord
	if out.Item != nil {
		r.exists = true
		k := keyFromItem(out.Item)
		r.cfg = shard.Config{Write: k.Shards.Write, Read: k.Shards.Read}
		if v, ok := out.Item[schema.AttrTenantVersion].(*types.AttributeValueMemberN); ok {
			r.version, _ = strconv.ParseInt(v.Value, 10, 64)
		}
		if v, ok := out.Item[schema.AttrTenantKeyHashes].(*types.AttributeValueMemberSS); ok {
			r.keys = append(r.keys, v.Value...)
		}
	}
	listed, err := s.List(ctx, tenant)
	if err != nil {
		return tenantRecord{}, err
	}
	for _, k := range listed {
		// The record's write count is the tenant's once it exists (the
		// index may still show a key's count from before the last change:
		// a shrink's old, higher count); a read count only grows, so the
		// highest seen is kept.
		if !r.exists {
			r.cfg.Write = max(r.cfg.Write, k.Shards.Write)
		}
		r.cfg.Read = max(r.cfg.Read, k.Shards.Read)
		if !slices.Contains(r.keys, k.Hash) {
			r.keys = append(r.keys, k.Hash)
		}
	}
	sort.Strings(r.keys)
	return r, nil
}

// tenantWrite is the transaction item that writes tenant's record as cfg
// and keys, on condition that it is still r (its version, or its absence).
func (s *Store) tenantWrite(tenant string, r tenantRecord, cfg shard.Config, keys []string) types.TransactWriteItem {
	names := map[string]string{"#v": schema.AttrTenantVersion}
	values := map[string]types.AttributeValue{":v1": &types.AttributeValueMemberN{Value: strconv.FormatInt(r.version+1, 10)}}
	set := []string{"#v = :v1"}
	if cfg.Write > 0 {
		names["#w"], values[":w"] = schema.AttrShards, &types.AttributeValueMemberN{Value: strconv.Itoa(cfg.Write)}
		set = append(set, "#w = :w")
	}
	if cfg.Read > 0 {
		names["#r"], values[":r"] = schema.AttrReadShards, &types.AttributeValueMemberN{Value: strconv.Itoa(cfg.Read)}
		set = append(set, "#r = :r")
	}
	if len(keys) > 0 {
		names["#k"], values[":k"] = schema.AttrTenantKeyHashes, &types.AttributeValueMemberSS{Value: keys}
		set = append(set, "#k = :k")
	}
	cond := "attribute_not_exists(#h)"
	names["#h"] = schema.AttrKeyHash
	if r.exists {
		delete(names, "#h")
		cond = "#v = :v"
		values[":v"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(r.version, 10)}
	}
	return types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String(s.table),
		Key:                       map[string]types.AttributeValue{schema.AttrKeyHash: &types.AttributeValueMemberS{Value: schema.TenantRecordPrefix + tenant}},
		UpdateExpression:          aws.String("SET " + strings.Join(set, ", ")),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	}}
}

// tenantRaced reports whether err is a transaction cancelled because the
// tenant's record (its first item) changed meanwhile, or by a concurrent
// transaction: worth another attempt.
func tenantRaced(err error) bool {
	var tc *types.TransactionCanceledException
	if !errors.As(err, &tc) {
		return false
	}
	for i, r := range tc.CancellationReasons {
		code := aws.ToString(r.Code)
		if code == "TransactionConflict" || i == 0 && code == "ConditionalCheckFailed" {
			return true
		}
	}
	return false
}

// SetShards sets the number of shards tenant's new events are written to
// (1..shard.MaxShards) on every key of the tenant, and returns the
// resulting configuration. The read count becomes the largest of the new
// count and every count the tenant had, so the inbox keeps reading the
// shards that hold older events (see docs/sharding.md); it only grows.
// The tenant's record and every key change in one transaction,
// conditional on the record's version: a concurrent SetShards or Create
// makes it start again (ErrShardsChanged after maxTenantAttempts), and a
// failure changes nothing. Handlers see the change when the authorizer's
// cache entry of a key expires (its TTL).
func (s *Store) SetShards(ctx context.Context, tenant string, write int) (shard.Config, error) {
	if !event.ValidTenantID(tenant) {
		return shard.Config{}, fmt.Errorf("tenant id %q is invalid: use 1-128 characters of [A-Za-z0-9_.:-], starting with a letter or digit", tenant)
	}
	if write < 1 || write > shard.MaxShards {
		return shard.Config{}, fmt.Errorf("shard count %d is invalid: use 1 to %d", write, shard.MaxShards)
	}
	for range maxTenantAttempts {
		r, err := s.readTenant(ctx, tenant)
		if err != nil {
			return shard.Config{}, err
		}
		if len(r.keys) == 0 {
			return shard.Config{}, fmt.Errorf("tenant %q has no API keys", tenant)
		}
		if len(r.keys) > maxKeysPerChange {
			return shard.Config{}, fmt.Errorf("tenant %q has %d API keys: a change of its sharding writes at most %d in one transaction; revoke and remove unused keys first", tenant, len(r.keys), maxKeysPerChange)
		}
		cfg := shard.Config{Write: write, Read: max(write, r.cfg.Write, r.cfg.Read)}
		items := []types.TransactWriteItem{s.tenantWrite(tenant, r, cfg, r.keys)}
		for _, h := range r.keys {
			items = append(items, types.TransactWriteItem{Update: &types.Update{
				TableName:                aws.String(s.table),
				Key:                      map[string]types.AttributeValue{schema.AttrKeyHash: &types.AttributeValueMemberS{Value: h}},
				UpdateExpression:         aws.String("SET #w = :w, #r = :r"),
				ConditionExpression:      aws.String("attribute_exists(#h)"),
				ExpressionAttributeNames: map[string]string{"#h": schema.AttrKeyHash, "#w": schema.AttrShards, "#r": schema.AttrReadShards},
				ExpressionAttributeValues: map[string]types.AttributeValue{
					":w": &types.AttributeValueMemberN{Value: strconv.Itoa(cfg.Write)}, ":r": &types.AttributeValueMemberN{Value: strconv.Itoa(cfg.Read)},
				},
			}})
		}
		_, err = s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		if tenantRaced(err) {
			continue
		}
		if err != nil {
			return shard.Config{}, fmt.Errorf("set the shards of tenant %s (nothing changed): %w", tenant, err)
		}
		return cfg, nil
	}
	return shard.Config{}, ErrShardsChanged
}

// maxKeysPerChange is how many keys one SetShards changes: a transaction
// holds 100 items, one of them the tenant's record.
const maxKeysPerChange = 99
