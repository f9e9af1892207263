package triggersapi

import (
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/triggers-dev/triggers/constructs/dynamotable"
	"github.com/triggers-dev/triggers/constructs/eventstore"
	"github.com/triggers-dev/triggers/constructs/golambda"
	"github.com/triggers-dev/triggers/constructs/internal/cdkutil"
	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/schema"
)

// StreamDeliveryProps configures a StreamDelivery.
type StreamDeliveryProps struct {
	// EventsTable is the table whose stream is delivered (its stream must
	// be known: a table made here, or imported with TableStreamArn).
	// Required.
	EventsTable eventstore.IEventsTable
	// DeliveryOptions size the consumer and tune the stream and queues.
	//
	// Default: see DeliveryOptions.
	DeliveryOptions
	// LogRetention of the consumer function's logs.
	//
	// Default: awslogs.RetentionDays_ONE_MONTH.
	LogRetention awslogs.RetentionDays
	// Tracing turns on AWS X-Ray for the consumer function.
	//
	// Default: false.
	Tracing bool
	// PrebuiltDir holds the consumer's binary in streamconsumer/bootstrap
	// (see TriggersApiProps.PrebuiltDir). DeliveryOptions.Function.Code
	// takes precedence.
	//
	// Default: built at synth from StreamConsumerPackage.
	PrebuiltDir string
	// OriginRegion, when set, passes the consumer only the new events
	// that region accepted (or that name no region): for a delivery on an
	// imported replica of a global table, whose stream carries the writes
	// of every region (docs/multi-region.md). It replaces the default
	// INSERT filter, not filters given in DeliveryOptions.Stream. A global
	// table built in the same stack filters by origin by itself
	// (dynamotable.StreamConsumerOptions.AllOrigins). TriggersApi sets it
	// to its stack's region when WriterRegion is set.
	//
	// Default: "", every new event.
	OriginRegion string
}

// StreamDelivery is the outbox of the events table: a consumer function
// reads the table's stream (INSERTs only) and sends one message per new
// event to the delivery queue, which has a dead-letter queue; stream records
// the consumer gives up on go to an on-failure destination queue.
//
// TriggersApi composes one with id "Default", which CDK leaves out of
// logical ids: its queues keep the logical ids they had as direct children
// of TriggersApi (TriggersDeliveryQueue..., TriggersDeliveryDLQ...,
// TriggersStreamFailures...). Another app can create one alone.
type StreamDelivery struct {
	constructs.Construct

	fn       *golambda.GoFunction
	queue    awssqs.Queue
	dlq      awssqs.Queue
	failures awssqs.IQueue
}

// ConsumerFunction returns the function reading the stream.
func (d *StreamDelivery) ConsumerFunction() golambda.IGoFunction { return d.fn }

// DeliveryQueue returns the queue receiving one message per new event.
func (d *StreamDelivery) DeliveryQueue() awssqs.IQueue { return d.queue }

// DeliveryDeadLetterQueue returns the queue receiving delivery messages
// received more than MaxReceiveCount times.
func (d *StreamDelivery) DeliveryDeadLetterQueue() awssqs.IQueue { return d.dlq }

// Event source mapping settings of the stream consumer (unless
// DeliveryOptions.Stream gives others): retries bounded by record age
// alone, in practice (malformed records never fail a batch: the function
// parks them), and a record age well inside the stream's 24 h retention.
const (
	StreamRetryAttempts     = 10000
	StreamMaxRecordAgeHours = 6
)

// StreamFailureQueue returns the on-failure destination of the stream
// consumer (given in DeliveryOptions.Stream.FailureQueue, or created).
func (d *StreamDelivery) StreamFailureQueue() awssqs.IQueue { return d.failures }

// GrantConsumeDeliveries lets grantee receive, delete and change the
// visibility of delivery messages (the queue's consume actions).
func (d *StreamDelivery) GrantConsumeDeliveries(grantee awsiam.IGrantable) awsiam.Grant {
	return d.queue.GrantConsumeMessages(grantee)
}

func validateDelivery(o *DeliveryOptions) error {
	if o == nil {
		return nil
	}
	var errs []error
	if n := o.MaxReceiveCount; n != 0 && !isToken(n) && (n < 1 || n > 1000 || n != float64(int(n))) {
		errs = append(errs, fmt.Errorf("Delivery.MaxReceiveCount %v is outside 1-1000: give how many times a message is received before it moves to the dead-letter queue, a whole number", n))
	}
	// SQS takes both in whole seconds (the CDK's own words name its
	// "Queue2", not the prop).
	errs = append(errs,
		cdkutil.WholeSeconds("Delivery.QueueVisibilityTimeout", o.QueueVisibilityTimeout, 0, 12*time.Hour, "SQS hides a received message whole seconds, at most 12 hours"),
		cdkutil.WholeSeconds("Delivery.QueueRetention", o.QueueRetention, time.Minute, 14*24*time.Hour, "SQS keeps messages whole seconds, 1 minute to 14 days"))
	return errors.Join(append(errs, validateFunction("Delivery.Function", o.Function)...)...)
}

// NewStreamDelivery creates the consumer, the delivery queue and its DLQ,
// and the stream failure queue. Invalid props panic with an error naming
// the value and the fix.
func NewStreamDelivery(scope constructs.Construct, id *string, props *StreamDeliveryProps) *StreamDelivery {
	if props == nil || props.EventsTable == nil {
		panic(fmt.Errorf("streamdelivery %q: props.EventsTable is required: pass the events table whose stream to deliver", cdkutil.Deref(id)))
	}
	if err := validateDelivery(&props.DeliveryOptions); err != nil {
		panic(fmt.Errorf("streamdelivery %q: invalid props:\n%w", cdkutil.Deref(id), err))
	}
	d := &StreamDelivery{}
	constructs.NewConstruct_Override(d, scope, id)
	retention := props.LogRetention
	if retention == "" {
		retention = awslogs.RetentionDays_ONE_MONTH
	}
	o := props.DeliveryOptions

	d.dlq = cdkutil.NewTLSOnlyQueue(d, "DeliveryDLQ", &awssqs.QueueProps{
		MaxMessageSizeBytes: jsii.Number(1048576),
		RetentionPeriod:     awscdk.Duration_Days(jsii.Number(14)),
	})
	cdkutil.Suppress(d.dlq, "Serverless-SQSRedrivePolicy", "this queue is the delivery queue's dead-letter queue: messages end here, with no further redrive")

	receives := o.MaxReceiveCount
	if receives == 0 {
		receives = DefaultDLQMaxReceiveCount
	}
	d.queue = cdkutil.NewTLSOnlyQueue(d, "DeliveryQueue", &awssqs.QueueProps{
		// An event's JSON can exceed 256 KiB (a 256 KiB payload plus its
		// envelope); SQS accepts messages up to 1 MiB.
		MaxMessageSizeBytes: jsii.Number(1048576),
		VisibilityTimeout:   o.QueueVisibilityTimeout,
		RetentionPeriod:     o.QueueRetention,
		DeadLetterQueue:     &awssqs.DeadLetterQueue{Queue: d.dlq, MaxReceiveCount: jsii.Number(receives)},
	})

	d.fn = newFunction(d, "ConsumerFunction", StreamConsumerPackage, "Triggers stream consumer: new events to the delivery queue",
		functionDefaults{retention: retention, tracing: props.Tracing, prebuiltDir: props.PrebuiltDir,
			invokedBy: "invoked by the events stream's event source mapping, whose failed batches go to its on-failure destination (StreamFailures); malformed records are parked there by the function itself"}, o.Function, 30,
		map[string]*string{contract.EnvDeliveryQueueURL: d.queue.QueueUrl()})
	d.queue.GrantSendMessages(d.fn)
	so := dynamotable.StreamConsumerOptions{}
	if o.Stream != nil {
		so = *o.Stream
	}
	if so.FailureQueue == nil {
		q := cdkutil.NewTLSOnlyQueue(d, "StreamFailures", &awssqs.QueueProps{
			RetentionPeriod: awscdk.Duration_Days(jsii.Number(dynamotable.DefaultFailureQueueRetentionDay)),
		})
		cdkutil.Suppress(q, "AwsSolutions-SQS3", "this queue is the stream consumer's on-failure destination: it already is the dead-letter queue of the event source mapping")
		cdkutil.Suppress(q, "Serverless-SQSRedrivePolicy", "this queue is the stream consumer's on-failure destination and dead-letter queue: records end here for triggers-replay, with no further redrive")
		so.FailureQueue = q
	}
	if len(so.Filters) == 0 {
		so.Filters = insertFilters(props.EventsTable, props.OriginRegion)
	}
	// Malformed records are parked by the function itself (with their
	// content, on the failure queue), so a failing batch can only be a
	// transient failure (SQS, IAM): retry it until the records are 6 h
	// old, well inside the stream's 24 h, so the failure queue's pointers
	// can still be re-read by triggers-replay.
	if so.RetryAttempts == 0 {
		so.RetryAttempts = StreamRetryAttempts
	}
	if so.MaxRecordAge == nil {
		so.MaxRecordAge = awscdk.Duration_Hours(jsii.Number(StreamMaxRecordAgeHours))
	}
	c := props.EventsTable.AddStreamConsumer(d.fn.Invocable(), &so)
	d.failures = c.FailureQueue
	d.fn.Function.AddEnvironment(jsii.String(contract.EnvDeadLetterQueueURL), d.failures.QueueUrl(), nil)
	d.failures.GrantSendMessages(d.fn)
	cdkutil.Suppress(d.fn.Role, "AwsSolutions-IAM5", "dynamodb:ListStreams supports no resource-level permissions; the stream read grant (GetRecords, GetShardIterator, DescribeStream) is scoped to the events table's stream ARN", "Resource::*")
	return d
}

// insertFilters are the delivery consumer's default stream filters: new
// events (INSERT), and with origin, on a table that does not filter by
// origin itself (an imported replica), only those origin accepted or
// that name no region (dynamotable.OriginFilters' INSERT half).
func insertFilters(t eventstore.IEventsTable, origin string) []*map[string]any {
	insert := func(extra map[string]any) *map[string]any {
		m := map[string]any{"eventName": awslambda.FilterRule_IsEqual(jsii.String("INSERT"))}
		for k, v := range extra {
			m[k] = v
		}
		return awslambda.FilterCriteria_Filter(&m)
	}
	if g, ok := t.(interface{ ReplicaRegions() []string }); origin == "" || ok && len(g.ReplicaRegions()) > 0 {
		return []*map[string]any{insert(nil)}
	}
	image := func(match any) map[string]any {
		return map[string]any{"dynamodb": map[string]any{"NewImage": map[string]any{schema.AttrOriginRegion: match}}}
	}
	return []*map[string]any{
		insert(image(map[string]any{"S": []any{origin}})),
		insert(image([]any{map[string]any{"exists": false}})),
	}
}
