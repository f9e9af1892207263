package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/dev/noisyneighbour"
)

// scenarioNoisy is -scenario's value for the noisy-neighbour scenario.
const scenarioNoisy = "noisy-neighbour"

// noisyFlags are the noisy-neighbour scenario's own flags.
type noisyFlags struct {
	rateA, rateB float64
	endpoints    int
	drain        time.Duration
	esmConc      int
	webhookEnv   string
	poll         time.Duration
	interval     time.Duration
	timeline     bool
	logs         bool
}

func (n *noisyFlags) register(fs *flag.FlagSet) {
	fs.Float64Var(&n.rateA, "rate-a", 1, scenarioNoisy+": events per second the noisy tenant A posts (0: none, B's baseline)")
	fs.Float64Var(&n.rateB, "rate-b", 5, scenarioNoisy+": events per second the healthy tenant B posts")
	fs.IntVar(&n.endpoints, "endpoints", noisyneighbour.MaxEndpoints, scenarioNoisy+": tenant A's subscriptions, each to an endpoint that accepts and never answers")
	fs.DurationVar(&n.drain, "drain", time.Minute, scenarioNoisy+": how long to wait for B's last events after the posting")
	fs.IntVar(&n.esmConc, "esm-concurrency", 0, scenarioNoisy+": MaximumConcurrency of each webhook event source mapping (0: the template's)")
	fs.StringVar(&n.webhookEnv, "webhook-env", "", scenarioNoisy+": webhook function variables over the template's, NAME=value,... (\"\": the template's own)")
	fs.DurationVar(&n.poll, "poll", 0, scenarioNoisy+": stream poll interval when idle (default: make dev's)")
	fs.DurationVar(&n.interval, "interval", 5*time.Second, scenarioNoisy+": timeline sampling interval")
	fs.BoolVar(&n.timeline, "timeline", true, scenarioNoisy+": print the timeline (B's arrivals, the queues, A's held connections)")
	fs.BoolVar(&n.logs, "logs", false, scenarioNoisy+": print the environment's log lines to stderr")
}

// parseEnv reads NAME=value,NAME=value; "" is an empty map.
func parseEnv(s string) (map[string]string, error) {
	out := map[string]string{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for kv := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%q is not NAME=value", kv)
		}
		out[k] = v
	}
	return out, nil
}

// check returns the message naming the first flag of n out of range, or
// "" (both noisy-neighbour scenarios take these flags).
func (n noisyFlags) check() string {
	switch {
	case n.rateA < 0 || n.rateB <= 0:
		return "triggers-load: -rate-a must not be negative and -rate-b must be positive"
	case n.endpoints < 1 || n.endpoints > noisyneighbour.MaxEndpoints:
		return fmt.Sprintf("triggers-load: -endpoints must be 1 to %d (a tenant's subscriptions)", noisyneighbour.MaxEndpoints)
	case n.esmConc < 0 || n.esmConc == 1 || n.esmConc > 1000:
		return "triggers-load: -esm-concurrency must be 2 to 1000, or 0 for the template's"
	case n.drain <= 0 || n.interval <= 0:
		return "triggers-load: -drain and -interval must be positive"
	}
	return ""
}

// runNoisy runs the noisy-neighbour scenario and prints its report.
func runNoisy(ctx context.Context, duration time.Duration, template string, n noisyFlags, jsonOut bool, stdout, stderr io.Writer) int {
	env, err := parseEnv(n.webhookEnv)
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "triggers-load: -webhook-env: %v\n", err)
		return 2
	case n.check() != "":
		fmt.Fprintln(stderr, n.check())
		return 2
	}
	cfg := noisyneighbour.Config{
		Duration: duration, RateA: n.rateA, RateB: n.rateB, Endpoints: n.endpoints, Drain: n.drain,
		Concurrency: n.esmConc, WebhookEnv: env, PollInterval: n.poll, Interval: n.interval, Template: template,
	}
	if n.logs {
		cfg.Logs = stderr
	}
	if n.timeline && !jsonOut {
		cfg.Progress = stdout
		fmt.Fprintf(stderr, "triggers-load: %s: starting the dev environment, then %s of posting\n", scenarioNoisy, duration)
	}
	rep, err := noisyneighbour.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "triggers-load: %s: %v\n", scenarioNoisy, err)
		return 1
	}
	if jsonOut {
		return writeJSON(stdout, stderr, rep)
	}
	rep.Format(stdout, false)
	fmt.Fprintf(stdout, "target: B's ingest-to-receipt p99 <= %s, nothing lost or duplicated: %s\n",
		noisyneighbour.FormatDuration(noisyneighbour.TargetP99), verdict(rep))
	return 0
}

// verdict says whether the run met the target.
func verdict(rep noisyneighbour.Report) string {
	var miss []string
	if rep.B.Latency.P99 > noisyneighbour.TargetP99 {
		miss = append(miss, "p99")
	}
	if len(rep.B.Missing) > 0 {
		miss = append(miss, "lost")
	}
	if rep.B.Duplicates > 0 {
		miss = append(miss, "duplicates")
	}
	if rep.B.PostErrors > 0 {
		miss = append(miss, "post errors")
	}
	if len(miss) == 0 {
		return "met"
	}
	return "MISS " + strings.Join(miss, ", ")
}

// scenarioSlow is -scenario's value for the slow-neighbour scenario:
// tenant A's endpoints answer slowly but successfully, with the slow lane
// on and then off.
const scenarioSlow = "slow-neighbour"

// slowFlags are the slow-neighbour scenario's own flags (it shares the
// noisy-neighbour scenario's too).
type slowFlags struct {
	delay time.Duration
	burst int
	lanes string
}

func (s *slowFlags) register(fs *flag.FlagSet) {
	fs.DurationVar(&s.delay, "slow-delay", 4*time.Second, scenarioSlow+": how long tenant A's endpoints take to answer 200 (above WEBHOOK_SLOW_LANE_AFTER, below WEBHOOK_SLOW_AFTER)")
	fs.IntVar(&s.burst, "burst-a", 20, scenarioSlow+": events tenant A posts at once when the posting starts, on top of -rate-a")
	fs.StringVar(&s.lanes, "lanes", "on,off", scenarioSlow+": the arms to run one after the other: the slow lane on (the template's), off (WEBHOOK_SLOW_LANE_AFTER=off), or both")
}

// slowDefaults sets the slow-neighbour scenario's own defaults of the
// shared flags not set (set): 4 endpoints, A 2 events/s, a 30 s drain. A
// tenant's slow lane gets through 4 requests per -slow-delay (1 a second
// at 4 s), so A's 20 events at once and 2 a second to 4 endpoints offer
// 80 requests at once and then 8 a second: a backlog that grows for the
// whole run, with the lane on.
func (n *noisyFlags) slowDefaults(set map[string]bool) {
	if !set["endpoints"] {
		n.endpoints = 4
	}
	if !set["rate-a"] {
		n.rateA = 2
	}
	if !set["drain"] {
		n.drain = 30 * time.Second
	}
}

// SlowArm is one arm of the slow-neighbour scenario.
type SlowArm struct {
	// Lane is "on" or "off".
	Lane   string                `json:"lane"`
	Report noisyneighbour.Report `json:"report"`
}

// SlowReport is the slow-neighbour scenario's JSON output: its arms, run
// one after the other in one invocation.
type SlowReport struct {
	Arms []SlowArm `json:"arms"`
}

// parseLanes reads -lanes: on, off, or both in either order.
func parseLanes(s string) ([]string, error) {
	var out []string
	for l := range strings.SplitSeq(s, ",") {
		l = strings.TrimSpace(l)
		if l != "on" && l != "off" || slices.Contains(out, l) {
			return nil, fmt.Errorf("%q: give on, off, or on,off", s)
		}
		out = append(out, l)
	}
	return out, nil
}

// runSlow runs the slow-neighbour scenario, an arm per lane setting, and
// prints each arm's report and a comparison.
func runSlow(ctx context.Context, duration time.Duration, template string, n noisyFlags, sf slowFlags, jsonOut bool, stdout, stderr io.Writer) int {
	env, err := parseEnv(n.webhookEnv)
	if err != nil {
		fmt.Fprintf(stderr, "triggers-load: -webhook-env: %v\n", err)
		return 2
	}
	lanes, err := parseLanes(sf.lanes)
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "triggers-load: -lanes: %v\n", err)
		return 2
	case sf.delay <= 0 || sf.burst < 0:
		fmt.Fprintln(stderr, "triggers-load: -slow-delay must be positive and -burst-a not negative")
		return 2
	case n.check() != "":
		fmt.Fprintln(stderr, n.check())
		return 2
	case env[contract.EnvWebhookSlowLaneAfter] != "":
		fmt.Fprintf(stderr, "triggers-load: -webhook-env: %s is the -lanes flag's\n", contract.EnvWebhookSlowLaneAfter)
		return 2
	}
	var out SlowReport
	for _, lane := range lanes {
		armEnv := maps.Clone(env)
		if lane == "off" {
			armEnv[contract.EnvWebhookSlowLaneAfter] = "off"
		}
		cfg := noisyneighbour.Config{
			Duration: duration, RateA: n.rateA, RateB: n.rateB, Endpoints: n.endpoints, Drain: n.drain,
			Concurrency: n.esmConc, WebhookEnv: armEnv, PollInterval: n.poll, Interval: n.interval, Template: template,
			SlowDelay: sf.delay, BurstA: sf.burst,
		}
		if n.logs {
			cfg.Logs = stderr
		}
		if n.timeline && !jsonOut {
			cfg.Progress = stdout
			fmt.Fprintf(stderr, "triggers-load: %s, slow lane %s: starting the dev environment, then %s of posting\n", scenarioSlow, lane, duration)
		}
		rep, err := noisyneighbour.Run(ctx, cfg)
		if err != nil {
			fmt.Fprintf(stderr, "triggers-load: %s, slow lane %s: %v\n", scenarioSlow, lane, err)
			return 1
		}
		out.Arms = append(out.Arms, SlowArm{Lane: lane, Report: rep})
		if !jsonOut {
			fmt.Fprintf(stdout, "--- slow lane %s\n", lane)
			rep.Format(stdout, false)
		}
	}
	if jsonOut {
		return writeJSON(stdout, stderr, out)
	}
	formatSlowComparison(stdout, out)
	return 0
}

// formatSlowComparison prints the arms side by side: B's latency, A's
// occupancy and backlog, and the off / on ratios when both arms ran.
func formatSlowComparison(w io.Writer, r SlowReport) {
	fmt.Fprintf(w, "\n%-10s %9s %9s %9s %14s %14s %16s %16s %16s %14s\n", "slow lane", "B p50", "B p99", "B max", "A max held", "A mean held", "A delivered", "A oldest first", "A busy/behind", "B put off")
	for _, a := range r.Arms {
		b, sl := a.Report.B, a.Report.A.Slow
		if sl == nil {
			sl = &noisyneighbour.SlowA{}
		}
		fmt.Fprintf(w, "%-10s %9s %9s %9s %14d %14.2f %16s %16s %16s %14d\n", a.Lane,
			noisyneighbour.FormatDuration(b.Latency.P50), noisyneighbour.FormatDuration(b.Latency.P99), noisyneighbour.FormatDuration(b.Latency.Max),
			sl.MaxInFlight, sl.Occupancy, fmt.Sprintf("%d/%d", sl.Delivered, sl.Wanted), fmt.Sprintf("%d/%d", sl.OldestFirst, sl.Delivered),
			fmt.Sprintf("%d/%d", a.Report.A.Deferred[contract.DeferredTenantBusy], a.Report.A.Deferred[contract.DeferredBehindWake]), b.Breaker)
	}
	if len(r.Arms) == 2 {
		on, off := r.Arms[0], r.Arms[1]
		if on.Lane != "on" {
			on, off = off, on
		}
		ratio := func(x, y float64) string {
			if y == 0 {
				return "-"
			}
			return fmt.Sprintf("%.2f", x/y)
		}
		bOn, bOff := on.Report.B.Latency, off.Report.B.Latency
		occ := func(a SlowArm) (float64, float64) {
			if a.Report.A.Slow == nil {
				return 0, 0
			}
			return float64(a.Report.A.Slow.MaxInFlight), a.Report.A.Slow.Occupancy
		}
		maxOn, meanOn := occ(on)
		maxOff, meanOff := occ(off)
		fmt.Fprintf(w, "%-10s %9s %9s %9s %14s %14s\n", "off / on",
			ratio(float64(bOff.P50), float64(bOn.P50)), ratio(float64(bOff.P99), float64(bOn.P99)), ratio(float64(bOff.Max), float64(bOn.Max)),
			ratio(maxOff, maxOn), ratio(meanOff, meanOn))
	}
	for _, a := range r.Arms {
		fmt.Fprintf(w, "slow lane %s: B's ingest-to-receipt p99 <= %s, nothing lost or duplicated: %s\n", a.Lane,
			noisyneighbour.FormatDuration(noisyneighbour.TargetP99), verdict(a.Report))
	}
}
