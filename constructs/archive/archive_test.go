package archive_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/constructs/archive"
	"github.com/triggers-dev/triggers/constructs/dynamotable"
	"github.com/triggers-dev/triggers/constructs/eventstore"
	rtarchive "github.com/triggers-dev/triggers/internal/archive"
	_ "github.com/triggers-dev/triggers/internal/synth/jsiienv"
	"github.com/triggers-dev/triggers/internal/synth/jsiirt"
	"github.com/triggers-dev/triggers/schema"
)

func TestMain(m *testing.M) { jsiirt.RunTests(m) }

// The archive of an events table with every default: a versioned, encrypted,
// TLS-only bucket with access logs, objects to Glacier after 365 days, and
// the archiver invoked only for TTL deletions.
func ExampleNewExpiredEventsArchive() {
	stack := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("Data"), nil)
	events := eventstore.NewEventsTable(stack, jsii.String("Events"), nil)
	a := archive.NewExpiredEventsArchive(stack, jsii.String("ExpiredEventsArchive"), &archive.ExpiredEventsArchiveProps{
		EventsTable: events,
		// Code built in CI; without it, synth builds ArchiverPackage.
		Function: &archive.FunctionOptions{Code: awslambda.Code_FromBucket(
			awss3.Bucket_FromBucketName(stack, jsii.String("Artifacts"), jsii.String("ci-artifacts")), jsii.String("archiver.zip"), nil)},
	})
	fmt.Println(*a.ArchivePrefix())
	tmpl := assertions.Template_FromStack(stack, nil)
	tmpl.HasResourceProperties(jsii.String("AWS::S3::Bucket"), map[string]any{
		"VersioningConfiguration": map[string]any{"Status": "Enabled"},
		"LifecycleConfiguration": map[string]any{"Rules": []any{assertions.Match_ObjectLike(&map[string]any{
			"Prefix":      "expired/",
			"Transitions": []any{map[string]any{"StorageClass": "GLACIER", "TransitionInDays": 365}},
		})}},
	})
	tmpl.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), map[string]any{
		"FilterCriteria": map[string]any{"Filters": []any{map[string]any{
			"Pattern": `{"eventName":["REMOVE"],"userIdentity":{"principalId":["dynamodb.amazonaws.com"],"type":["Service"]}}`,
		}}},
	})
	fmt.Println("ok")
	// Output:
	// expired/
	// ok
}

func TestValidation(t *testing.T) {
	stack := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("Data"), nil)
	newImage := eventstore.NewEventsTable(stack, jsii.String("Old"), &eventstore.EventsTableProps{StreamView: schema.StreamNewImage})
	events := eventstore.NewEventsTable(stack, jsii.String("Events"), nil)
	tests := []struct {
		name  string
		props *archive.ExpiredEventsArchiveProps
		want  []string
	}{
		{"nil props", nil, []string{"EventsTable is required"}},
		{"NEW_IMAGE stream", &archive.ExpiredEventsArchiveProps{EventsTable: newImage}, []string{`stream view is "NEW_IMAGE"`, "StreamNewAndOldImages"}},
		{"prefix", &archive.ExpiredEventsArchiveProps{EventsTable: events, Prefix: "expired"}, []string{`Prefix "expired" must end in "/"`}},
		// Found by review: it synthesized and deployed, and S3 refused
		// the objects of long tenant ids on every retry.
		{"prefix too long", &archive.ExpiredEventsArchiveProps{EventsTable: events, Prefix: strings.Repeat("p", archive.MaxPrefixBytes) + "/"},
			[]string{"Prefix is 807 bytes long: use at most 806 (MaxPrefixBytes)"}},
		{"storage class", &archive.ExpiredEventsArchiveProps{EventsTable: events, StorageClass: awss3.StorageClass_INFREQUENT_ACCESS()}, []string{`StorageClass "STANDARD_IA" is not an archive class`}},
		{"expiration before transition", &archive.ExpiredEventsArchiveProps{EventsTable: events, Expiration: awscdk.Duration_Days(jsii.Number(300))}, []string{"Expiration 300 days must be later than TransitionAfter (365 days)"}},
		{"partial days", &archive.ExpiredEventsArchiveProps{EventsTable: events, TransitionAfter: awscdk.Duration_Hours(jsii.Number(36))}, []string{"TransitionAfter 1.5 days"}},
		// Found by review: NoncurrentDays 0 synthesized (S3 refuses it at
		// deploy: a positive integer), and partial days failed inside the
		// CDK ("'12 hours' cannot be converted into a whole number of
		// days"), naming neither the prop nor the fix.
		{"noncurrent versions kept no days", &archive.ExpiredEventsArchiveProps{EventsTable: events, NoncurrentVersionExpiration: awscdk.Duration_Days(jsii.Number(0))},
			[]string{"NoncurrentVersionExpiration 0 days must be a whole number of days, at least 1: S3 deletes noncurrent versions whole days after they are replaced (default 90)"}},
		{"noncurrent versions kept half a day", &archive.ExpiredEventsArchiveProps{EventsTable: events, NoncurrentVersionExpiration: awscdk.Duration_Hours(jsii.Number(12))},
			[]string{"NoncurrentVersionExpiration 0.5 days must be a whole number of days, at least 1"}},
		{"expiration in partial days", &archive.ExpiredEventsArchiveProps{EventsTable: events, Expiration: awscdk.Duration_Hours(jsii.Number(400*24 + 12))},
			[]string{"Expiration 400.5 days must be a whole number of days: S3 expires objects whole days after they are written"}},
		{"record age at the stream's retention", &archive.ExpiredEventsArchiveProps{EventsTable: events, Stream: &dynamotable.StreamConsumerOptions{MaxRecordAge: awscdk.Duration_Hours(jsii.Number(24))}},
			[]string{"Stream.MaxRecordAge 24 hours leaves less than an hour of the stream's 24-hour retention", "use at most 23 hours"}},
		{"record age past the stream's retention", &archive.ExpiredEventsArchiveProps{EventsTable: events, Stream: &dynamotable.StreamConsumerOptions{MaxRecordAge: awscdk.Duration_Days(jsii.Number(7))}},
			[]string{"Stream.MaxRecordAge 168 hours", "use at most 23 hours"}},
		{"record age below Lambda's minimum", &archive.ExpiredEventsArchiveProps{EventsTable: events, Stream: &dynamotable.StreamConsumerOptions{MaxRecordAge: awscdk.Duration_Seconds(jsii.Number(30))}},
			[]string{"Stream.MaxRecordAge 30 seconds is below Lambda's minimum of 60 seconds"}},
		{"negative retries", &archive.ExpiredEventsArchiveProps{EventsTable: events, Stream: &dynamotable.StreamConsumerOptions{RetryAttempts: -1}},
			[]string{"Stream.RetryAttempts -1 is not a whole number from 1 to 10000", "leave it 0 to retry until Stream.MaxRecordAge"}},
		{"too many retries", &archive.ExpiredEventsArchiveProps{EventsTable: events, Stream: &dynamotable.StreamConsumerOptions{RetryAttempts: 20000}},
			[]string{"Stream.RetryAttempts 20000"}},
		// Found by review: a FIFO failure queue synthesized; Lambda takes
		// a standard queue only as a stream mapping's on-failure
		// destination, and the archiver's parking (SendMessage without a
		// message group) fails on one.
		{"FIFO failure queue", &archive.ExpiredEventsArchiveProps{EventsTable: events, Stream: &dynamotable.StreamConsumerOptions{
			FailureQueue: awssqs.NewQueue(stack, jsii.String("FifoFailures"), &awssqs.QueueProps{Fifo: jsii.Bool(true)})}},
			[]string{"Stream.FailureQueue Data/FifoFailures is a FIFO queue", "give a standard queue, or leave it unset"}},
		// Found by review: it synthesized, and CloudFormation refused
		// DeletionPolicy Snapshot on both buckets at deploy.
		{"snapshot removal", &archive.ExpiredEventsArchiveProps{EventsTable: events, RemovalPolicy: awscdk.RemovalPolicy_SNAPSHOT},
			[]string{"RemovalPolicy SNAPSHOT is not supported by S3 buckets", "use awscdk.RemovalPolicy_RETAIN (the default) or RemovalPolicy_DESTROY"}},
		// Found by review: LATEST synthesized; a replaced mapping would
		// start after the TTL deletions already in the stream.
		{"starting at the latest record", &archive.ExpiredEventsArchiveProps{EventsTable: events, Stream: &dynamotable.StreamConsumerOptions{StartingPosition: awslambda.StartingPosition_LATEST}},
			[]string{"Stream.StartingPosition LATEST skips the TTL deletions already in the stream", "leave it unset (TRIM_HORIZON)"}},
		// Found by review: a failure queue keeping messages an hour
		// synthesized; a range given up on at 20 hours would leave the
		// queue before anyone replayed it.
		{"failure queue kept an hour", &archive.ExpiredEventsArchiveProps{EventsTable: events, Stream: &dynamotable.StreamConsumerOptions{
			FailureQueue: awssqs.NewQueue(stack, jsii.String("ShortFailures"), &awssqs.QueueProps{RetentionPeriod: awscdk.Duration_Hours(jsii.Number(1))})}},
			[]string{"Stream.FailureQueue Data/ShortFailures keeps messages 3600 seconds", "use a retention of at least 1 day"}},
		{"imported FIFO failure queue", &archive.ExpiredEventsArchiveProps{EventsTable: events, Stream: &dynamotable.StreamConsumerOptions{
			FailureQueue: awssqs.Queue_FromQueueArn(stack, jsii.String("ImportedFifo"), jsii.String("arn:aws:sqs:us-east-1:123456789012:archive-failures.fifo"))}},
			[]string{"Stream.FailureQueue Data/ImportedFifo is a FIFO queue"}},
	}
	for i, tt := range tests {
		func() {
			defer func() {
				r := recover()
				err, ok := r.(error)
				if !ok {
					t.Errorf("%s: NewExpiredEventsArchive did not panic with an error: %v", tt.name, r)
					return
				}
				for _, w := range tt.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("%s: error = %q, want it to contain %q", tt.name, err, w)
					}
				}
			}()
			archive.NewExpiredEventsArchive(stack, jsii.String(fmt.Sprint("A", i)), tt.props)
		}()
	}
}

func prebuilt(stack awscdk.Stack) *archive.FunctionOptions {
	return &archive.FunctionOptions{Code: awslambda.Code_FromBucket(
		awss3.Bucket_FromBucketName(stack, jsii.String("Artifacts"), jsii.String("ci-artifacts")), jsii.String("archiver.zip"), nil)}
}

func mappingProps(t *testing.T, stack awscdk.Stack) map[string]any {
	t.Helper()
	tmpl := assertions.Template_FromStack(stack, nil)
	ms := *tmpl.FindResources(jsii.String("AWS::Lambda::EventSourceMapping"), nil)
	require.Len(t, ms, 1)
	for _, m := range ms {
		return (*m)["Properties"].(map[string]any)
	}
	return nil
}

// The mapping retries a failing batch until its records are 20 hours
// old (MaximumRetryAttempts -1: no count limit), bisects, takes partial
// batch responses and sends what it gives up on to the encrypted
// failure queue kept 14 days, whose URL the function gets to park
// records it can never archive.
func TestEventSourceMappingDefaults(t *testing.T) {
	stack := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("Data"), nil)
	events := eventstore.NewEventsTable(stack, jsii.String("Events"), nil)
	a := archive.NewExpiredEventsArchive(stack, jsii.String("Archive"), &archive.ExpiredEventsArchiveProps{EventsTable: events, Function: prebuilt(stack)})
	p := mappingProps(t, stack)
	for k, want := range map[string]any{
		"MaximumRetryAttempts":       float64(-1),
		"MaximumRecordAgeInSeconds":  float64(20 * 3600),
		"BisectBatchOnFunctionError": true,
		"FunctionResponseTypes":      []any{"ReportBatchItemFailures"},
		"StartingPosition":           "TRIM_HORIZON",
	} {
		assert.Equal(t, want, p[k], k)
	}
	tmpl := assertions.Template_FromStack(stack, nil)
	queues := *tmpl.FindResources(jsii.String("AWS::SQS::Queue"), nil)
	require.Len(t, queues, 1)
	for id, q := range queues {
		assert.Equal(t, map[string]any{"OnFailure": map[string]any{"Destination": map[string]any{"Fn::GetAtt": []any{id, "Arn"}}}}, p["DestinationConfig"])
		qp := (*q)["Properties"].(map[string]any)
		assert.Equal(t, true, qp["SqsManagedSseEnabled"], "encrypted")
		assert.Equal(t, float64(14*24*3600), qp["MessageRetentionPeriod"], "14 days")
		tmpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
			"Environment": map[string]any{"Variables": assertions.Match_ObjectLike(&map[string]any{
				"DEAD_LETTER_QUEUE_URL": map[string]any{"Ref": id},
			})},
		})
	}
	assert.Equal(t, float64(archive.UnlimitedRetryAttempts), a.RetryAttempts())
	assert.Equal(t, float64(20), *a.MaxRecordAge().ToHours(nil))
}

// Tuned: a bounded retry count and a shorter age are taken as given; the
// bounded count with a warning (found by review: taken silently, it gave
// batches up minutes into an S3 outage while the alarms spoke of the
// maximum age), which the default does not get.
func TestEventSourceMappingTuned(t *testing.T) {
	stack := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("Data"), nil)
	events := eventstore.NewEventsTable(stack, jsii.String("Events"), nil)
	a := archive.NewExpiredEventsArchive(stack, jsii.String("Archive"), &archive.ExpiredEventsArchiveProps{
		EventsTable: events, Function: prebuilt(stack),
		Stream: &dynamotable.StreamConsumerOptions{RetryAttempts: 500, MaxRecordAge: awscdk.Duration_Hours(jsii.Number(12)), BatchSize: 50},
	})
	p := mappingProps(t, stack)
	assert.Equal(t, float64(500), p["MaximumRetryAttempts"])
	assert.Equal(t, float64(12*3600), p["MaximumRecordAgeInSeconds"])
	assert.Equal(t, float64(50), p["BatchSize"])
	assert.Equal(t, float64(500), a.RetryAttempts())
	annotations := assertions.Annotations_FromStack(stack)
	annotations.HasWarning(jsii.String("/Data/Archive"), assertions.Match_StringLikeRegexp(jsii.String(
		`Stream\.RetryAttempts 500 gives a failing batch up after that many retries.*\[ack: @triggers/archive:bounded-retries\]`)))

	param := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("Param"), nil)
	archive.NewExpiredEventsArchive(param, jsii.String("Archive"), &archive.ExpiredEventsArchiveProps{
		EventsTable: eventstore.NewEventsTable(param, jsii.String("Events"), nil), Function: prebuilt(param),
		Stream: &dynamotable.StreamConsumerOptions{RetryAttempts: *awscdk.NewCfnParameter(param, jsii.String("Retries"), &awscdk.CfnParameterProps{Type: jsii.String("Number")}).ValueAsNumber()},
	})
	assertions.Annotations_FromStack(param).HasWarning(jsii.String("/Param/Archive"), assertions.Match_StringLikeRegexp(jsii.String(
		`Stream\.RetryAttempts \(a deploy-time value\) gives a failing batch up`)))

	other := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("Other"), nil)
	archive.NewExpiredEventsArchive(other, jsii.String("Archive"), &archive.ExpiredEventsArchiveProps{
		EventsTable: eventstore.NewEventsTable(other, jsii.String("Events"), nil), Function: prebuilt(other)})
	assertions.Annotations_FromStack(other).HasNoWarning(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String("RetryAttempts")))
}

// MaxPrefixBytes leaves room for the longest key the archiver writes
// (internal/archive.Key): a 128-character tenant id, a 40-digit sequence
// number. S3 takes keys of up to 1,024 bytes.
func TestMaxPrefixBytes(t *testing.T) {
	prefix := strings.Repeat("p", archive.MaxPrefixBytes-1) + "/"
	key := rtarchive.Key(prefix, strings.Repeat("t", 128), "2026-11-27", []string{strings.Repeat("9", 40), "1"})
	assert.Len(t, key, 1024)
}
