package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

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

// runNoisy runs the noisy-neighbour scenario and prints its report.
func runNoisy(ctx context.Context, duration time.Duration, template string, n noisyFlags, jsonOut bool, stdout, stderr io.Writer) int {
	env, err := parseEnv(n.webhookEnv)
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "triggers-load: -webhook-env: %v\n", err)
		return 2
	case n.rateA < 0 || n.rateB <= 0:
		fmt.Fprintln(stderr, "triggers-load: -rate-a must not be negative and -rate-b must be positive")
		return 2
	case n.endpoints < 1 || n.endpoints > noisyneighbour.MaxEndpoints:
		fmt.Fprintf(stderr, "triggers-load: -endpoints must be 1 to %d (a tenant's subscriptions)\n", noisyneighbour.MaxEndpoints)
		return 2
	case n.esmConc < 0 || n.esmConc == 1 || n.esmConc > 1000:
		fmt.Fprintln(stderr, "triggers-load: -esm-concurrency must be 2 to 1000, or 0 for the template's")
		return 2
	case n.drain <= 0 || n.interval <= 0:
		fmt.Fprintln(stderr, "triggers-load: -drain and -interval must be positive")
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
