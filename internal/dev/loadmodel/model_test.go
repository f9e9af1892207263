package loadmodel

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/schema"
)

// seed is the seed profile's 1 KB event: 2 WCU in the table and in each
// index (docs/capacity.md).
var seed = []Structure{{TableStructure, 2}, {schema.EventTypeIndex, 2}, {schema.StatusIndex, 2}}

func constant(r float64) func(int) float64 { return func(int) float64 { return r } }

func TestEventWrites(t *testing.T) {
	for _, c := range []struct {
		p       schema.EventsProfile
		payload int
		want    []Structure
	}{
		{schema.ProfileSeed, 512, []Structure{{TableStructure, 1}, {schema.EventTypeIndex, 1}, {schema.StatusIndex, 1}}},
		{schema.ProfileSeed, 1024, seed},
		{schema.ProfileSeed, 10240, []Structure{{TableStructure, 11}, {schema.EventTypeIndex, 11}, {schema.StatusIndex, 11}}},
		{schema.ProfileLean, 1024, []Structure{{TableStructure, 2}, {schema.StatusIndex, 1}}},
		{schema.ProfileLean, 10240, []Structure{{TableStructure, 11}, {schema.StatusIndex, 1}}},
	} {
		got := EventWrites(schema.EventsFor(c.p), probeItem(t, c.payload, c.p))
		assert.Equal(t, c.want, got, "%s %d bytes: the figures of docs/capacity.md", c.p, c.payload)
	}
}

func TestNumberSize(t *testing.T) {
	for s, want := range map[string]int{"0": 1, "7": 2, "10": 2, "1766485043": 6, "1766485000": 5, "-12.50": 3, "0.001": 2, "123": 3, "1e5": 2} {
		assert.Equal(t, want, numberSize(s), s)
	}
}

func TestDefaultKeyAndPick(t *testing.T) {
	assert.Equal(t, "acme", DefaultKey("acme", 0))
	assert.Equal(t, "acme#7", DefaultKey("acme", 7))
	assert.Equal(t, 0, DefaultPick("anything", 1))
	// The shards of real event ids are even: each of 32 within 6% of
	// the mean over 100,000 events (about 3.5 standard deviations).
	const n, events = 32, 100000
	rng := rand.NewChaCha8([32]byte{1})
	counts := make([]int, n)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range events {
		id, _, err := event.NewID(at.Add(time.Duration(i)*time.Millisecond), rng)
		require.NoError(t, err)
		s := DefaultPick(id, n)
		require.True(t, s >= 0 && s < n)
		counts[s]++
	}
	for s, c := range counts {
		assert.InEpsilon(t, events/n, c, 0.06, "shard %d", s)
	}
}

// TestPartitionNeverExceedsLimit traces every partition's consumption in
// every second of runs that throttle hard.
func TestPartitionNeverExceedsLimit(t *testing.T) {
	for _, shards := range []int{1, 3, 8} {
		peak := 0
		r, err := Run(Config{
			Tenant: "t", Rate: constant(3000), Seconds: 90, Shards: shards, Writes: seed, SplitAfter: 10,
			Trace: func(_ int, consumed map[string][]int) {
				for _, ps := range consumed {
					for _, u := range ps {
						peak = max(peak, u)
					}
				}
			},
		})
		require.NoError(t, err)
		assert.Positive(t, r.Throttled, "%d shards: 3000 events/s x 2 WCU must throttle", shards)
		assert.LessOrEqual(t, peak, PartitionWCU, "%d shards", shards)
		assert.Equal(t, peak, r.Structures[0].PeakPartitionWCU)
		assert.Equal(t, r.Offered, r.Accepted+r.Throttled)
	}
}

func TestUnshardedLimitAndNoSplit(t *testing.T) {
	r, err := Run(Config{Tenant: "t", Rate: constant(700), Seconds: 60, Writes: seed, Warmup: 300, SplitAfter: 5})
	require.NoError(t, err)
	for s, sec := range r.Timeline {
		assert.Equal(t, 700, sec.Offered, "second %d", s)
		assert.Equal(t, 200, sec.Throttled, "second %d: 500 events/s x 2 WCU fill the key's partition", s)
	}
	assert.Equal(t, map[string]int64{CauseSingleKey: 200 * 60}, r.Causes)
	for _, s := range r.Structures {
		assert.Zero(t, s.Splits, "%s: a single-key partition written in sort-key order never splits", s.Name)
		assert.Equal(t, 4, s.Partitions, "%s: a new table's partitions", s.Name)
		assert.Equal(t, PartitionWCU, s.PeakPartitionWCU)
	}
	assert.Equal(t, 2*5+1, r.WarmupSeconds, "the warm-up ends 2*SplitAfter seconds after the last split (none)")
	lim, cause := Limit(seed, 1)
	assert.InDelta(t, 500, lim, 1e-9)
	assert.Contains(t, cause, "sort key")
}

// sameQuarter returns two shard keys of tenant that a new table puts in
// the same partition (the same quarter of the hash space).
func sameQuarter(t *testing.T, tenant string) (string, string) {
	t.Helper()
	byQuarter := map[uint64]string{}
	for i := range 100 {
		k := DefaultKey(tenant, i)
		q := keyHash(k) / (^uint64(0)/4 + 1)
		if o, ok := byQuarter[q]; ok {
			return o, k
		}
		byQuarter[q] = k
	}
	t.Fatal("no two keys in one quarter")
	return "", ""
}

func TestSplitForHeatIsolatesKeys(t *testing.T) {
	a, b := sameQuarter(t, "t")
	keys := []string{a, b}
	// 600 events/s x 1 WCU on each of two keys sharing a partition: 1,200
	// WCU/s on a 1,000 WCU/s partition until it splits.
	r, err := Run(Config{
		Tenant: "t", Rate: constant(1200), Seconds: 40, Shards: 2, SplitAfter: 10,
		Key:    func(_ string, s int) string { return keys[s] },
		Pick:   func(id string, n int) int { return DefaultPick(id, n) },
		Writes: []Structure{{TableStructure, 1}},
	})
	require.NoError(t, err)
	assert.Equal(t, 1, r.Structures[0].Splits)
	assert.Equal(t, 5, r.Structures[0].Partitions)
	assert.Equal(t, map[string]int64{CauseSharedPartition: r.Throttled}, r.Causes)
	for s, sec := range r.Timeline {
		if s < 10 {
			assert.Positive(t, sec.Throttled, "second %d: shared partition", s)
		} else {
			assert.Zero(t, sec.Throttled, "second %d: after the split each key has a partition", s)
		}
	}
}

func TestSplitForHeatPoint(t *testing.T) {
	hashes := []uint64{100, 200, 300, 400}
	p := &partition{lo: 0, hi: 1000, keyOffered: map[int]int{0: 900, 1: 100, 2: 500, 3: 300}}
	l, r, ok := splitForHeat(p, hashes)
	require.True(t, ok)
	// Traffic in hash order 900 | 100 500 300: the first key alone is the
	// closest to half.
	assert.Equal(t, uint64(0), l.lo)
	assert.Equal(t, uint64(150), l.hi)
	assert.Equal(t, uint64(151), r.lo)
	assert.Equal(t, uint64(1000), r.hi)
	_, _, ok = splitForHeat(&partition{lo: 0, hi: 1000, keyOffered: map[int]int{2: 5000}}, hashes)
	assert.False(t, ok, "one key: no split")
}

// TestBurstDrains: a provisioned structure idle for 300 seconds banks
// 300 seconds of its capacity and spends it on the excess over its
// capacity, then throttles down to its capacity.
func TestBurstDrains(t *testing.T) {
	rate := func(s int) float64 {
		if s < 300 {
			return 0
		}
		return 1500
	}
	r, err := Run(Config{
		Tenant: "t", Rate: rate, Seconds: 1000, Shards: 64, Writes: []Structure{{TableStructure, 1}}, ProvisionedWCU: 1000,
		InitialPartitions: 8,
	})
	require.NoError(t, err)
	for s, sec := range r.Timeline {
		switch {
		case s < 900:
			require.Zero(t, sec.Throttled, "second %d: capacity or burst left", s)
		default:
			require.Equal(t, 500, sec.Throttled, "second %d: burst spent (300 x 1000 WCU at 500 WCU/s over capacity lasts 600 s)", s)
		}
	}
	assert.Zero(t, r.Structures[0].Burst)
	assert.Equal(t, map[string]int64{CauseProvisioned: 100 * 500}, r.Causes)
}

// TestTenThousandSharded is the scale goal: 10,000 events/s of 1 KB
// events for one tenant, 32 shards, no throttle in steady state; 500
// events/s unsharded.
func TestTenThousandSharded(t *testing.T) {
	r, err := Run(Config{Tenant: "t", Rate: constant(10000), Seconds: 30, Shards: 32, Writes: seed, Warmup: 1800})
	require.NoError(t, err)
	assert.Zero(t, r.Throttled)
	assert.EqualValues(t, 300000, r.Accepted)
	for _, s := range r.Structures {
		assert.GreaterOrEqual(t, s.Partitions, 32, "%s: each key isolated", s.Name)
	}
	u, err := Run(Config{Tenant: "t", Rate: constant(10000), Seconds: 10, Writes: seed})
	require.NoError(t, err)
	assert.EqualValues(t, 5000, u.Accepted)
}

func TestScale(t *testing.T) {
	rep, err := Scale(ScaleConfig{Rate: 2000, Seconds: 20, Writes: seed, Shards: []int{2, 8}, SplitAfter: 5, RampStep: 25})
	require.NoError(t, err)
	assert.Equal(t, 4, rep.MinShardsBound, "2000 x 2 / 1000")
	require.GreaterOrEqual(t, rep.MinShards, rep.MinShardsBound)
	assert.InDelta(t, 500, rep.RampMax, 1e-9)
	assert.Equal(t, []int{4000, 4000, 4000}, rep.StructureWCU)
	names := map[string]Scenario{}
	for _, s := range rep.Scenarios {
		names[s.Name] = s
		assert.Equal(t, s.Result.Offered, s.Result.Accepted+s.Result.Throttled, s.Name)
	}
	assert.EqualValues(t, 500*20, names["unsharded"].Result.Accepted)
	assert.EqualValues(t, 1000*20, names["sharded N=2"].Result.Accepted, "two isolated keys at 500 events/s each")
	assert.Zero(t, names["sharded N=8"].Result.Throttled)
	cold, ok := names["sharded N=8, new table"]
	require.True(t, ok, "the largest shard count on a new table")
	assert.Zero(t, cold.Result.WarmupSeconds)
	warmed, ok := names["sharded N=8, new, pre-warmed"]
	require.True(t, ok, "the largest shard count on a pre-warmed new table")
	assert.Zero(t, warmed.Result.WarmupSeconds)
	for _, n := range warmed.Result.Partitions() {
		assert.GreaterOrEqual(t, n, 8, "pre-warmed: a partition per key from the start")
	}
	assert.LessOrEqual(t, warmed.Result.Throttled, cold.Result.Throttled)
	var b strings.Builder
	require.NoError(t, rep.Format(&b))
	assert.Contains(t, b.String(), "unsharded limit: 500 events/s. Cause: one partition-key value")
	assert.Contains(t, b.String(), fmt.Sprintf("N=%d. Floor: 2000 events/s x 2 WCU per event", rep.MinShards))
}

func TestScaleUnderOneKey(t *testing.T) {
	rep, err := Scale(ScaleConfig{Rate: 300, Seconds: 10, Writes: seed, Shards: []int{2}, SplitAfter: 5})
	require.NoError(t, err)
	assert.Equal(t, 1, rep.MinShardsBound)
	assert.Equal(t, 1, rep.MinShards, "300 events/s x 2 WCU fit one key")
	assert.Zero(t, rep.Scenarios[0].Result.Throttled)
}

func TestBadConfig(t *testing.T) {
	for name, c := range map[string]Config{
		"no rate":     {Seconds: 1, Writes: seed},
		"no seconds":  {Rate: constant(1), Writes: seed},
		"no writes":   {Rate: constant(1), Seconds: 1},
		"big write":   {Rate: constant(1), Seconds: 1, Writes: []Structure{{TableStructure, PartitionWCU + 1}}},
		"bad heat":    {Rate: constant(1), Seconds: 1, Writes: seed, SplitHeat: 1.5},
		"bad shards":  {Rate: constant(1), Seconds: 1, Writes: seed, Shards: -1},
		"bad pick":    {Rate: constant(5), Seconds: 1, Writes: seed, Shards: 2, Pick: func(string, int) int { return 2 }},
		"neg warm-up": {Rate: constant(1), Seconds: 1, Writes: seed, Warmup: -1},
	} {
		_, err := Run(c)
		assert.Error(t, err, name)
	}
}
