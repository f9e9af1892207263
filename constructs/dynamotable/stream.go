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
	//
	// Default: every record.
	Filters []*map[string]any
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
	if len(o.Filters) > 0 {
		props.Filters = &o.Filters
	}
	src := awslambdaeventsources.NewDynamoEventSource(l2, props)
	fn.AddEventSource(src)
	return &StreamConsumer{Source: src, FailureQueue: queue}
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
