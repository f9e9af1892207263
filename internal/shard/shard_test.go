package shard_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/shard"
)

func TestPartitionNeverCollides(t *testing.T) {
	assert.Equal(t, "acme", shard.Partition("acme", 0), "shard 0 is the tenant's own partition")
	for _, tenant := range []string{"acme", "a", "user:1.2_3-x", "9"} {
		for k := 0; k < shard.MaxShards; k++ {
			pk := shard.Partition(tenant, k)
			got, gk := shard.TenantOf(pk)
			assert.Equal(t, tenant, got, pk)
			assert.Equal(t, k, gk, pk)
			assert.True(t, contract.IsEventPartition(pk), "%s must stay an events partition", pk)
			if k > 0 {
				assert.False(t, event.ValidTenantID(pk), "%s must not be a tenant id", pk)
			}
		}
	}
	// Keys that are not shard keys are their own tenant, shard 0.
	for _, pk := range []string{"acme", "acme~0", "acme~01", "acme~32", "acme~x", "acme~-1", "~"} {
		got, k := shard.TenantOf(pk)
		assert.Equal(t, pk, got, pk)
		assert.Zero(t, k, pk)
	}
}

// For spreads new events evenly over any number of shards, not only
// over powers of two: 24,000 events over 24 shards put 1,000 +- 15% in
// each (taking the 5 low bits modulo 24 would put twice as many in
// shards 0-7).
func TestForSpreadsEvenly(t *testing.T) {
	now := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	for _, n := range []int{24, 5, 32} {
		count := make([]int, n)
		for i := 0; i < 1000*n; i++ {
			id, _, err := event.NewID(now, nil)
			require.NoError(t, err)
			count[shard.For(id, n)]++
		}
		for k, c := range count {
			assert.InDelta(t, 1000, c, 150, "shard %d of %d", k, n)
		}
	}
	assert.Equal(t, shard.For("short", 8), shard.Of("short")%8, "no panic on a string too short to be an id")
	assert.Zero(t, shard.For("0123456789abcdef", 1))
}

func TestAssignWritesTheShardIntoAValidID(t *testing.T) {
	now := time.Date(2026, 11, 26, 10, 0, 0, 123456000, time.UTC)
	for _, n := range []int{2, 3, 8, 32} {
		seen := map[int]bool{}
		for i := 0; i < 400; i++ {
			id, ts, err := event.NewID(now, nil)
			require.NoError(t, err)
			got, k := shard.Assign(id, n)
			require.Less(t, k, n)
			require.GreaterOrEqual(t, k, 0)
			assert.Equal(t, k, shard.Of(got))
			assert.Equal(t, k, shard.For(got, n), "assigning again keeps the shard")
			gts, err := event.ParseID(got)
			require.NoError(t, err, got)
			assert.Equal(t, ts, gts, "the timestamp is unchanged")
			assert.Equal(t, id[:34], got[:34], "only the last byte changes")
			seen[k] = true
		}
		assert.Len(t, seen, n, "400 events reach every one of %d shards", n)
	}
	id, _, err := event.NewID(now, nil)
	require.NoError(t, err)
	same, k := shard.Assign(id, 1)
	assert.Equal(t, id, same, "one shard leaves the id alone")
	assert.Zero(t, k)
}

func TestCandidates(t *testing.T) {
	now := time.Now()
	var id3, id0 string
	for id3 == "" || id0 == "" {
		id, _, err := event.NewID(now, nil)
		require.NoError(t, err)
		switch shard.Of(id) {
		case 3:
			id3 = id
		case 0:
			id0 = id
		}
	}
	assert.Equal(t, []int{3, 0}, shard.Candidates(id3, 4), "the named shard, then the pre-sharding partition")
	assert.Equal(t, []int{0, 3}, shard.Candidates(id3, 1), "an unsharded tenant's own partition first; shard 3 for a stale count")
	assert.Equal(t, []int{0, 3}, shard.Candidates(id3, 2), "a shard the tenant does not read: last, for a stale count")
	assert.Equal(t, []int{3, 0}, shard.Candidates(id3, 0), "unknown configuration")
	assert.Equal(t, []int{0}, shard.Candidates(id0, 8))
}

func TestConfig(t *testing.T) {
	assert.Equal(t, shard.Config{Write: 1, Read: 1}, shard.Config{}.Normalize())
	assert.Equal(t, shard.Config{Write: 4, Read: 8}, shard.Config{Write: 4, Read: 8}.Normalize())
	assert.Equal(t, shard.Config{Write: 8, Read: 8}, shard.Config{Write: 8, Read: 2}.Normalize(), "the inbox reads every write shard")
	assert.Equal(t, shard.Config{Write: 32, Read: 32}, shard.Config{Write: 99}.Normalize())
	assert.False(t, shard.Config{Write: 1, Read: 1}.Sharded())
	assert.True(t, shard.Config{Write: 1, Read: 2}.Sharded())
	_, ok := shard.FromContext(context.Background())
	assert.False(t, ok)
	c, ok := shard.FromContext(shard.WithConfig(context.Background(), shard.Config{Write: 3}))
	assert.True(t, ok)
	assert.Equal(t, shard.Config{Write: 3, Read: 3}, c)
	for _, v := range []string{"1", "8", " 32 "} {
		_, err := shard.ParseCount(v)
		assert.NoError(t, err, v)
	}
	for _, v := range []string{"", "0", "33", "-1", "two", "1.5"} {
		_, err := shard.ParseCount(v)
		assert.ErrorContains(t, err, "1 to 32", v)
	}
}

// The edges of the id arithmetic, on hand-made ids: the hex digits Of and
// For accept, the shortest strings they read, For's cap at MaxShards and
// its fallback, Assign's limits, and Candidates at a shard equal to the
// read count.
func TestIDEdges(t *testing.T) {
	for id, want := range map[string]int{
		"": 0, "f": 0, "1f": 31, "09": 9, "0a": 10, "0f": 15, "00": 0,
		"0/": 0, "0:": 0, "0`": 0, "0g": 0, "/f": 0, ":f": 0, "`f": 0, "gf": 0, "Af": 0,
	} {
		assert.Equal(t, want, shard.Of(id), "Of(%q)", id)
	}
	// 0x20 >> 5 is 1: For reads the bits above the five Assign writes.
	assert.Equal(t, 1, shard.For("000000020", 4))
	assert.Equal(t, 0, shard.For("000000020", 1))
	assert.Equal(t, 1, shard.For("000000020", 2))
	assert.Equal(t, 8, shard.For("000000500", 64), "at most MaxShards: 0x500 >> 5 is 40, mod 32 is 8")
	assert.Equal(t, 1, shard.For("00000025", 4), "shorter than 9 digits: Of (5) mod n")
	assert.Equal(t, 1, shard.For("Z00000005", 4), "not hex: Of (5) mod n")

	id, k := shard.Assign("1f", 2)
	assert.Equal(t, "01", id, "the low 5 bits of 0x1f replaced by For (31 mod 2)")
	assert.Equal(t, 1, k)
	same, k := shard.Assign("f", 4)
	assert.Equal(t, "f", same)
	assert.Zero(t, k)

	assert.Equal(t, []int{0, 4}, shard.Candidates("04", 4), "shard 4 of a tenant reading 4 (0-3): last, for a stale count")
	assert.Equal(t, []int{3, 0}, shard.Candidates("03", 4))
	assert.Equal(t, []int{4, 0}, shard.Candidates("04", 5))
}
