// Package shard spreads one tenant's events over several partition keys
// (write sharding), so a tenant is not capped by DynamoDB's per-partition
// throughput (1,000 WCU/s).
//
// Shard 0 of a tenant is the tenant id itself, so an unsharded tenant's
// items are exactly what they were before sharding existed. Shard k > 0
// is "<tenant>~<k>": tenant ids never contain '~' (event.ValidTenantID),
// so no shard key is another tenant's, and shard keys never contain '#',
// so they never look like the table's other records (idempotency,
// subscriptions, attempts: contract.IsEventPartition stays true for every
// shard and false for those).
//
// The shard of an event is written into its id: the low bits of the id's
// last byte (part of UUIDv7's random rand_b) are the shard number. Reading,
// updating or acknowledging an event by id therefore needs no shard count:
// the id names its partition (Of), and only events written while the
// tenant was unsharded, whose low bits are random, are found in shard 0
// instead (Candidates).
package shard

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/triggers-dev/triggers/contract"
)

// MaxShards is the largest shard count of a tenant: the shard number
// takes the low 5 bits of an event id. 32 shards take about 32,000 small
// writes per second.
const MaxShards = contract.MaxShards

// Separator joins a tenant id and a shard number in a partition key. It is
// not a character of tenant ids, nor contract.KeySeparator.
const Separator = contract.ShardSeparator

const tagMask = MaxShards - 1

// Partition returns the partition key value (user_id) of shard k of
// tenant: the tenant itself for k = 0, else "<tenant>~<k>".
func Partition(tenant string, k int) string { return contract.ShardPartition(tenant, k) }

// TenantOf returns the tenant and shard number of an events partition key
// (the inverse of Partition). A key without a shard suffix is shard 0.
func TenantOf(partition string) (tenant string, k int) { return contract.TenantOfPartition(partition) }

// Of returns the shard number written into event id: the low 5 bits of
// its last byte, or 0 for a string too short to be an id. It is only
// meaningful for ids made by Assign; see Candidates.
func Of(id string) int {
	if len(id) < 2 {
		return 0
	}
	lo, ok := unhex(id[len(id)-1])
	hi, ok2 := unhex(id[len(id)-2])
	if !ok || !ok2 {
		return 0
	}
	return int(hi<<4|lo) & tagMask
}

// For picks the shard of a new event with id among n shards: 31 random
// bits of the id, those just above the 5 that Assign overwrites, modulo
// n, so events spread evenly whatever n (the 5 low bits modulo n would
// give some shards twice the events of others unless n divides 32), and
// For of an id Assign made is the shard written in it. With n <= 1 it
// is 0.
func For(id string, n int) int {
	if n <= 1 {
		return 0
	}
	n = min(n, MaxShards)
	if len(id) < forDigits {
		return Of(id) % n
	}
	var v uint64
	for _, c := range []byte(id[len(id)-forDigits:]) {
		d, ok := unhex(c)
		if !ok {
			return Of(id) % n
		}
		v = v<<4 | uint64(d)
	}
	return int((v >> 5) % uint64(n))
}

// forDigits is how many hex digits at the end of an id For reads: 36
// bits, all in the UUID's random part.
const forDigits = 9

// Assign returns id with its shard number set to For(id, n), and that
// shard. With n <= 1 the id is unchanged (shard 0). id must be a
// canonical event id (lowercase hex ending).
func Assign(id string, n int) (string, int) {
	if n <= 1 || len(id) < 2 {
		return id, 0
	}
	k := For(id, n)
	hi, _ := unhex(id[len(id)-2])
	lo, _ := unhex(id[len(id)-1])
	b := (hi<<4 | lo) &^ tagMask
	b |= byte(k)
	const digits = "0123456789abcdef"
	return id[:len(id)-2] + string([]byte{digits[b>>4], digits[b&0xf]}), k
}

// Candidates returns the shards that may hold the event with id, in the
// order to try them, for a tenant that reads read shards (0 when unknown:
// the caller does not have the tenant's configuration). An id whose
// shard number is 0 is in shard 0. Otherwise the event is in shard
// Of(id), or, if it was written while the tenant was unsharded (its low
// bits are random), in shard 0: shard Of(id) first when the tenant reads
// it, shard 0 first when it does not (read 1, or at most Of(id)), which
// is then the likely place. Shard Of(id) stays a candidate even then: a
// request whose counts are stale (an authorizer answer cached before the
// tenant grew) may look up an event that a fresh one wrote to a new
// shard, and must not answer 404 for it (found by review).
func Candidates(id string, read int) []int {
	k := Of(id)
	switch {
	case k == 0:
		return []int{0}
	case read == 1 || read > 1 && k >= read:
		return []int{0, k}
	}
	return []int{k, 0}
}

// unhex returns the value of lowercase hex digit c. (Ifs, not a tagless
// switch: gremlins sees no coverage in a switch's cases.)
func unhex(c byte) (byte, bool) {
	if c >= '0' && c <= '9' {
		return c - '0', true
	}
	if c >= 'a' && c <= 'f' {
		return c - 'a' + 10, true
	}
	return 0, false
}

// Config is a tenant's sharding, from its API-keys record: Write is the
// number of shards new events go to, Read the number of shards the inbox
// reads (at least Write: the largest count the tenant ever wrote with,
// while its events may still exist). The zero Config is unsharded.
type Config struct {
	Write int
	Read  int
}

// Sharded reports whether c reads or writes more than one shard.
func (c Config) Sharded() bool { return c.Write > 1 || c.Read > 1 }

// Normalize returns c with counts in 1..MaxShards and Read >= Write.
func (c Config) Normalize() Config {
	c.Write = max(1, min(c.Write, MaxShards))
	c.Read = max(c.Write, min(c.Read, MaxShards))
	return c
}

// ParseCount reads a shard count (1..MaxShards).
func ParseCount(v string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 || n > MaxShards {
		return 0, fmt.Errorf("shard count %q is invalid: use a whole number from 1 to %d", v, MaxShards)
	}
	return n, nil
}

type ctxKey struct{}

// WithConfig returns ctx carrying the authenticated tenant's sharding.
func WithConfig(ctx context.Context, c Config) context.Context {
	return context.WithValue(ctx, ctxKey{}, c.Normalize())
}

// FromContext returns the sharding ctx carries and whether it carries
// one. Without one, callers write to shard 0 and look events up with
// Candidates(id, 0).
func FromContext(ctx context.Context) (Config, bool) {
	c, ok := ctx.Value(ctxKey{}).(Config)
	return c, ok
}
