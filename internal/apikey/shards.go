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
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/triggers-dev/triggers/contract"
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

// ShardSwitchMargin is added to the authorizer cache TTL to make the delay
// of a growth of the write count (WithShardSwitchDelay): it covers the
// authorizer's eventually consistent read of a key just changed, clocks
// that disagree (the operator's machine, which sets the time, and the
// authorizer's), and API Gateway keeping an answer a little past its TTL.
const ShardSwitchMargin = time.Minute

// DefaultShardSwitchDelay is the delay of a growth of the write count with
// the construct's default authorizer cache TTL.
const DefaultShardSwitchDelay = contract.DefaultAuthorizerCacheSeconds*time.Second + ShardSwitchMargin

// Sharding is a tenant's sharding as SetShards leaves it.
type Sharding struct {
	// Config holds the read count, in effect at once, and the write
	// count, in effect from From on.
	shard.Config
	// Prev is the write count before From, and From the time a growth of
	// the write count takes effect; From is zero when Config.Write is in
	// effect already.
	Prev int
	From time.Time
}

// At returns the sharding in effect at t (Prev before From).
func (s Sharding) At(t time.Time) shard.Config {
	return Key{Shards: s.Config, ShardsPrev: s.Prev, ShardsFrom: s.From}.ShardsAt(t)
}

// tenantRecord is a tenant's record as read (exists false: none yet).
// prev and from are a pending growth's (Key.ShardsPrev, Key.ShardsFrom).
type tenantRecord struct {
	exists  bool
	version int64
	cfg     shard.Config
	prev    int
	from    time.Time
	keys    []string
}

// pending reports whether r has a growth of its write count that is not
// in effect at now.
func (r tenantRecord) pending(now time.Time) bool { return !r.from.IsZero() && now.Before(r.from) }

// readTenant reads tenant's record with a strongly consistent read, and
// adds the keys the tenant index lists (those of a table written before
// the record existed, or by an older triggers-keys) with their read
// counts, and their write counts while there is no record. Keys the index
// shows revoked are left out of r.keys (revocation is final: a revoked
// key never authenticates again, so its counts do not matter), so the
// record, and a SetShards transaction, hold only keys that may still
// authenticate; a key revoked so recently that the index still shows it
// active stays in, which is harmless.
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
		r.prev, r.from = k.ShardsPrev, k.ShardsFrom
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
	revoked := map[string]bool{}
	for _, k := range listed {
		// The record's write count is the tenant's once it exists (the
		// index may still show a key's count from before the last change:
		// a shrink's old, higher count); a read count only grows, so the
		// highest seen is kept.
		if !r.exists {
			r.cfg.Write = max(r.cfg.Write, k.Shards.Write)
		}
		r.cfg.Read = max(r.cfg.Read, k.Shards.Read)
		if k.Status == StatusRevoked {
			revoked[k.Hash] = true
			continue
		}
		if !slices.Contains(r.keys, k.Hash) {
			r.keys = append(r.keys, k.Hash)
		}
	}
	r.keys = slices.DeleteFunc(r.keys, func(h string) bool { return revoked[h] })
	sort.Strings(r.keys)
	return r, nil
}

// tenantWrite is the transaction item that writes tenant's record as cfg
// and keys, on condition that it is still r (its version, or its absence).
// With growth (SetShards), it also sets or removes the pending growth;
// without (Create), it leaves it as it is.
func (s *Store) tenantWrite(tenant string, r tenantRecord, cfg shard.Config, growth *Sharding, keys []string) types.TransactWriteItem {
	names := map[string]string{"#v": schema.AttrTenantVersion}
	values := map[string]types.AttributeValue{":v1": &types.AttributeValueMemberN{Value: strconv.FormatInt(r.version+1, 10)}}
	set := []string{"#v = :v1"}
	var remove []string
	if cfg.Write > 0 {
		names["#w"], values[":w"] = schema.AttrShards, &types.AttributeValueMemberN{Value: strconv.Itoa(cfg.Write)}
		set = append(set, "#w = :w")
	}
	if cfg.Read > 0 {
		names["#r"], values[":r"] = schema.AttrReadShards, &types.AttributeValueMemberN{Value: strconv.Itoa(cfg.Read)}
		set = append(set, "#r = :r")
	}
	if growth != nil {
		set, remove = growthUpdate(*growth, names, values, set, remove)
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
		UpdateExpression:          aws.String(updateExpression(set, remove)),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	}}
}

// growthUpdate adds to an update's SET or REMOVE clauses (and its names
// and values) the pending growth of g: set while g.From is not zero,
// removed otherwise.
func growthUpdate(g Sharding, names map[string]string, values map[string]types.AttributeValue, set, remove []string) ([]string, []string) {
	names["#gp"], names["#gf"] = schema.AttrShardsPrev, schema.AttrShardsFrom
	if g.From.IsZero() {
		return set, append(remove, "#gp", "#gf")
	}
	values[":gp"] = &types.AttributeValueMemberN{Value: strconv.Itoa(max(1, g.Prev))}
	values[":gf"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(g.From.UnixMilli(), 10)}
	return append(set, "#gp = :gp", "#gf = :gf"), remove
}

// updateExpression joins SET and REMOVE clauses.
func updateExpression(set, remove []string) string {
	e := "SET " + strings.Join(set, ", ")
	if len(remove) > 0 {
		e += " REMOVE " + strings.Join(remove, ", ")
	}
	return e
}

// nextSharding is the sharding SetShards(write) makes of r at now: the
// read count covers every count the tenant had and the new one at once;
// the write count takes effect at once when it is not above the one in
// effect (a shrink, or no change), and otherwise delay later (a growth):
// the previous write count stays in effect until then, so no answer can
// write to a shard that an answer cached before the change (carrying the
// old read count) does not read. A growth within a pending one's count
// keeps its time (the read count covering it was raised when that one
// was set); any other growth starts its delay again.
func nextSharding(r tenantRecord, write int, now time.Time, delay time.Duration) Sharding {
	cur := Key{Shards: r.cfg, ShardsPrev: r.prev, ShardsFrom: r.from}.ShardsAt(now).Normalize().Write
	next := Sharding{Config: shard.Config{Write: write, Read: max(write, r.cfg.Write, r.cfg.Read, r.prev)}}
	switch {
	case write <= cur || delay <= 0:
	case r.pending(now) && write <= r.cfg.Write:
		next.Prev, next.From = cur, r.from
	default:
		next.Prev, next.From = cur, now.Add(delay).Truncate(time.Millisecond)
	}
	return next
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
//
// A growth of the write count is two-phase: the read count is raised at
// once, the write count takes effect the store's shard switch delay later
// (WithShardSwitchDelay: the authorizer cache TTL plus
// ShardSwitchMargin), and until then Principal gives the previous one.
// The result's From is that time (zero for a change in effect at once).
func (s *Store) SetShards(ctx context.Context, tenant string, write int) (Sharding, error) {
	if !event.ValidTenantID(tenant) {
		return Sharding{}, fmt.Errorf("tenant id %q is invalid: use 1-128 characters of [A-Za-z0-9_.:-], starting with a letter or digit", tenant)
	}
	if write < 1 || write > shard.MaxShards {
		return Sharding{}, fmt.Errorf("shard count %d is invalid: use 1 to %d", write, shard.MaxShards)
	}
	gone := map[string]bool{} // keys listed in the record whose items are gone
	for range maxTenantAttempts {
		r, err := s.readTenant(ctx, tenant)
		if err != nil {
			return Sharding{}, err
		}
		r.keys = slices.DeleteFunc(r.keys, func(h string) bool { return gone[h] })
		if len(r.keys) == 0 {
			return Sharding{}, fmt.Errorf("tenant %q has no API keys that are not revoked", tenant)
		}
		if len(r.keys) > maxKeysPerChange {
			return Sharding{}, fmt.Errorf("tenant %q has %d API keys that are not revoked: a change of its sharding writes at most %d in one transaction; revoke unused keys first", tenant, len(r.keys), maxKeysPerChange)
		}
		next := nextSharding(r, write, s.now(), s.switchDelay)
		cfg := next.Config
		items := []types.TransactWriteItem{s.tenantWrite(tenant, r, cfg, &next, r.keys)}
		for _, h := range r.keys {
			names := map[string]string{"#h": schema.AttrKeyHash, "#w": schema.AttrShards, "#r": schema.AttrReadShards}
			values := map[string]types.AttributeValue{
				":w": &types.AttributeValueMemberN{Value: strconv.Itoa(cfg.Write)}, ":r": &types.AttributeValueMemberN{Value: strconv.Itoa(cfg.Read)},
			}
			set, remove := growthUpdate(next, names, values, []string{"#w = :w", "#r = :r"}, nil)
			items = append(items, types.TransactWriteItem{Update: &types.Update{
				TableName:                 aws.String(s.table),
				Key:                       map[string]types.AttributeValue{schema.AttrKeyHash: &types.AttributeValueMemberS{Value: h}},
				UpdateExpression:          aws.String(updateExpression(set, remove)),
				ConditionExpression:       aws.String("attribute_exists(#h)"),
				ExpressionAttributeNames:  names,
				ExpressionAttributeValues: values,
			}})
		}
		_, err = s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		missing := missingKeys(err, r.keys)
		for _, h := range missing {
			gone[h] = true
		}
		if len(missing) > 0 || tenantRaced(err) {
			continue
		}
		if err != nil {
			return Sharding{}, fmt.Errorf("set the shards of tenant %s (nothing changed): %w", tenant, err)
		}
		return next, nil
	}
	return Sharding{}, ErrShardsChanged
}

// missingKeys returns the keys of a SetShards transaction (keys, its
// items after the tenant's record) whose condition attribute_exists
// failed: their items are gone (deleted by hand, as the key limit's
// message once invited), though the tenant's record still lists them. SetShards drops
// them from the record and tries again; before, every later change of the
// tenant failed the same way (found by review).
func missingKeys(err error, keys []string) []string {
	var tc *types.TransactionCanceledException
	if !errors.As(err, &tc) {
		return nil
	}
	var out []string
	for i, r := range tc.CancellationReasons {
		if i > 0 && i <= len(keys) && aws.ToString(r.Code) == "ConditionalCheckFailed" {
			out = append(out, keys[i-1])
		}
	}
	return out
}

// maxKeysPerChange is how many keys one SetShards changes: a transaction
// holds 100 items, one of them the tenant's record. It is also the most
// keys a tenant may have that are not revoked (Create refuses more).
const maxKeysPerChange = 99

// MaxKeysPerTenant is the most API keys a tenant may have that are not
// revoked: Create refuses another (revoke one first), so that a change of
// the tenant's sharding always fits one transaction.
const MaxKeysPerTenant = maxKeysPerChange
