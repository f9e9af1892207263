package dynamotable

import (
	"fmt"

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
// stream never stalls for longer than a day.
const (
	DefaultStreamBatchSize          = 100
	DefaultStreamRetryAttempts      = 10
	DefaultStreamMaxRecordAgeHours  = 24
	DefaultStreamParallelization    = 1
	DefaultFailureQueueRetentionDay = 14
)

// StreamConsumerOptions configures a function reading the table's stream.
// Zero values take the defaults.
type StreamConsumerOptions struct {
	// StartingPosition is where a new consumer starts reading.
	//
	// Default: awslambda.StartingPosition_TRIM_HORIZON (every record still in the stream).
	StartingPosition awslambda.StartingPosition
	// BatchSize is the most records per invocation, 1-10000.
	//
	// Default: 100.
	BatchSize float64
	// MaxBatchingWindow waits to fill a batch, up to 5 minutes.
	//
	// Default: no wait.
	MaxBatchingWindow awscdk.Duration
	// RetryAttempts bounds retries of a failing batch, 0-10000.
	//
	// Default: 10.
	RetryAttempts float64
	// MaxRecordAge discards records older than this (sending them to the
	// failure queue), 60 seconds to 7 days.
	//
	// Default: 24 hours.
	MaxRecordAge awscdk.Duration
	// ParallelizationFactor is concurrent batches per shard, 1-10. Above 1,
	// records with the same partition key stay in order; others do not.
	//
	// Default: 1.
	ParallelizationFactor float64
	// DisableBisectOnError turns off splitting a failing batch in two.
	//
	// Default: false (bisect on error).
	DisableBisectOnError bool
	// Filters are Lambda event filters (awslambda.FilterCriteria_Filter).
	// On a global table (TableOptions.Replicas) they cannot be combined
	// with the origin filters the consumer gets there: give them only for
	// a single-region table, or set AllOrigins.
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
	// Default: a new queue, SQS-managed encryption, TLS only, 14-day retention.
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
// on-failure destination. It grants fn the stream read permissions.
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
	queue := o.FailureQueue
	if queue == nil {
		queue = cdkutil.NewTLSOnlyQueue(awscdk.Stack_Of(fn), *awscdk.Names_UniqueId(fn)+"StreamFailures", &awssqs.QueueProps{
			RetentionPeriod: awscdk.Duration_Days(jsii.Number(DefaultFailureQueueRetentionDay)),
		})
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
	filters := o.Filters
	if g, ok := table.(interface{ ReplicaRegions() []string }); ok && len(g.ReplicaRegions()) > 0 && !o.AllOrigins {
		if len(filters) > 0 {
			panic(fmt.Errorf("stream consumer of table %q: Filters are given, but the table is a global table whose consumers filter on the origin region: set AllOrigins: true and add the origin condition (OriginFilters) to your filters yourself", sc.Name))
		}
		filters = OriginFilters(*awscdk.Stack_Of(fn).Region())
	}
	if len(filters) > 0 {
		props.Filters = &filters
	}
	src := awslambdaeventsources.NewDynamoEventSource(l2, props)
	fn.AddEventSource(src)
	return &StreamConsumer{Source: src, FailureQueue: queue}
}

// OriginFilters returns the Lambda event filters that pass the stream
// records of items region accepted: schema.AttrOriginRegion equal to
// region, or absent (items written before the table had replicas). An
// INSERT or MODIFY record carries the item in NewImage; a REMOVE record
// (TTL expiry included) only in OldImage. Four filters, ORed by Lambda.
func OriginFilters(region string) []*map[string]any {
	image := func(events []string, image string, match any) *map[string]any {
		return awslambda.FilterCriteria_Filter(&map[string]any{
			"eventName": awslambda.FilterRule_Or(*jsii.Strings(events...)...),
			"dynamodb":  map[string]any{image: map[string]any{schema.AttrOriginRegion: match}},
		})
	}
	local := map[string]any{"S": awslambda.FilterRule_IsEqual(region)}
	absent := awslambda.FilterRule_NotExists()
	return []*map[string]any{
		image([]string{"INSERT", "MODIFY"}, "NewImage", local),
		image([]string{"INSERT", "MODIFY"}, "NewImage", absent),
		image([]string{"REMOVE"}, "OldImage", local),
		image([]string{"REMOVE"}, "OldImage", absent),
	}
}

func (o StreamConsumerOptions) validate() error {
	check := func(name string, v, lo, hi float64) error {
		if v != 0 && !isToken(v) && (v < lo || v > hi) {
			return fmt.Errorf("%s %v is outside %v-%v", name, v, lo, hi)
		}
		return nil
	}
	if err := check("BatchSize", o.BatchSize, 1, 10000); err != nil {
		return err
	}
	if err := check("RetryAttempts", o.RetryAttempts, 0, 10000); err != nil {
		return err
	}
	return check("ParallelizationFactor", o.ParallelizationFactor, 1, 10)
}
