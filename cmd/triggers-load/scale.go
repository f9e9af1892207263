package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/triggers-dev/triggers/internal/ddb"
	"github.com/triggers-dev/triggers/internal/ddb/ddblocal"
	"github.com/triggers-dev/triggers/internal/dev/loadmodel"
	"github.com/triggers-dev/triggers/internal/event"
	itemconv "github.com/triggers-dev/triggers/internal/item"
	"github.com/triggers-dev/triggers/internal/shard"
	"github.com/triggers-dev/triggers/schema"
)

// scenarioScale is -scenario's value for the scale scenario.
const scenarioScale = "scale"

// scaleTenant is the tenant of the scale scenario.
const scaleTenant = "load-scale"

// scaleKey and scalePick are the partition-key layout of a tenant's shards
// and the shard an event goes to, in the model and in the items written
// to DynamoDB Local alike.
// They are the store's: shard.Partition, and shard.For, which the API
// writes into the event's id (shard.Assign).
var (
	scaleKey  loadmodel.KeyFunc  = shard.Partition
	scalePick loadmodel.PickFunc = shard.For
)

// scaleFlags are the scale scenario's own flags.
type scaleFlags struct {
	rate       float64
	seconds    int
	shards     string
	splitAfter int
	warmup     int
	profile    string
	local      bool
	localConc  string
}

func (s *scaleFlags) register(fs *flag.FlagSet) {
	fs.Float64Var(&s.rate, "scale-rate", 10000, scenarioScale+": events per second one tenant offers")
	fs.IntVar(&s.seconds, "scale-seconds", 300, scenarioScale+": simulated seconds of each model run")
	fs.StringVar(&s.shards, "scale-shards", "8,16,32", scenarioScale+": shard counts the model runs at -scale-rate")
	fs.IntVar(&s.splitAfter, "scale-split-after", 30, scenarioScale+": seconds a partition stays hot before it splits for heat (an assumption: AWS documents none)")
	fs.IntVar(&s.warmup, "scale-warmup", 1800, scenarioScale+": longest simulated warm-up before a steady-state run")
	fs.StringVar(&s.profile, "scale-profile", string(schema.ProfileSeed), scenarioScale+": events table profile (seed, lean)")
	fs.BoolVar(&s.local, "scale-local", true, scenarioScale+": also drive DynamoDB Local with the same workload")
	fs.StringVar(&s.localConc, "scale-concurrency", "8,32,64", scenarioScale+": concurrent PutItem clients against DynamoDB Local")
}

// ScaleReport is the scale scenario's outcome; -json prints it.
type ScaleReport struct {
	// Machine is where the run happened.
	Machine Machine `json:"machine"`
	// Profile is the events table profile and Payload the payload JSON
	// size of the event written.
	Profile schema.EventsProfile `json:"profile"`
	Payload int                  `json:"payload_bytes"`
	// ItemBytes is the event item's size as DynamoDB bills it.
	ItemBytes int `json:"item_bytes"`
	// Model is the partition model's report.
	Model loadmodel.ScaleReport `json:"model"`
	// Measured are the write units DynamoDB Local reported for one
	// PutItem of the item (nil without -scale-local).
	Measured []loadmodel.Structure `json:"measured_wcu,omitempty"`
	// Local are the DynamoDB Local runs.
	Local []LocalCell `json:"local,omitempty"`
}

// LocalCell is one DynamoDB Local run: one key set at one concurrency.
type LocalCell struct {
	// Shards is the number of partition-key values written.
	Shards int `json:"shards"`
	// Concurrency is the number of concurrent PutItem clients.
	Concurrency int `json:"concurrency"`
	// Stats are the PutItems' figures (Throughput: events per second).
	Stats Stats `json:"stats"`
	// PerShard counts the events written to each shard.
	PerShard []int `json:"per_shard"`
}

func parseShards(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 1024 {
			return nil, fmt.Errorf("%q is not a shard count from 1 to 1024", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// runScale runs the scale scenario: the partition model, then, with
// -scale-local, the same workload against DynamoDB Local.
func runScale(ctx context.Context, sf scaleFlags, o Options, jsonOut bool, stdout, stderr io.Writer) int {
	shards, err := parseShards(sf.shards)
	if err != nil {
		fmt.Fprintf(stderr, "triggers-load: -scale-shards: %v\n", err)
		return 2
	}
	conc, err := parseConcurrency(sf.localConc)
	if err != nil {
		fmt.Fprintf(stderr, "triggers-load: -scale-concurrency: %v\n", err)
		return 2
	}
	profile, err := schema.ParseEventsProfile(sf.profile)
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "triggers-load: -scale-profile: %v\n", err)
		return 2
	case sf.rate <= 0 || sf.rate > 1e6:
		fmt.Fprintln(stderr, "triggers-load: -scale-rate must be above 0 and at most 1000000 events per second")
		return 2
	case sf.seconds < 1 || sf.splitAfter < 1 || sf.warmup < 0:
		fmt.Fprintln(stderr, "triggers-load: -scale-seconds and -scale-split-after must be at least 1, -scale-warmup not negative")
		return 2
	case o.Payload < minPayload || o.Payload > maxPayload:
		fmt.Fprintf(stderr, "triggers-load: -payload must be %d to %d bytes\n", minPayload, maxPayload)
		return 2
	case o.Duration <= 0 || o.Warmup < 0:
		fmt.Fprintln(stderr, "triggers-load: -duration must be positive and -warmup not negative")
		return 2
	}
	rep, err := scale(ctx, sf, shards, conc, profile, o, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "triggers-load: %s: %v\n", scenarioScale, err)
		return 1
	}
	if jsonOut {
		return writeJSON(stdout, stderr, rep)
	}
	if err := rep.Format(stdout); err != nil {
		fmt.Fprintf(stderr, "triggers-load: %v\n", err)
		return 1
	}
	return 0
}

// scaleEvent builds an event exactly as POST /v1/events does for the
// tool's body: a fresh id, the API's default retention and metadata.
func scaleEvent(req event.CreateRequest) (event.Event, error) {
	return event.New(req, time.Now(), event.DefaultRetention, event.Metadata{SourceIP: sourceIP, APIVersion: event.APIVersion})
}

func scale(ctx context.Context, sf scaleFlags, shards, conc []int, profile schema.EventsProfile, o Options, progress io.Writer) (ScaleReport, error) {
	rep := ScaleReport{Machine: machine(), Profile: profile, Payload: o.Payload}
	_, req, err := ingestBody(o.Payload)
	if err != nil {
		return rep, err
	}
	ev, err := scaleEvent(req)
	if err != nil {
		return rep, err
	}
	table := schema.EventsFor(profile)
	it := itemconv.FromEvent(scaleTenant, ev, profile)
	rep.ItemBytes = loadmodel.ItemSize(it)
	writes := loadmodel.EventWrites(table, it)
	fmt.Fprintf(progress, "triggers-load: %s: modeling %.0f events/s (%d simulated seconds per run)\n", scenarioScale, sf.rate, sf.seconds)
	rep.Model, err = loadmodel.Scale(loadmodel.ScaleConfig{
		Tenant: scaleTenant, Rate: sf.rate, Seconds: sf.seconds, Writes: writes, Shards: shards,
		Warmup: sf.warmup, SplitAfter: sf.splitAfter, Key: scaleKey, Pick: scalePick,
	})
	if err != nil || !sf.local {
		return rep, err
	}

	sharded := rep.Model.MinShards
	if sharded == 0 {
		sharded = slices.Max(shards)
	}
	fmt.Fprintf(progress, "triggers-load: %s: starting DynamoDB Local\n", scenarioScale)
	proc, err := ddblocal.Start(ctx, ddblocal.Options{Install: true})
	if err != nil {
		return rep, err
	}
	defer func() { _ = proc.Stop() }()
	const tableName = "load-scale-events"
	if _, err := ddb.CreateTable(ctx, proc.Client, table, tableName, false); err != nil {
		return rep, err
	}
	put := func(ctx context.Context, it map[string]types.AttributeValue, rc types.ReturnConsumedCapacity) (*dynamodb.PutItemOutput, error) {
		return proc.Client.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:                           aws.String(tableName),
			Item:                                it,
			ConditionExpression:                 aws.String("attribute_not_exists(#pk)"),
			ExpressionAttributeNames:            map[string]string{"#pk": schema.AttrUserID},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
			ReturnConsumedCapacity:              rc,
		})
	}
	// The model's write units against DynamoDB Local's for the same item.
	out, err := put(ctx, it, types.ReturnConsumedCapacityIndexes)
	if err != nil {
		return rep, err
	}
	rep.Measured, err = measuredWrites(out.ConsumedCapacity, writes)
	if err != nil {
		return rep, err
	}
	if !slices.Equal(rep.Measured, writes) {
		return rep, fmt.Errorf("DynamoDB Local billed the event item %v write units, the model %v", rep.Measured, writes)
	}
	putOp := func(n int, perShard []atomic.Int64) op {
		return func(ctx context.Context) (time.Duration, error) {
			e, err := scaleEvent(req)
			if err != nil {
				return 0, err
			}
			k := scalePick(e.ID, n)
			e.ID, _ = shard.Assign(e.ID, n) // as the API does: the id names its shard
			it := itemconv.FromEvent(scaleKey(scaleTenant, k), e, profile)
			t0 := time.Now()
			_, err = put(ctx, it, types.ReturnConsumedCapacityNone)
			d := time.Since(t0)
			if err == nil {
				perShard[k].Add(1)
			}
			return d, err
		}
	}
	// A warm-up (both key sets, the highest concurrency), not measured:
	// the first cell would otherwise pay for DynamoDB Local's JIT.
	fmt.Fprintf(progress, "triggers-load: %s: DynamoDB Local warm-up %s\n", scenarioScale, o.Warmup)
	for _, n := range []int{1, sharded} {
		if r := drive(ctx, slices.Max(conc), o.Warmup/2, putOp(n, make([]atomic.Int64, n)), 0); r.errors > 0 {
			return rep, fmt.Errorf("warm-up: %d errors, the first: %s", r.errors, r.firstError)
		}
	}
	for _, n := range []int{1, sharded} {
		for _, c := range conc {
			if ctx.Err() != nil {
				return rep, ctx.Err()
			}
			fmt.Fprintf(progress, "triggers-load: %s: DynamoDB Local, %d key(s), concurrency %d: %s\n", scenarioScale, n, c, o.Duration)
			perShard := make([]atomic.Int64, n)
			r := drive(ctx, c, o.Duration, putOp(n, perShard), 0)
			cell := LocalCell{Shards: n, Concurrency: c, Stats: r.stats()}
			for i := range perShard {
				cell.PerShard = append(cell.PerShard, int(perShard[i].Load()))
			}
			rep.Local = append(rep.Local, cell)
		}
	}
	return rep, ctx.Err()
}

// measuredWrites orders DynamoDB's consumed capacity like want.
func measuredWrites(cc *types.ConsumedCapacity, want []loadmodel.Structure) ([]loadmodel.Structure, error) {
	if cc == nil || cc.Table == nil || cc.Table.CapacityUnits == nil {
		return nil, errors.New("DynamoDB Local reported no consumed capacity for the PutItem")
	}
	var out []loadmodel.Structure
	for _, w := range want {
		var units *float64
		if w.Name == loadmodel.TableStructure {
			units = cc.Table.CapacityUnits
		} else if ix, ok := cc.GlobalSecondaryIndexes[w.Name]; ok {
			units = ix.CapacityUnits
		}
		if units == nil {
			return nil, fmt.Errorf("DynamoDB Local reported no capacity for %s", w.Name)
		}
		out = append(out, loadmodel.Structure{Name: w.Name, WCU: int(*units)})
	}
	return out, nil
}

// Format writes the report as text.
func (r ScaleReport) Format(w io.Writer) error {
	fmt.Fprintf(w, "machine: %s, %d CPUs, %s, %s\n", r.Machine.CPU, r.Machine.NumCPU, r.Machine.GoVersion, r.Machine.OS)
	fmt.Fprintf(w, "event: payload %d bytes, item %d bytes (%s profile)\n\n", r.Payload, r.ItemBytes, r.Profile)
	if err := r.Model.Format(w); err != nil {
		return err
	}
	if r.Measured == nil {
		return nil
	}
	var ms []string
	for _, m := range r.Measured {
		ms = append(ms, fmt.Sprintf("%s %d", m.Name, m.WCU))
	}
	fmt.Fprintf(w, "\nDynamoDB Local (no per-partition throttling: it serves whatever this machine can): one PutItem of the item consumed %s WCU, as modeled.\n", strings.Join(ms, ", "))
	fmt.Fprintf(w, "%-6s %5s %10s %9s %9s %7s  %s\n", "keys", "conc", "events/s", "p50", "p99", "errors", "events per key (min-max)")
	var best LocalCell
	for _, c := range r.Local {
		fmt.Fprintf(w, "%-6d %5d %10.0f %9s %9s %7d  %d-%d\n", c.Shards, c.Concurrency, c.Stats.Throughput, FormatDuration(c.Stats.P50), FormatDuration(c.Stats.P99),
			c.Stats.Errors, slices.Min(c.PerShard), slices.Max(c.PerShard))
		if c.Stats.Throughput > best.Stats.Throughput {
			best = c
		}
	}
	_, err := fmt.Fprintf(w, "highest: %.0f events/s (%d keys, %d clients), %.1f%% of the %.0f events/s modeled; the load generator, the SDK and DynamoDB Local share this machine's CPUs\n",
		best.Stats.Throughput, best.Shards, best.Concurrency, 100*best.Stats.Throughput/r.Model.Config.Rate, r.Model.Config.Rate)
	return err
}
