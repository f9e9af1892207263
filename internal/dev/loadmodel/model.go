package loadmodel

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/triggers-dev/triggers/internal/event"
)

// Per-partition limits and the other documented figures the model uses
// (sources in the package comment and docs/performance.md).
const (
	// PartitionWCU is the most write units a partition serves per second.
	PartitionWCU = 1000
	// PartitionRCU is the most read units a partition serves per second.
	PartitionRCU = 3000
	// NewTableWarmWCU is the write throughput a new on-demand table (and
	// each of its indexes) starts with: warm throughput 4,000 write units
	// per second, so at least 4 partitions.
	NewTableWarmWCU = 4000
	// BurstSeconds is how much unused provisioned capacity DynamoDB keeps
	// for bursts: up to 300 seconds of it.
	BurstSeconds = 300
)

// KeyFunc returns the partition-key value of shard shard of tenant.
type KeyFunc func(tenant string, shard int) string

// PickFunc returns the shard, in [0, n), an event goes to.
type PickFunc func(eventID string, n int) int

// DefaultKey is the model's own partition-key layout: the tenant for
// shard 0, tenant#k for shard k.
func DefaultKey(tenant string, shard int) string {
	if shard == 0 {
		return tenant
	}
	return tenant + "#" + strconv.Itoa(shard)
}

// DefaultPick is the model's own shard picker: the FNV-1a hash (32-bit)
// of the event id, modulo n.
func DefaultPick(eventID string, n int) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(eventID))
	return int(h.Sum32() % uint32(n))
}

// Config is one simulated run: one tenant posting events at Rate, each
// event a PutItem of an item that costs Writes in the table and its
// indexes.
type Config struct {
	// Tenant is the tenant posting.
	Tenant string
	// Rate is the number of events offered in second sec of the measured
	// run (the warm-up offers Rate(0) every second). Fractions carry over.
	Rate func(sec int) float64
	// Seconds is the measured length of the run.
	Seconds int
	// Shards is the number of partition-key values the tenant's events
	// are spread over (1: unsharded).
	Shards int
	// Key and Pick map a tenant's shard to its partition-key value and an
	// event to its shard. Nil: DefaultKey, DefaultPick.
	Key  KeyFunc
	Pick PickFunc
	// Writes are the write units one event costs in the table and in each
	// index (EventWrites). The item is written to all or none: a throttled
	// index write throttles the PutItem.
	Writes []Structure
	// InitialPartitions is the number of partitions each structure starts
	// with, their hash ranges equal. Default: NewTableWarmWCU/PartitionWCU.
	InitialPartitions int
	// SplitHeat and SplitAfter are the split-for-heat trigger: a partition
	// offered at least SplitHeat*PartitionWCU write units in each of
	// SplitAfter consecutive seconds splits, if it can (see Run). AWS
	// documents no figures: defaults 0.8 and 30 s are assumptions.
	SplitHeat  float64
	SplitAfter int
	// Warmup runs the load at Rate(0), not counted, for up to this many
	// seconds before the measured run, ending early once no partition
	// has split for 2*SplitAfter seconds: the partitions a tenant's
	// traffic has split stay split (DynamoDB never merges them). 0: the
	// measured run starts on a new table.
	Warmup int
	// ProvisionedWCU is the provisioned write capacity of each structure
	// (0: on demand, no table-level limit modeled). Unused capacity is
	// banked for bursts, up to BurstSeconds of it.
	ProvisionedWCU int
	// Seed seeds the random part of the event ids.
	Seed uint64
	// Start is the time of the first event (default: 2026-01-01 UTC).
	Start time.Time
	// Trace, if set, is called after every measured second with the
	// write units each partition of each structure consumed in it.
	Trace func(sec int, consumed map[string][]int)
}

// Throttle causes.
const (
	// CauseSingleKey: the partition holds one partition-key value and
	// serves PartitionWCU; the value's items are written in sort-key
	// order (timestamp#event_id), so adaptive capacity does not split it.
	CauseSingleKey = "single-key partition at its limit"
	// CauseSharedPartition: the partition holds several partition-key
	// values that together exceed PartitionWCU; split for heat separates
	// them after SplitAfter seconds.
	CauseSharedPartition = "partition shared by several keys (until split for heat)"
	// CauseProvisioned: the structure's provisioned capacity and burst
	// capacity are spent.
	CauseProvisioned = "provisioned capacity and burst spent"
)

// StructureResult is one structure's state at the end of a run.
type StructureResult struct {
	// Name is "table" or the index name.
	Name string `json:"name"`
	// WCU is the write units an event costs there.
	WCU int `json:"wcu"`
	// Partitions is the number of partitions at the end.
	Partitions int `json:"partitions"`
	// Splits is the number of splits for heat, warm-up included.
	Splits int `json:"splits"`
	// PeakPartitionWCU is the most write units one partition consumed
	// in one measured second.
	PeakPartitionWCU int `json:"peak_partition_wcu"`
	// Burst is the burst capacity left (provisioned mode only).
	Burst int `json:"burst"`
}

// Result is the outcome of a run.
type Result struct {
	// Offered, Accepted and Throttled count events of the measured run.
	Offered   int64 `json:"offered"`
	Accepted  int64 `json:"accepted"`
	Throttled int64 `json:"throttled"`
	// Causes counts throttled events by cause (the first structure that
	// refused the write).
	Causes map[string]int64 `json:"causes"`
	// Structures are the table and its indexes at the end.
	Structures []StructureResult `json:"structures"`
	// Keys is the number of partition-key values written.
	Keys int `json:"keys"`
	// WarmupSeconds is how long the warm-up ran.
	WarmupSeconds int `json:"warmup_seconds"`
	// Timeline has the events offered and throttled in each measured
	// second.
	Timeline []Second `json:"timeline"`
}

// Second is one measured second of a run.
type Second struct {
	// Offered and Throttled count the second's events.
	Offered   int `json:"offered"`
	Throttled int `json:"throttled"`
}

// LastThrottled is the last measured second with a throttled event, or
// -1 when none was throttled.
func (r Result) LastThrottled() int {
	for i := len(r.Timeline) - 1; i >= 0; i-- {
		if r.Timeline[i].Throttled > 0 {
			return i
		}
	}
	return -1
}

// ThrottledPercent is Throttled as a share of Offered.
func (r Result) ThrottledPercent() float64 {
	if r.Offered == 0 {
		return 0
	}
	return 100 * float64(r.Throttled) / float64(r.Offered)
}

// Partitions is the number of partitions of every structure at the end.
func (r Result) Partitions() []int {
	out := make([]int, len(r.Structures))
	for i, s := range r.Structures {
		out[i] = s.Partitions
	}
	return out
}

// partition is a contiguous range [lo, hi] of the partition-key hash
// space of one structure.
type partition struct {
	lo, hi uint64
	// used is the write units consumed in the current second; offered
	// adds the refused ones; keyOffered splits offered by key index.
	used, offered int
	keyOffered    map[int]int
	hot           int // consecutive seconds at SplitHeat or above
}

type structure struct {
	Structure
	parts  []*partition // sorted by lo
	of     []int        // key index -> index in parts
	splits int
	peak   int
	burst  int
	used   int // this second, all partitions
}

func (s *structure) assign(hashes []uint64) {
	for k, h := range hashes {
		i, _ := slices.BinarySearchFunc(s.parts, h, func(p *partition, h uint64) int {
			switch {
			case p.hi < h:
				return -1
			case p.lo > h:
				return 1
			}
			return 0
		})
		s.of[k] = i
	}
}

// keyHash places a partition-key value in the hash space: a stand-in for
// DynamoDB's internal hash (FNV-1a 64, then a 64-bit finalizer).
func keyHash(k string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(k))
	x := h.Sum64()
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

func (c *Config) defaults() error {
	if c.Key == nil {
		c.Key = DefaultKey
	}
	if c.Pick == nil {
		c.Pick = DefaultPick
	}
	if c.Shards == 0 {
		c.Shards = 1
	}
	if c.InitialPartitions == 0 {
		c.InitialPartitions = NewTableWarmWCU / PartitionWCU
	}
	if c.SplitHeat == 0 {
		c.SplitHeat = 0.8
	}
	if c.SplitAfter == 0 {
		c.SplitAfter = 30
	}
	if c.Start.IsZero() {
		c.Start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	switch {
	case c.Rate == nil:
		return errors.New("loadmodel: no Rate")
	case c.Seconds < 1 || c.Warmup < 0:
		return errors.New("loadmodel: Seconds must be at least 1 and Warmup not negative")
	case c.Shards < 1:
		return errors.New("loadmodel: Shards must be at least 1")
	case len(c.Writes) == 0:
		return errors.New("loadmodel: no Writes (EventWrites gives them)")
	case c.InitialPartitions < 1 || c.SplitAfter < 1 || c.SplitHeat <= 0 || c.SplitHeat > 1 || c.ProvisionedWCU < 0:
		return fmt.Errorf("loadmodel: bad partition settings %d, %v, %d, %d", c.InitialPartitions, c.SplitHeat, c.SplitAfter, c.ProvisionedWCU)
	}
	for _, w := range c.Writes {
		if w.WCU < 1 || w.WCU > PartitionWCU {
			return fmt.Errorf("loadmodel: %s: %d write units per event", w.Name, w.WCU)
		}
	}
	return nil
}

// Run simulates cfg one second at a time. Each second's events are
// offered in order; an event is accepted when the partition its key falls
// in, in every structure, has PartitionWCU left in that second for its
// write units (and, provisioned, the structure has capacity or burst
// left), and throttled otherwise. At the end of each second a partition
// that was hot for SplitAfter seconds splits for heat: if it holds
// several of the keys written, between them, at the point that best
// halves their traffic (hot keys end up isolated, each on a partition of
// its own); if it holds one key, not at all, since every write goes to
// the newest end of that key's sort-key range.
func Run(cfg Config) (Result, error) {
	if err := cfg.defaults(); err != nil {
		return Result{}, err
	}
	// The distinct partition-key values, and each shard's.
	var keys []string
	var hashes []uint64
	index := map[string]int{}
	shardKey := make([]int, cfg.Shards)
	for i := range cfg.Shards {
		k := cfg.Key(cfg.Tenant, i)
		j, ok := index[k]
		if !ok {
			j = len(keys)
			index[k] = j
			keys = append(keys, k)
			hashes = append(hashes, keyHash(k))
		}
		shardKey[i] = j
	}

	ss := make([]*structure, len(cfg.Writes))
	for i, w := range cfg.Writes {
		s := &structure{Structure: w, of: make([]int, len(keys))}
		step := ^uint64(0) / uint64(cfg.InitialPartitions)
		for p := range cfg.InitialPartitions {
			lo := uint64(p) * step
			hi := lo + step - 1
			if p == cfg.InitialPartitions-1 {
				hi = ^uint64(0)
			}
			s.parts = append(s.parts, &partition{lo: lo, hi: hi, keyOffered: map[int]int{}})
		}
		s.assign(hashes)
		ss[i] = s
	}

	rng := rand.NewChaCha8([32]byte{byte(cfg.Seed), byte(cfg.Seed >> 8), byte(cfg.Seed >> 16), byte(cfg.Seed >> 24), byte(cfg.Seed >> 32), byte(cfg.Seed >> 40), byte(cfg.Seed >> 48), byte(cfg.Seed >> 56)})
	res := Result{Causes: map[string]int64{}, Keys: len(keys)}
	var carry float64
	lastSplit := 0
	second := func(sec int, rate float64, measured bool) (split bool, err error) {
		carry += max(0, rate)
		n := int(carry)
		carry -= float64(n)
		base := cfg.Start.Add(time.Duration(sec) * time.Second)
		for _, s := range ss {
			s.used = 0
		}
		throttled := 0
		for i := range n {
			at := base.Add(time.Duration(i) * time.Second / time.Duration(n))
			id, _, err := event.NewID(at, rng)
			if err != nil {
				return false, err
			}
			shard := cfg.Pick(id, cfg.Shards)
			if shard < 0 || shard >= cfg.Shards {
				return false, fmt.Errorf("loadmodel: Pick(%q, %d) = %d, outside [0, %d)", id, cfg.Shards, shard, cfg.Shards)
			}
			k := shardKey[shard]
			cause := ""
			for _, s := range ss {
				p := s.parts[s.of[k]]
				p.offered += s.WCU
				p.keyOffered[k] += s.WCU
				if cause != "" {
					continue
				}
				switch {
				case p.used+s.WCU > PartitionWCU:
					cause = CauseSharedPartition
					if len(p.keyOffered) == 1 {
						cause = CauseSingleKey
					}
				case cfg.ProvisionedWCU > 0 && s.used+s.WCU > cfg.ProvisionedWCU+s.burst:
					cause = CauseProvisioned
				}
			}
			if measured {
				res.Offered++
			}
			if cause != "" {
				throttled++
				if measured {
					res.Throttled++
					res.Causes[cause]++
				}
				continue
			}
			if measured {
				res.Accepted++
			}
			for _, s := range ss {
				s.parts[s.of[k]].used += s.WCU
				s.used += s.WCU
			}
		}
		if measured {
			res.Timeline = append(res.Timeline, Second{Offered: n, Throttled: throttled})
		}
		var trace map[string][]int
		if measured && cfg.Trace != nil {
			trace = map[string][]int{}
		}
		for _, s := range ss {
			if cfg.ProvisionedWCU > 0 {
				// Unused capacity is banked; use above it drew on the bank.
				s.burst += cfg.ProvisionedWCU - s.used
				s.burst = max(0, min(s.burst, BurstSeconds*cfg.ProvisionedWCU))
			}
			var next []*partition
			for _, p := range s.parts {
				if measured {
					s.peak = max(s.peak, p.used)
				}
				if trace != nil {
					trace[s.Name] = append(trace[s.Name], p.used)
				}
				if float64(p.offered) >= cfg.SplitHeat*PartitionWCU {
					p.hot++
				} else {
					p.hot = 0
				}
				if p.hot >= cfg.SplitAfter {
					if a, b, ok := splitForHeat(p, hashes); ok {
						next = append(next, a, b)
						s.splits++
						split = true
						continue
					}
				}
				p.used, p.offered = 0, 0
				clear(p.keyOffered)
				next = append(next, p)
			}
			if len(next) != len(s.parts) {
				s.parts = next
				s.assign(hashes)
			}
		}
		if trace != nil {
			cfg.Trace(sec, trace)
		}
		return split, nil
	}

	for w := 0; w < cfg.Warmup; w++ {
		split, err := second(w-cfg.Warmup, cfg.Rate(0), false)
		if err != nil {
			return res, err
		}
		res.WarmupSeconds++
		if split {
			lastSplit = w
		}
		if w-lastSplit >= 2*cfg.SplitAfter {
			break
		}
	}
	for sec := range cfg.Seconds {
		if _, err := second(sec, cfg.Rate(sec), true); err != nil {
			return res, err
		}
	}
	for _, s := range ss {
		res.Structures = append(res.Structures, StructureResult{
			Name: s.Name, WCU: s.WCU, Partitions: len(s.parts), Splits: s.splits, PeakPartitionWCU: s.peak, Burst: s.burst,
		})
	}
	return res, nil
}

// splitForHeat splits p between the keys it was offered traffic for, at
// the key boundary that best halves that traffic. A partition offered one
// key does not split: that key's writes all go to the newest end of its
// sort-key range, and DynamoDB splits an item collection by sort key only
// when its traffic is not "tracked by a monotonic increase or decrease of
// the sort key".
func splitForHeat(p *partition, hashes []uint64) (a, b *partition, ok bool) {
	if len(p.keyOffered) < 2 {
		return nil, nil, false
	}
	type kv struct {
		h uint64
		w int
	}
	var ks []kv
	total := 0
	for k, w := range p.keyOffered {
		ks = append(ks, kv{hashes[k], w})
		total += w
	}
	slices.SortFunc(ks, func(x, y kv) int {
		switch {
		case x.h < y.h:
			return -1
		case x.h > y.h:
			return 1
		}
		return 0
	})
	// The boundary after ks[cut]: the one whose left side is closest to
	// half the traffic.
	cut, left, best := 0, 0, -1
	for i := 0; i < len(ks)-1; i++ {
		left += ks[i].w
		d := left - (total - left)
		if d < 0 {
			d = -d
		}
		if best < 0 || d < best {
			best, cut = d, i
		}
	}
	mid := ks[cut].h + (ks[cut+1].h-ks[cut].h)/2
	a = &partition{lo: p.lo, hi: mid, keyOffered: map[int]int{}}
	b = &partition{lo: mid + 1, hi: p.hi, keyOffered: map[int]int{}}
	return a, b, true
}
