package dynamotable

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/triggers-dev/triggers/constructs/internal/cdkutil"
	"github.com/triggers-dev/triggers/schema"
)

// Defaults of StreamConsumerOptions: a poison record is retried a bounded
// number of times, split to isolate it, then sent to the failure queue; the
// stream never stalls for longer than MaxStreamMaxRecordAgeHours.
const (
	DefaultStreamBatchSize          = 100
	DefaultStreamRetryAttempts      = 10
	DefaultStreamMaxRecordAgeHours  = MaxStreamMaxRecordAgeHours
	DefaultStreamParallelization    = 1
	DefaultFailureQueueRetentionDay = 14
)

// DynamoDB keeps a stream record for StreamRetentionHours, then trims it.
// Lambda retries a failing batch until its records exceed MaxRecordAge,
// the retries run out or the records expire; what it gives up on it
// describes on the failure queue by stream position (shard, sequence
// numbers), not content, so the records must be read back from the
// stream. A MaxRecordAge of StreamRetentionHours or more is no bound at
// all (the records expire first, as with Lambda's -1) and leaves nothing
// to read back: StreamConsumerOptions.MaxRecordAge is at most
// MaxStreamMaxRecordAgeHours, leaving at least an hour.
const (
	StreamRetentionHours       = 24
	MaxStreamMaxRecordAgeHours = StreamRetentionHours - 1
)

// StreamConsumerOptions configures a function reading the table's stream.
// Zero values take the defaults.
type StreamConsumerOptions struct {
	// StartingPosition is where a new consumer starts reading.
	//
	// Default: awslambda.StartingPosition_TRIM_HORIZON (every record still in the stream).
	StartingPosition awslambda.StartingPosition
	// BatchSize is the most records per invocation, a whole number from 1
	// to 10000.
	//
	// Default: 100.
	BatchSize float64
	// MaxBatchingWindow waits to fill a batch: whole seconds, up to 5
	// minutes.
	//
	// Default: no wait.
	MaxBatchingWindow awscdk.Duration
	// RetryAttempts bounds retries of a failing batch
	// (MaximumRetryAttempts), a whole number from 1 to 10000. 0 takes the
	// default, 10: this field cannot turn retries off. Constructs of this module that take these options
	// give 0 their own meaning: triggersapi's StreamDelivery 10,000
	// (StreamRetryAttempts), archive's ExpiredEventsArchive no limit
	// (until MaxRecordAge).
	//
	// Default: 10 (DefaultStreamRetryAttempts).
	RetryAttempts float64
	// MaxRecordAge discards records older than this (sending their
	// description to the failure queue): whole seconds, 60 seconds to 23
	// hours (MaxStreamMaxRecordAgeHours). Lambda takes up to 7 days, but
	// DynamoDB keeps stream records 24 hours (StreamRetentionHours): a
	// record still failing then would be trimmed before it is given up.
	//
	// Default: 23 hours (DefaultStreamMaxRecordAgeHours).
	MaxRecordAge awscdk.Duration
	// ParallelizationFactor is concurrent batches per shard, a whole number
	// from 1 to 10. Above 1, records with the same partition key stay in
	// order; others do not.
	//
	// Default: 1.
	ParallelizationFactor float64
	// DisableBisectOnError turns off splitting a failing batch in two.
	//
	// Default: false (bisect on error).
	DisableBisectOnError bool
	// Filters are Lambda event filters (awslambda.FilterCriteria_Filter).
	// On a global table (TableOptions.Replicas) each is combined with the
	// origin filters (OriginFilters) unless AllOrigins: a record passes
	// when it matches one of the given filters and is of this region's
	// items. A filter that names the origin attribute itself, or a field
	// the origin filters name with other values, cannot be combined: set
	// AllOrigins and add the origin condition yourself.
	//
	// Default: every record; on a global table, the records of items
	// this region accepted (see AllOrigins).
	Filters []*map[string]any
	// AllOrigins delivers every record of a global table's stream to the
	// function, replicated writes of other regions included. By default
	// the consumer of a global table gets only records whose item names
	// this stack's region in schema.AttrOriginRegion or has no such
	// attribute (OriginFilters), so each event is delivered once, by the
	// region that accepted it (docs/multi-region.md).
	//
	// Default: false.
	AllOrigins bool
	// FailureQueue receives a description of records that could not be
	// processed (on-failure destination).
	//
	// Default: the function's failure queue, "<function's unique
	// id>StreamFailures" in the function's stack, SQS-managed encryption,
	// TLS only, 14-day retention; made by the function's first
	// AddStreamConsumer and shared by the next ones (a function consuming
	// two tables' streams gets the failure records of both in one queue;
	// each record names its stream's ARN).
	FailureQueue awssqs.IQueue
}

// StreamConsumer is a function attached to a table's stream.
type StreamConsumer struct {
	// Source is the event source that was added to the function.
	Source awslambdaeventsources.DynamoEventSource
	// FailureQueue is the on-failure destination.
	FailureQueue awssqs.IQueue
}

// AddStreamConsumer attaches fn to table's stream with safe defaults (every
// ITable has it as a method too):
// partial batch failures reported by the function (ReportBatchItemFailures),
// bisect on error, bounded retries, a maximum record age and an SQS
// on-failure destination. It grants fn the stream read permissions. On a
// global table (ReplicaRegions not empty) the function gets only the
// records of items its stack's region accepted (OriginFilters), unless
// AllOrigins.
func AddStreamConsumer(table ITable, fn awslambda.IFunction, opts *StreamConsumerOptions) *StreamConsumer {
	sc, l2 := table.Schema(), table.Resource()
	if sc.Stream == schema.StreamNone {
		panic(fmt.Errorf("table %q has no stream: set Stream in its schema (for example schema.StreamNewImage) before adding a stream consumer", sc.Name))
	}
	if l2.TableStreamArn() == nil {
		panic(fmt.Errorf("table %q was imported without TableStreamArn: give it to attach a stream consumer", sc.Name))
	}
	o := StreamConsumerOptions{}
	if opts != nil {
		o = *opts
	}
	if err := o.validate(); err != nil {
		panic(fmt.Errorf("stream consumer of table %q: %w", sc.Name, err))
	}
	start := o.StartingPosition
	if start == "" {
		start = awslambda.StartingPosition_TRIM_HORIZON
	}
	def := func(v, d float64) float64 {
		if v == 0 {
			return d
		}
		return v
	}
	age := o.MaxRecordAge
	if age == nil {
		age = awscdk.Duration_Hours(jsii.Number(DefaultStreamMaxRecordAgeHours))
	}
	filters := o.Filters
	if g, ok := table.(interface{ ReplicaRegions() []string }); ok && len(g.ReplicaRegions()) > 0 && !o.AllOrigins {
		origin := OriginFilters(*awscdk.Stack_Of(fn).Region())
		if len(filters) > 0 {
			var err error
			if filters, err = combineFilters(filters, origin); err != nil {
				panic(fmt.Errorf("stream consumer of table %q: %w", sc.Name, err))
			}
		} else {
			filters = origin
		}
	}
	queue := o.FailureQueue
	if queue == nil {
		queue = defaultFailureQueue(fn)
	}
	props := &awslambdaeventsources.DynamoEventSourceProps{
		StartingPosition:        start,
		BatchSize:               jsii.Number(def(o.BatchSize, DefaultStreamBatchSize)),
		MaxBatchingWindow:       o.MaxBatchingWindow,
		BisectBatchOnError:      jsii.Bool(!o.DisableBisectOnError),
		RetryAttempts:           jsii.Number(def(o.RetryAttempts, DefaultStreamRetryAttempts)),
		MaxRecordAge:            age,
		ParallelizationFactor:   jsii.Number(def(o.ParallelizationFactor, DefaultStreamParallelization)),
		ReportBatchItemFailures: jsii.Bool(true),
		OnFailure:               awslambdaeventsources.NewSqsDlq(queue),
	}
	if len(filters) > 0 {
		props.Filters = &filters
	}
	src := awslambdaeventsources.NewDynamoEventSource(l2, props)
	fn.AddEventSource(src)
	return &StreamConsumer{Source: src, FailureQueue: queue}
}

// defaultFailureQueue returns fn's failure queue, "<fn's unique
// id>StreamFailures" in fn's stack: the one an earlier AddStreamConsumer
// of fn made (fn consumes another table's stream too), else a new one.
// Each AddStreamConsumer grants fn sqs:SendMessage on it again.
func defaultFailureQueue(fn awslambda.IFunction) awssqs.IQueue {
	stack := awscdk.Stack_Of(fn)
	id := *awscdk.Names_UniqueId(fn) + "StreamFailures"
	if c := stack.Node().TryFindChild(jsii.String(id)); c != nil {
		q, ok := c.(awssqs.IQueue)
		if !ok {
			panic(fmt.Errorf("stack %q has a construct %q that is not a queue: AddStreamConsumer makes the function's failure queue under that id; rename that construct or give StreamConsumerOptions.FailureQueue", *stack.Node().Path(), id))
		}
		return q
	}
	return cdkutil.NewTLSOnlyQueue(stack, id, &awssqs.QueueProps{
		RetentionPeriod: awscdk.Duration_Days(jsii.Number(DefaultFailureQueueRetentionDay)),
	})
}

// OriginFilters returns the Lambda event filters that pass the stream
// records of items region accepted: schema.AttrOriginRegion equal to
// region, or absent (items written before the table had replicas). An
// INSERT or MODIFY record carries the item in NewImage; a REMOVE record
// (TTL expiry included) only in OldImage. Four filters, ORed by Lambda.
func OriginFilters(region string) []*map[string]any {
	image := func(events []any, image string, match any) *map[string]any {
		return patternFilter(map[string]any{
			"eventName": events,
			"dynamodb":  map[string]any{image: map[string]any{schema.AttrOriginRegion: match}},
		})
	}
	local := map[string]any{"S": []any{region}}
	absent := []any{map[string]any{"exists": false}}
	return []*map[string]any{
		image([]any{"INSERT", "MODIFY"}, "NewImage", local),
		image([]any{"INSERT", "MODIFY"}, "NewImage", absent),
		image([]any{"REMOVE"}, "OldImage", local),
		image([]any{"REMOVE"}, "OldImage", absent),
	}
}

// combineFilters returns the filters that pass what one of given and one
// of origin both pass: each pair's patterns merged (a field both name
// keeps the values in both; a pair with none is dropped).
func combineFilters(given, origin []*map[string]any) ([]*map[string]any, error) {
	var out []*map[string]any
	for _, g := range given {
		gp, err := filterPattern(g)
		if err != nil {
			return nil, err
		}
		for _, o := range origin {
			op, err := filterPattern(o)
			if err != nil {
				return nil, err
			}
			merged, ok, err := mergePatterns(gp, op, "")
			if err != nil {
				return nil, fmt.Errorf("filter %s cannot be combined with the origin filters of a global table: %w; set AllOrigins: true and add the origin condition (dynamotable.OriginFilters) yourself", (*g)["pattern"], err)
			}
			if ok {
				out = append(out, patternFilter(merged))
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no record passes both the given Filters and the origin filters of a global table: check the Filters' eventName, or set AllOrigins: true")
	}
	return out, nil
}

// patternFilter returns the Lambda event filter of pattern, as
// awslambda.FilterCriteria_Filter does, its JSON keys sorted (the template
// stays the same from one synth to the next).
func patternFilter(pattern map[string]any) *map[string]any {
	b, err := json.Marshal(pattern)
	if err != nil {
		panic(err) // strings, lists and maps only
	}
	return &map[string]any{"pattern": string(b)}
}

func filterPattern(f *map[string]any) (map[string]any, error) {
	s, ok := (*f)["pattern"].(string)
	if !ok {
		return nil, fmt.Errorf("filter %v has no pattern: make it with awslambda.FilterCriteria_Filter", *f)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("filter pattern %s is not JSON: %w", s, err)
	}
	return m, nil
}

// mergePatterns returns the pattern both a and b match: the union of
// their fields, a field both name with the values in both. ok is false
// when no value is left for such a field.
func mergePatterns(a, b map[string]any, path string) (map[string]any, bool, error) {
	out := map[string]any{}
	for k, v := range a {
		out[k] = v
	}
	for k, bv := range b {
		av, both := out[k]
		if !both {
			out[k] = bv
			continue
		}
		am, aIsMap := av.(map[string]any)
		bm, bIsMap := bv.(map[string]any)
		if aIsMap && bIsMap {
			m, ok, err := mergePatterns(am, bm, path+k+".")
			if err != nil || !ok {
				return nil, ok, err
			}
			out[k] = m
			continue
		}
		as, aStrings := plainStrings(av)
		bs, bStrings := plainStrings(bv)
		if !aStrings || !bStrings {
			return nil, false, fmt.Errorf("both name %s%s", path, k)
		}
		var keep []any
		for _, s := range as {
			if slices.Contains(bs, s) {
				keep = append(keep, s)
			}
		}
		if len(keep) == 0 {
			return nil, false, nil
		}
		out[k] = keep
	}
	return out, true, nil
}

// plainStrings returns v's values when v is a list of plain strings (an
// exact-match rule).
func plainStrings(v any) ([]string, bool) {
	list, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(list))
	for _, e := range list {
		s, ok := e.(string)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// validate reports every bad option, each naming the value and the fix;
// tokens are not checked. Values Lambda takes as integers must be whole.
func (o StreamConsumerOptions) validate() error {
	var errs []error
	whole := func(name string, v, lo, hi float64, fix string) {
		if v != 0 && !isToken(v) && (v < lo || v > hi || v != math.Trunc(v)) {
			errs = append(errs, fmt.Errorf("%s %v is not a whole number from %v to %v: %s", name, v, lo, hi, fix))
		}
	}
	whole("BatchSize", o.BatchSize, 1, 10000, fmt.Sprintf("give the most records per invocation, or 0 for the default (%d)", DefaultStreamBatchSize))
	whole("RetryAttempts", o.RetryAttempts, 1, 10000, "give how many times a failing batch is retried, or 0 for the default")
	whole("ParallelizationFactor", o.ParallelizationFactor, 1, 10, fmt.Sprintf("give the batches processed at once per shard, or 0 for the default (%d)", DefaultStreamParallelization))
	// Lambda takes both durations in whole seconds (CloudFormation
	// integers); MaxRecordAge stays an hour inside the stream's retention
	// (MaxStreamMaxRecordAgeHours), below Lambda's own 7 days.
	return errors.Join(append(errs,
		cdkutil.WholeSeconds("MaxBatchingWindow", o.MaxBatchingWindow, 0, 5*time.Minute, "Lambda waits whole seconds, at most 5 minutes, to fill a batch"),
		cdkutil.WholeSeconds("MaxRecordAge", o.MaxRecordAge, time.Minute, MaxStreamMaxRecordAgeHours*time.Hour, fmt.Sprintf(
			"Lambda gives up records by whole seconds of age, and DynamoDB keeps stream records %d hours: "+
				"a record still failing then is trimmed before it is given up, and the failure queue describes records by stream position only; "+
				"at most %d hours (MaxStreamMaxRecordAgeHours) leaves an hour to read a given-up record back from the stream",
			StreamRetentionHours, MaxStreamMaxRecordAgeHours)))...)
}
