package loadmodel

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// ScaleConfig is the scale scenario: one tenant at Rate events per
// second, unsharded and sharded.
type ScaleConfig struct {
	// Tenant is the tenant posting.
	Tenant string `json:"tenant"`
	// Rate is the offered load in events per second (10,000).
	Rate float64 `json:"rate"`
	// Seconds is the measured length of every run.
	Seconds int `json:"seconds"`
	// Writes are an event's write units per structure (EventWrites).
	Writes []Structure `json:"writes"`
	// Key and Pick are the partition-key layout and the shard picker
	// (nil: DefaultKey, DefaultPick).
	Key  KeyFunc  `json:"-"`
	Pick PickFunc `json:"-"`
	// Shards are the shard counts run at Rate (8, 16, 32).
	Shards []int `json:"shards"`
	// MaxShards bounds the search for the fewest shards with no throttle.
	MaxShards int `json:"max_shards"`
	// Warmup is the longest warm-up of a steady-state run (Config.Warmup).
	Warmup int `json:"warmup"`
	// SplitAfter is Config.SplitAfter (0: its default).
	SplitAfter int `json:"split_after"`
	// RampStep is the ramp's increase per second, in events per second:
	// the unsharded ramp offers RampStep*(s+1) events in second s.
	RampStep float64 `json:"ramp_step"`
	// Seed seeds the event ids.
	Seed uint64 `json:"seed"`
}

// Scenario is one row of the report.
type Scenario struct {
	// Name says what ran.
	Name string `json:"name"`
	// Shards is the number of partition-key values.
	Shards int `json:"shards"`
	// Warm says whether the run started from the partitions the same load
	// had split the table into (steady state), not from a new table.
	Warm bool `json:"warm"`
	// Rate is the offered rate in events per second.
	Rate float64 `json:"rate"`
	// Result is the run's outcome.
	Result Result `json:"result"`
	// Limit is the modeled sustainable rate, events per second, and
	// Cause what sets it.
	Limit float64 `json:"limit"`
	Cause string  `json:"cause"`
}

// ScaleReport is the outcome of Scale.
type ScaleReport struct {
	// Config is what ran, defaults filled in.
	Config ScaleConfig `json:"config"`
	// Scenarios are the runs at Rate, then the search's.
	Scenarios []Scenario `json:"scenarios"`
	// MinShards is the fewest shards with no throttle in a steady-state
	// run at Rate (0: none up to MaxShards), and MinShardsBound the
	// arithmetic floor: Rate x the most write units an event costs in one
	// structure / PartitionWCU, rounded up.
	MinShards      int `json:"min_shards"`
	MinShardsBound int `json:"min_shards_bound"`
	// Ramp is the unsharded ramp, and RampMax the highest rate it reached
	// with no throttle in that second or before.
	Ramp    Result  `json:"ramp"`
	RampMax float64 `json:"ramp_max"`
	// StructureWCU is the write units per second each structure needs at
	// Rate (every structure has its own partitions and table-level
	// throughput).
	StructureWCU []int `json:"structure_wcu"`
}

func (c *ScaleConfig) defaults() error {
	if c.Tenant == "" {
		c.Tenant = "tenant-scale"
	}
	if c.Rate == 0 {
		c.Rate = 10000
	}
	if c.Seconds == 0 {
		c.Seconds = 300
	}
	if c.Shards == nil {
		c.Shards = []int{8, 16, 32}
	}
	if c.MaxShards == 0 {
		c.MaxShards = 128
	}
	if c.Warmup == 0 {
		c.Warmup = 1800
	}
	if c.RampStep == 0 {
		c.RampStep = 5
	}
	if c.Rate < 0 || c.Seconds < 1 || c.MaxShards < 1 || c.Warmup < 0 || c.RampStep < 0 {
		return errors.New("loadmodel: bad scale settings")
	}
	if len(c.Writes) == 0 {
		return errors.New("loadmodel: no Writes (EventWrites gives them)")
	}
	return nil
}

// maxWCU is the most write units an event costs in one structure, and
// the structures that cost it.
func maxWCU(ws []Structure) (int, []string) {
	m := 0
	var names []string
	for _, w := range ws {
		switch {
		case w.WCU > m:
			m, names = w.WCU, []string{w.Name}
		case w.WCU == m:
			names = append(names, w.Name)
		}
	}
	return m, names
}

// Limit returns the rate, in events per second, that keys partition-key
// values sustain once each has a partition of its own in every structure
// (hash imbalance aside), and what sets it.
func Limit(ws []Structure, keys int) (float64, string) {
	m, names := maxWCU(ws)
	per := float64(PartitionWCU) / float64(m)
	if keys == 1 {
		return per, fmt.Sprintf("one partition-key value: its partition in %s takes %d WCU per event, at most %d WCU/s (%.0f events/s); the sort key (timestamp#event_id) grows with time, so split for heat cannot divide the key",
			strings.Join(names, ", "), m, PartitionWCU, per)
	}
	return per * float64(keys), fmt.Sprintf("%d partition-key values, each on its own partition after split for heat, %.0f events/s each (%d WCU/s / %d WCU per event in %s)",
		keys, per, PartitionWCU, m, strings.Join(names, ", "))
}

// Scale runs the scale scenario: Rate unsharded, sharded at each of
// Shards (steady state), the largest of them on a new table and on a new
// table pre-warmed to one partition per key (WarmThroughput), the search
// for the fewest shards with no throttle, and the unsharded ramp.
func Scale(cfg ScaleConfig) (ScaleReport, error) {
	if err := cfg.defaults(); err != nil {
		return ScaleReport{}, err
	}
	rep := ScaleReport{Config: cfg}
	m, _ := maxWCU(cfg.Writes)
	for _, w := range cfg.Writes {
		rep.StructureWCU = append(rep.StructureWCU, int(cfg.Rate)*w.WCU)
	}
	rep.MinShardsBound = int((cfg.Rate*float64(m) + PartitionWCU - 1) / PartitionWCU)
	initial := 0 // a new table's
	run := func(name string, shards int, warm bool) (Scenario, error) {
		c := Config{
			Tenant: cfg.Tenant, Rate: func(int) float64 { return cfg.Rate }, Seconds: cfg.Seconds, Shards: shards,
			Key: cfg.Key, Pick: cfg.Pick, Writes: cfg.Writes, SplitAfter: cfg.SplitAfter, Seed: cfg.Seed,
			InitialPartitions: initial,
		}
		if warm {
			c.Warmup = cfg.Warmup
		}
		r, err := Run(c)
		if err != nil {
			return Scenario{}, err
		}
		lim, cause := Limit(cfg.Writes, r.Keys)
		return Scenario{Name: name, Shards: shards, Warm: warm, Rate: cfg.Rate, Result: r, Limit: lim, Cause: cause}, nil
	}
	add := func(name string, shards int, warm bool) (Scenario, error) {
		s, err := run(name, shards, warm)
		if err == nil {
			rep.Scenarios = append(rep.Scenarios, s)
		}
		return s, err
	}
	if _, err := add("unsharded", 1, true); err != nil {
		return rep, err
	}
	largest := 0
	for _, n := range cfg.Shards {
		largest = max(largest, n)
		if _, err := add(fmt.Sprintf("sharded N=%d", n), n, true); err != nil {
			return rep, err
		}
	}
	if largest > 0 {
		if _, err := add(fmt.Sprintf("sharded N=%d, new table", largest), largest, false); err != nil {
			return rep, err
		}
		// The same new table with WarmThroughput of one partition per
		// key (largest x 1,000 WCU/s on the table and each index).
		initial = largest
		if _, err := add(fmt.Sprintf("sharded N=%d, new, pre-warmed", largest), largest, false); err != nil {
			return rep, err
		}
		initial = 0
	}
	for n := max(1, rep.MinShardsBound); n <= cfg.MaxShards; n++ {
		s, err := run(fmt.Sprintf("sharded N=%d (search)", n), n, true)
		if err != nil {
			return rep, err
		}
		if s.Result.Throttled == 0 {
			rep.MinShards = n
			if !contains(cfg.Shards, n) {
				rep.Scenarios = append(rep.Scenarios, s)
			}
			break
		}
		if n == rep.MinShardsBound || n == rep.MinShardsBound+1 {
			rep.Scenarios = append(rep.Scenarios, s)
		}
	}
	if cfg.RampStep > 0 {
		secs := int(2*float64(PartitionWCU)/float64(m)/cfg.RampStep) + 1
		ramp, err := Run(Config{
			Tenant: cfg.Tenant, Rate: func(s int) float64 { return cfg.RampStep * float64(s+1) }, Seconds: secs, Shards: 1,
			Key: cfg.Key, Pick: cfg.Pick, Writes: cfg.Writes, SplitAfter: cfg.SplitAfter, Seed: cfg.Seed,
		})
		if err != nil {
			return rep, err
		}
		rep.Ramp = ramp
		for s, sec := range ramp.Timeline {
			if sec.Throttled > 0 {
				break
			}
			rep.RampMax = cfg.RampStep * float64(s+1)
		}
	}
	return rep, nil
}

func contains(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// Format writes the report as a table and its conclusions.
func (r ScaleReport) Format(w io.Writer) error {
	c := r.Config
	var b strings.Builder
	var writes []string
	for i, s := range c.Writes {
		writes = append(writes, fmt.Sprintf("%s %d WCU (%d WCU/s at %.0f events/s)", s.Name, s.WCU, r.StructureWCU[i], c.Rate))
	}
	fmt.Fprintf(&b, "model: one tenant, each event a PutItem of: %s\n", strings.Join(writes, ", "))
	fmt.Fprintf(&b, "partition limit %d WCU/s (%d RCU/s), new table %d partitions per structure, split for heat after %ds at >= 80%%, %ds measured per run, steady state after a warm-up of up to %ds\n\n",
		PartitionWCU, PartitionRCU, NewTableWarmWCU/PartitionWCU, orDefault(c.SplitAfter, 30), c.Seconds, c.Warmup)
	fmt.Fprintf(&b, "%-30s %8s %12s %12s %12s %9s %12s %16s  %s\n", "scenario", "offered/s", "offered", "accepted", "throttled", "throttle%", "partitions", "last throttle", "limit")
	for _, s := range r.Scenarios {
		parts := make([]string, 0, len(s.Result.Structures))
		for _, p := range s.Result.Partitions() {
			parts = append(parts, fmt.Sprint(p))
		}
		last := "-"
		if l := s.Result.LastThrottled(); l >= 0 {
			last = fmt.Sprintf("second %d", l)
		}
		fmt.Fprintf(&b, "%-30s %8.0f %12d %12d %12d %8.2f%% %12s %16s  %.0f events/s\n", s.Name, s.Rate, s.Result.Offered, s.Result.Accepted, s.Result.Throttled,
			s.Result.ThrottledPercent(), strings.Join(parts, "/"), last, s.Limit)
	}
	b.WriteString("\n")
	if len(r.Scenarios) > 0 {
		u := r.Scenarios[0]
		fmt.Fprintf(&b, "unsharded limit: %.0f events/s. Cause: %s.\n", u.Limit, u.Cause)
	}
	if c.RampStep > 0 {
		fmt.Fprintf(&b, "unsharded ramp (+%.0f events/s each second): no throttle up to %.0f events/s; throttled from the next second on (%d of %d events throttled over the ramp).\n",
			c.RampStep, r.RampMax, r.Ramp.Throttled, r.Ramp.Offered)
	}
	m, names := maxWCU(c.Writes)
	if r.MinShards > 0 {
		fmt.Fprintf(&b, "fewest shards with 0 throttles at %.0f events/s (steady state): N=%d. Floor: %.0f events/s x %d WCU per event (%s) / %d WCU/s per partition = %d keys at exactly the limit; the hash of the event id spreads events binomially, so a key needs headroom over its mean.\n",
			c.Rate, r.MinShards, c.Rate, m, strings.Join(names, ", "), PartitionWCU, r.MinShardsBound)
	} else {
		fmt.Fprintf(&b, "no shard count up to %d ran without throttles at %.0f events/s.\n", c.MaxShards, c.Rate)
	}
	fmt.Fprintf(&b, "table level (not simulated): every structure needs its WCU/s above; a new on-demand table and each index start at %d WCU/s warm throughput and serve up to double their previous peak at once: pre-warm them (WarmThroughput) for this load.\n", NewTableWarmWCU)
	_, err := io.WriteString(w, b.String())
	return err
}

func orDefault(v, d int) int {
	if v == 0 {
		return d
	}
	return v
}
