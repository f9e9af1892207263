// Command triggers-load measures what the API path costs on top of
// DynamoDB (the end-to-end budget of docs/performance.md, `make load`).
//
// It starts one DynamoDB Local (internal/ddb/ddblocal), creates the tables
// from the schema, mints API keys for two tenants and serves the API as
// make dev does (internal/dev/localapi: the API Gateway emulator built from
// the API stack template, with its cached REQUEST authorizer, in front of
// the real Lambda handler), then drives, in the same run and on the same
// engine and DynamoDB client settings:
//
//   - ingest: POST /v1/events with a payload of -payload bytes, against a
//     raw PutItem of the same item (item.FromEvent, the store's own encoding,
//     with the store's condition);
//   - inbox: GET /v1/inbox?limit=50 (the first page of undelivered
//     events), against the raw Query the store sends for that page
//     (StatusIndex, same key condition, filter and limit);
//
// at each -concurrency, after a warm-up. Each cell alternates raw and API
// runs (-rounds) so that a neighbour's load on the shared machine hits
// both arms alike. It prints p50, p99, throughput and errors of each arm,
// the API/raw ratios, and the budget (<= 1.2x at p50 and p99, 0 errors)
// with misses marked; then the CPU time each operation cost in this
// process (the load generator, and for the API also the gateway and the
// handler) and in DynamoDB Local, which on a small shared machine is what
// the latency ratio follows.
//
//	make load
//	make load LOAD_FLAGS="-duration 20s -concurrency 1,8"
//	go run ./cmd/triggers-load -json > load.json
//	go run ./cmd/triggers-load -workloads ingest -concurrency 8 -cpuprofile prof
//	go tool pprof -top prof/ingest-c8-api-*.pprof   # where the API arm's CPU goes
//
// The template defaults to assertions/testdata/triggers-dev-api.json (the
// golden snapshot of the dev API stack, kept identical to a real synth by
// the golden test), so a fresh clone needs no synth; -template
// cdk.out/triggers-dev-api.template.json serves what make dev serves.
// The stage's throttling (100 requests/s, burst 200, from the template) is
// off by default: it is a limit, not a cost, and would cap the API arm;
// -throttle keeps it.
//
// -scenario noisy-neighbour measures webhook delivery isolation instead
// (internal/dev/noisyneighbour): the system make dev runs, tenant A's 20
// webhook endpoints accepting connections and never answering, tenant B's
// one healthy; it prints B's ingest-to-receipt p50/p95/p99/max, what B
// lost or got twice, A's attempts made and put off, circuit openings, a
// timeline of the queues and the machine's load (docs/performance.md):
//
//	make load LOAD_FLAGS="-scenario noisy-neighbour"
//	go run ./cmd/triggers-load -scenario noisy-neighbour -duration 5m -rate-a 2 -esm-concurrency 5 -webhook-env WEBHOOK_PARALLEL=8
//
// -scenario slow-neighbour is its variant against endpoints that answer
// successfully but slowly (-slow-delay 4s: slow to the slow lane, under
// the breaker's slow-request limit, so no circuit opens): tenant A's
// -endpoints (4 here) get a burst of -burst-a events (20) and then -rate-a
// (2) a second, tenant B's one healthy endpoint -rate-b (5), for 1 minute
// (-duration) and a drain of up to 30 s (-drain); it runs
// once with the slow lane on (the template's) and once off
// (WEBHOOK_SLOW_LANE_AFTER=off), one after the other (-lanes), and prints
// for each B's p50/p99/max, A's requests in flight (most, mean) and
// deliveries, and the off / on ratios:
//
//	make load LOAD_FLAGS="-scenario slow-neighbour"
//	go run ./cmd/triggers-load -scenario slow-neighbour -endpoints 4 -burst-a 20 -rate-a 2 -duration 1m -drain 30s
//
// -scenario scale models one tenant ingesting -scale-rate events per
// second (default 10,000) of -payload bytes against DynamoDB's partitions
// (internal/dev/loadmodel: 1,000 WCU/s per partition in the table and in each
// index, split for heat between keys, not inside one), unsharded and
// sharded over -scale-shards keys, finds the fewest shards with no
// throttle and ramps the unsharded key to its limit; then it drives the
// same PutItems, unsharded and sharded, against DynamoDB Local (which
// throttles no partition) at each -scale-concurrency for -duration:
//
//	make load LOAD_FLAGS="-scenario scale"
//	go run ./cmd/triggers-load -scenario scale -scale-local=false -scale-rate 20000 -scale-shards 32,48
//
// Exit status: 0 when the run completed (budget misses are reported, not
// failed, unless -fail-on-miss), 1 when a budget is missed with
// -fail-on-miss or the run failed, 2 for bad flags.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// Options configure one run.
type Options struct {
	// Duration is how long each arm of each cell is measured.
	Duration time.Duration `json:"duration_ns"`
	// Warmup is how long each workload runs, both arms, before measuring.
	Warmup time.Duration `json:"warmup_ns"`
	// Concurrency lists the numbers of concurrent clients.
	Concurrency []int `json:"concurrency"`
	// Payload is the size of the event's payload JSON in bytes.
	Payload int `json:"payload_bytes"`
	// Rounds splits each arm's Duration into this many alternating runs.
	Rounds int `json:"rounds"`
	// Template is the API stack template served.
	Template string `json:"template"`
	// Throttle keeps the stage's throttling limits.
	Throttle bool `json:"throttle"`
	// Workloads lists the workloads to run (ingest, inbox).
	Workloads []string `json:"workloads"`
	// RawDecoder is how the inbox's raw arm decodes its Query response:
	// RawDecoderSDK (the SDK's own decoder, what a client of DynamoDB
	// gets) or RawDecoderFast (ddb.FastQueryDecoding, the API's).
	RawDecoder string `json:"raw_decoder"`
}

// The raw inbox arm's decoders (Options.RawDecoder).
const (
	RawDecoderSDK  = "sdk"
	RawDecoderFast = "fast"
)

// Report is the outcome of a run; -json prints it.
type Report struct {
	// Machine is where the run happened.
	Machine Machine `json:"machine"`
	// Options are the run's settings, defaults filled in.
	Options Options `json:"options"`
	// Cells are the rows: each workload at each concurrency.
	Cells []Cell `json:"cells"`
	// Met reports whether every cell met the budget.
	Met bool `json:"met"`
}

// Machine describes where the run happened.
type Machine struct {
	// CPU is the processor's model name (/proc/cpuinfo), or "unknown".
	CPU string `json:"cpu"`
	// NumCPU is the number of logical CPUs this process may use.
	NumCPU int `json:"num_cpu"`
	// GoVersion is the Go toolchain the tool was built with.
	GoVersion string `json:"go_version"`
	// OS is GOOS/GOARCH.
	OS string `json:"os"`
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("triggers-load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := Options{}
	fs.DurationVar(&o.Duration, "duration", 6*time.Second, "measured time of each arm (API, raw) of each cell; "+scenarioNoisy+": how long both tenants post (default there 2m; "+scenarioSlow+": 1m per arm)")
	fs.DurationVar(&o.Warmup, "warmup", 3*time.Second, "warm-up per workload before measuring (both arms, highest concurrency)")
	conc := fs.String("concurrency", "1,8,32", "comma-separated numbers of concurrent clients")
	fs.IntVar(&o.Payload, "payload", 1024, "payload size in bytes (the event's payload JSON)")
	fs.IntVar(&o.Rounds, "rounds", 2, "alternating raw/API runs per cell (each Duration/rounds long)")
	fs.StringVar(&o.Template, "template", "", "API stack template to serve (default: "+goldenTemplate+" in the module root)")
	fs.BoolVar(&o.Throttle, "throttle", false, "keep the stage's throttling limits from the template")
	workloads := fs.String("workloads", "ingest,inbox", "workloads to run")
	fs.StringVar(&o.RawDecoder, "raw-decoder", RawDecoderSDK, "how the inbox's raw arm decodes its Query response: "+RawDecoderSDK+" (the SDK's decoder) or "+RawDecoderFast+" (the one the API's store uses, ddb.FastQueryDecoding)")
	jsonOut := fs.Bool("json", false, "print the report as JSON instead of a table")
	failOnMiss := fs.Bool("fail-on-miss", false, "exit 1 when a cell misses the budget")
	scenario := fs.String("scenario", "api", "what to measure: api (the API against raw DynamoDB calls), "+scenarioNoisy+" (webhook delivery isolation between two tenants), "+scenarioSlow+" (the same against slow endpoints, slow lane on and off) or "+scenarioScale+" (one tenant's ingest against a model of DynamoDB partitions and DynamoDB Local), docs/performance.md")
	var noisy noisyFlags
	noisy.register(fs)
	var slowF slowFlags
	slowF.register(fs)
	var scaleF scaleFlags
	scaleF.register(fs)
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of every measured run (this process: load generator, gateway, handlers, SDK; not DynamoDB Local) into this folder, one file per workload, concurrency, arm and round")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "triggers-load: unexpected argument %q: every option is a flag (-h lists them)\n", fs.Arg(0))
		return 2
	}
	if *scenario == scenarioNoisy || *scenario == scenarioSlow {
		duration := 2 * time.Minute
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if set["duration"] {
			duration = o.Duration
		} else if *scenario == scenarioSlow {
			duration = time.Minute
		}
		if *scenario == scenarioSlow {
			noisy.slowDefaults(set)
		}
		if duration <= 0 {
			fmt.Fprintln(stderr, "triggers-load: -duration must be positive")
			return 2
		}
		if *scenario == scenarioSlow {
			return runSlow(ctx, duration, o.Template, noisy, slowF, *jsonOut, stdout, stderr)
		}
		return runNoisy(ctx, duration, o.Template, noisy, *jsonOut, stdout, stderr)
	}
	if *scenario == scenarioScale {
		return runScale(ctx, scaleF, o, *jsonOut, stdout, stderr)
	}
	if *scenario != "api" {
		fmt.Fprintf(stderr, "triggers-load: -scenario: unknown scenario %q (api, %s, %s, %s)\n", *scenario, scenarioNoisy, scenarioSlow, scenarioScale)
		return 2
	}
	var err error
	if o.Concurrency, err = parseConcurrency(*conc); err != nil {
		fmt.Fprintf(stderr, "triggers-load: -concurrency: %v\n", err)
		return 2
	}
	o.Workloads = strings.Split(*workloads, ",")
	for _, w := range o.Workloads {
		if w != workloadIngest && w != workloadInbox {
			fmt.Fprintf(stderr, "triggers-load: -workloads: unknown workload %q (ingest, inbox)\n", w)
			return 2
		}
	}
	switch {
	case o.Duration <= 0 || o.Warmup < 0:
		fmt.Fprintln(stderr, "triggers-load: -duration must be positive and -warmup not negative")
		return 2
	case o.RawDecoder != RawDecoderSDK && o.RawDecoder != RawDecoderFast:
		fmt.Fprintf(stderr, "triggers-load: -raw-decoder: unknown decoder %q (%s, %s)\n", o.RawDecoder, RawDecoderSDK, RawDecoderFast)
		return 2
	case o.Rounds < 1:
		fmt.Fprintln(stderr, "triggers-load: -rounds must be at least 1")
		return 2
	case o.Payload < minPayload || o.Payload > maxPayload:
		fmt.Fprintf(stderr, "triggers-load: -payload must be %d to %d bytes\n", minPayload, maxPayload)
		return 2
	}

	if o.Template == "" {
		if o.Template, err = defaultTemplate(); err != nil {
			fmt.Fprintf(stderr, "triggers-load: %v\n", err)
			return 2
		}
	}
	var prof *profiler
	if *cpuprofile != "" {
		if err := os.MkdirAll(*cpuprofile, 0o755); err != nil {
			fmt.Fprintf(stderr, "triggers-load: %v\n", err)
			return 2
		}
		prof = &profiler{dir: *cpuprofile}
	}
	rep, err := measure(ctx, o, stderr, prof)
	if err != nil {
		fmt.Fprintf(stderr, "triggers-load: %v\n", err)
		return 1
	}
	if *jsonOut {
		if code := writeJSON(stdout, stderr, rep); code != 0 {
			return code
		}
	} else {
		fmt.Fprintf(stdout, "machine: %s, %d CPUs, %s, %s\n", rep.Machine.CPU, rep.Machine.NumCPU, rep.Machine.GoVersion, rep.Machine.OS)
		fmt.Fprintf(stdout, "each arm %s per cell in %d alternating runs, warm-up %s, payload %d bytes, template %s, stage throttling %s, raw inbox decoder %s\n\n",
			o.Duration, o.Rounds, o.Warmup, o.Payload, o.Template, map[bool]string{true: "on", false: "off"}[o.Throttle], o.RawDecoder)
		if err := FormatTable(stdout, rep.Cells); err != nil {
			fmt.Fprintf(stderr, "triggers-load: %v\n", err)
			return 1
		}
	}
	if *failOnMiss && !rep.Met {
		return 1
	}
	return 0
}

func parseConcurrency(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 1024 {
			return nil, fmt.Errorf("%q is not a number of clients from 1 to 1024", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// profiler writes a CPU profile of every measured run (warm-ups and
// setup excluded) into dir, named <workload>-c<concurrency>-<arm>-<round>.pprof,
// so that one arm's runs can be read together:
//
//	go tool pprof -top prof/ingest-c8-api-*.pprof
type profiler struct {
	dir string
}

// run profiles f as the run name.
func (p *profiler) run(name string, f func()) error {
	if p == nil {
		f()
		return nil
	}
	out, err := os.Create(filepath.Join(p.dir, name+".pprof"))
	if err != nil {
		return err
	}
	defer out.Close()
	if err := pprof.StartCPUProfile(out); err != nil {
		return fmt.Errorf("start the CPU profile: %w", err)
	}
	f()
	pprof.StopCPUProfile()
	return out.Close()
}

func machine() Machine {
	m := Machine{NumCPU: runtime.NumCPU(), GoVersion: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH, CPU: "unknown"}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}

// writeJSON writes rep to stdout as indented JSON (-json) and returns the
// exit code: 0, or 1 after naming the error on stderr.
func writeJSON(stdout, stderr io.Writer, rep any) int {
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rep); err != nil {
		fmt.Fprintf(stderr, "triggers-load: %v\n", err)
		return 1
	}
	return 0
}
