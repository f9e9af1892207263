// Package archive provides ExpiredEventsArchive: the archive of the events
// DynamoDB's TTL deletes from the events table (story 001 AC3), in an S3
// bucket that moves them to Glacier after a year (seed 002's archive line).
//
// A Go function (lambda/archiver, runtime in internal/archive) reads the
// events table's stream through an event source mapping whose filter
// passes only TTL deletions (eventName REMOVE, userIdentity
// dynamodb.amazonaws.com), so inserts and status changes never invoke it.
// It writes each expired event's JSON, as the API returned it, to
//
//	s3://<bucket>/expired/tenant=<tenant>/date=<YYYY-MM-DD>/<batch id>.jsonl.gz
//
// as gzip-compressed JSON lines. The stream must carry the old image: the
// events table's default view, NEW_AND_OLD_IMAGES.
//
// Expired events are archived or kept, never silently dropped: the
// mapping retries a failing batch without limit until its records are
// DefaultMaxRecordAgeHours old, then describes them on the failure queue
// while DynamoDB still keeps them (24 hours), for cmd/triggers-replay to
// re-archive; records the function can never archive are parked there
// with their content. docs/runbook.md, "Archive of expired events", has
// the window and the commands.
package archive

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/triggers-dev/triggers/constructs/dynamotable"
	"github.com/triggers-dev/triggers/constructs/eventstore"
	"github.com/triggers-dev/triggers/constructs/golambda"
	"github.com/triggers-dev/triggers/constructs/internal/cdkutil"
	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/schema"
)

// ArchiverPackage is the archiver function's main package, built by import
// path in the CDK app's module; PrebuiltSubdir is its directory under
// ExpiredEventsArchiveProps.PrebuiltDir.
const (
	ArchiverPackage = "github.com/triggers-dev/triggers/lambda/archiver"
	PrebuiltSubdir  = "archiver"
)

// Defaults of ExpiredEventsArchiveProps.
const (
	DefaultTransitionAfterDays             = 365
	DefaultNoncurrentVersionExpirationDays = 90
	DefaultAccessLogsExpirationDays        = 365
	DefaultTimeoutSeconds                  = 60
	DefaultPrefix                          = contract.DefaultArchivePrefix
)

// MaxPrefixBytes is the longest Prefix: S3 keys have at most 1,024 bytes,
// and the rest of an archive key takes up to 218 ("tenant=", a tenant id
// of up to 128 characters that need no escaping, "/date=YYYY-MM-DD/", a
// stream sequence number of up to 40 digits, "-", 16 hex digits,
// ".jsonl.gz").
const MaxPrefixBytes = 1024 - 218

// The event source mapping's patience. DynamoDB keeps stream records for
// StreamRetentionHours; the mapping retries a failing batch without limit
// (UnlimitedRetryAttempts) until its records are MaxRecordAge old
// (DefaultMaxRecordAgeHours), then sends their description to the failure
// queue. That description names stream positions, not the records, so
// they must be replayed before they leave the stream: MaxRecordAge may be
// at most MaxMaxRecordAgeHours, leaving at least an hour for that.
//
// Why 20 hours: the ArchiverIteratorAge alarm (constructs/monitoring)
// pages after the oldest record has waited an hour, leaving about 19
// hours in which a fixed S3 (or bucket policy, or key) lets the mapping
// catch up by itself; a batch still failing at 20 hours is given up with
// its records still readable for about 4 more hours, and the failure
// queue's alarm pages at once (docs/runbook.md).
//
// StreamRetentionHours and MaxMaxRecordAgeHours are dynamotable's
// (dynamotable.StreamRetentionHours, dynamotable.MaxStreamMaxRecordAgeHours):
// every stream consumer has that bound.
const (
	StreamRetentionHours     = dynamotable.StreamRetentionHours
	DefaultMaxRecordAgeHours = 20
	MaxMaxRecordAgeHours     = dynamotable.MaxStreamMaxRecordAgeHours
	// MinMaxRecordAgeSeconds is Lambda's lower bound of
	// MaximumRecordAgeInSeconds.
	MinMaxRecordAgeSeconds = 60
	// UnlimitedRetryAttempts is MaximumRetryAttempts -1: retry until the
	// maximum record age.
	UnlimitedRetryAttempts = -1
	// MaxRetryAttempts is Lambda's upper bound of a finite
	// MaximumRetryAttempts.
	MaxRetryAttempts = 10000
	// MinFailureRetentionSeconds is the shortest retention of a given
	// Stream.FailureQueue: a day, the stream's retention, within which a
	// range given up on is replayed.
	MinFailureRetentionSeconds = 24 * 3600
)

// WarningBoundedRetries is the id of the synth warning on a bounded
// Stream.RetryAttempts (acknowledge it with
// awscdk.Annotations_Of(archive).AcknowledgeWarning).
const WarningBoundedRetries = "@triggers/archive:bounded-retries"

// The stream filter of the archiver's event source mapping (TTLFilter):
// the REMOVE records DynamoDB's TTL makes. Lambda invokes the function for
// these only.
const (
	TTLEventName     = "REMOVE"
	TTLIdentityType  = "Service"
	TTLIdentityPrinc = "dynamodb.amazonaws.com"
)

// ArchiverPutActions returns the archiver's only S3 actions, on the
// prefix. It returns a new slice each call.
func ArchiverPutActions() []string { return slices.Clone(archiverPutActions) }

var archiverPutActions = []string{"s3:PutObject"}

// FunctionOptions size, place and build the archiver function, or give its
// prebuilt code (a bootstrap built from ArchiverPackage for its
// Architecture): golambda.FunctionOptions. Zero values take the defaults
// (256 MiB, 60 seconds).
type FunctionOptions = golambda.FunctionOptions

// ExpiredEventsArchiveProps configures an ExpiredEventsArchive.
type ExpiredEventsArchiveProps struct {
	// EventsTable is the table whose TTL deletions are archived; its
	// stream must be known (a table made here, or imported with
	// TableStreamArn) and carry the old image. Required.
	EventsTable eventstore.IEventsTable
	// Prefix starts every object key; it ends in "/" and has at most
	// MaxPrefixBytes bytes. The function may write under it only.
	//
	// Default: "expired/".
	Prefix string
	// TransitionAfter moves archived objects to StorageClass this long
	// after they were written.
	//
	// Default: 365 days (seed 002: "archive after 1 year to S3 Glacier").
	TransitionAfter awscdk.Duration
	// StorageClass is where objects go after TransitionAfter:
	// awss3.StorageClass_GLACIER() (Flexible Retrieval, minutes to hours),
	// StorageClass_GLACIER_INSTANT_RETRIEVAL() or StorageClass_DEEP_ARCHIVE().
	//
	// Default: awss3.StorageClass_GLACIER().
	StorageClass awss3.StorageClass
	// Expiration deletes archived objects this long after they were
	// written: whole days, later than TransitionAfter.
	//
	// Default: never (kept until deleted by hand).
	Expiration awscdk.Duration
	// NoncurrentVersionExpiration deletes overwritten or deleted versions
	// (the bucket is versioned; a retried batch overwrites its objects)
	// this long after they are replaced: whole days, at least 1.
	//
	// Default: 90 days.
	NoncurrentVersionExpiration awscdk.Duration
	// EncryptionKey is a customer-managed KMS key for the bucket (SSE-KMS
	// with an S3 bucket key); the function may generate data keys with it.
	//
	// Default: SSE-S3 (S3-managed keys).
	EncryptionKey awskms.IKey
	// AccessLogsBucket receives the bucket's server access logs (it must
	// accept them: SSE-S3, a policy for logging.s3.amazonaws.com).
	//
	// Default: a new bucket (SSE-S3, TLS only, no public access, logs kept
	// 365 days).
	AccessLogsBucket awss3.IBucket
	// RemovalPolicy of the bucket (and of the new access logs bucket):
	// RETAIN, RETAIN_ON_UPDATE_OR_DELETE or DESTROY (S3 has no SNAPSHOT).
	//
	// Default: awscdk.RemovalPolicy_RETAIN.
	RemovalPolicy awscdk.RemovalPolicy
	// Stream tunes the event source mapping; its Filters are replaced by
	// the TTL filter. RetryAttempts 0 means no limit (MaximumRetryAttempts
	// -1: retried until MaxRecordAge); 1-10000 bounds the retries (a
	// batch may then be given up on long before MaxRecordAge, and waits
	// for a person to replay it: a synth warning, WarningBoundedRetries).
	// MaxRecordAge must be 1 minute to 23 hours: records older than it
	// are given up on, described on the failure queue, and must be
	// replayed (cmd/triggers-replay archive) before the stream drops
	// them at 24 hours. StartingPosition must be TRIM_HORIZON (LATEST
	// would skip the deletions in the stream when the mapping is
	// replaced). A given FailureQueue must be a standard queue of the
	// archive's own (triggers-replay archive deletes the ranges it
	// replays: another consumer's would be lost to it; it leaves the
	// records of another function alone) that keeps messages a day or
	// more (MinFailureRetentionSeconds).
	//
	// Default: dynamotable's stream consumer defaults (TRIM_HORIZON, batch
	// 100, bisect on error, partial batch responses, a new on-failure
	// queue kept 14 days) with unlimited retries and MaxRecordAge 20
	// hours (DefaultMaxRecordAgeHours).
	Stream *dynamotable.StreamConsumerOptions
	// Function sizes the archiver function or gives its code.
	//
	// Default: 256 MiB, 60 seconds, built at synth.
	Function *FunctionOptions
	// PrebuiltDir holds the archiver's binary in archiver/bootstrap
	// (scripts/build-lambdas.sh writes bin/archiver/bootstrap: pass "bin").
	// Function.Code takes precedence.
	//
	// Default: built at synth from ArchiverPackage.
	PrebuiltDir string
	// LogRetention of the function's logs.
	//
	// Default: awslogs.RetentionDays_ONE_MONTH.
	LogRetention awslogs.RetentionDays
	// Tracing turns on AWS X-Ray active tracing for the function.
	//
	// Default: false.
	Tracing bool
}

// IExpiredEventsArchive is the archive of expired events.
type IExpiredEventsArchive interface {
	constructs.IConstruct
	// ArchiveBucket returns the bucket holding the archive.
	ArchiveBucket() awss3.IBucket
	// ArchivePrefix returns the key prefix of archived objects.
	ArchivePrefix() *string
	// GrantReadArchive lets grantee read (GetObject, List) the archived
	// objects, for audits and restores.
	GrantReadArchive(grantee awsiam.IGrantable) awsiam.Grant
}

// ExpiredEventsArchive is the archive bucket, the archiver function and
// its event source mapping on the events table's stream. Its children:
// "Bucket", "AccessLogs" (unless given), "ArchiverFunction", "Failures"
// (unless Stream.FailureQueue is given).
type ExpiredEventsArchive struct {
	constructs.Construct

	bucket   awss3.Bucket
	logs     awss3.IBucket
	prefix   string
	fn       *golambda.GoFunction
	failures awssqs.IQueue
	source   *dynamotable.StreamConsumer
	maxAge   awscdk.Duration
	retries  float64
}

var _ IExpiredEventsArchive = (*ExpiredEventsArchive)(nil)

// ArchiveBucket returns the bucket holding the archive.
func (a *ExpiredEventsArchive) ArchiveBucket() awss3.IBucket { return a.bucket }

// ArchivePrefix returns the key prefix of archived objects.
func (a *ExpiredEventsArchive) ArchivePrefix() *string { return jsii.String(a.prefix) }

// AccessLogsBucket returns the bucket receiving the archive bucket's
// server access logs.
func (a *ExpiredEventsArchive) AccessLogsBucket() awss3.IBucket { return a.logs }

// ArchiverFunction returns the function writing the archive.
func (a *ExpiredEventsArchive) ArchiverFunction() *golambda.GoFunction { return a.fn }

// FailureQueue returns the event source mapping's on-failure destination:
// descriptions of stream records the mapping gave up on (replay them from
// the stream before they are 24 hours old: cmd/triggers-replay archive),
// and the records the function parked because they can never be
// archived.
func (a *ExpiredEventsArchive) FailureQueue() awssqs.IQueue { return a.failures }

// MaxRecordAge returns the event source mapping's maximum record age:
// records still failing at this age are given up on (described on the
// failure queue).
func (a *ExpiredEventsArchive) MaxRecordAge() awscdk.Duration { return a.maxAge }

// RetryAttempts returns the event source mapping's MaximumRetryAttempts:
// UnlimitedRetryAttempts (-1) unless Stream.RetryAttempts was given.
func (a *ExpiredEventsArchive) RetryAttempts() float64 { return a.retries }

// GrantReadArchive lets grantee read the archived objects (s3:GetObject*,
// s3:List*) under the prefix, and decrypt them with a customer-managed key.
func (a *ExpiredEventsArchive) GrantReadArchive(grantee awsiam.IGrantable) awsiam.Grant {
	return a.bucket.GrantRead(grantee, jsii.String(a.prefix+"*"))
}

// validate checks props and returns every problem at once.
func validate(p *ExpiredEventsArchiveProps) error {
	var errs []string
	if p.EventsTable == nil {
		errs = append(errs, "EventsTable is required: pass the events table whose TTL deletions to archive")
	} else {
		switch v := p.EventsTable.Schema().Stream; v {
		case schema.StreamNewAndOldImages, schema.StreamOldImage:
		default:
			errs = append(errs, fmt.Sprintf("the events table's stream view is %q, which has no old image: set eventstore.EventsTableProps.StreamView to schema.StreamNewAndOldImages (the default)", v))
		}
	}
	if p.Prefix != "" && (!strings.HasSuffix(p.Prefix, "/") || strings.HasPrefix(p.Prefix, "/") || strings.ContainsAny(p.Prefix, "*?")) {
		errs = append(errs, fmt.Sprintf("Prefix %q must end in \"/\", not start with one and hold no wildcard (such as %q)", p.Prefix, DefaultPrefix))
	}
	// A longer one synthesized and deployed, and S3 refused the objects
	// of long tenant ids (KeyTooLongError) on every retry.
	if n := len(p.Prefix); n > MaxPrefixBytes {
		errs = append(errs, fmt.Sprintf("Prefix is %d bytes long: use at most %d (MaxPrefixBytes), or S3 refuses the keys of long tenant ids (1,024 bytes at most)", n, MaxPrefixBytes))
	}
	// CloudFormation has no snapshot of a bucket: the template
	// synthesized and the deploy failed on its DeletionPolicy.
	if p.RemovalPolicy == awscdk.RemovalPolicy_SNAPSHOT {
		errs = append(errs, "RemovalPolicy SNAPSHOT is not supported by S3 buckets (CloudFormation refuses DeletionPolicy Snapshot on AWS::S3::Bucket at deploy): use awscdk.RemovalPolicy_RETAIN (the default) or RemovalPolicy_DESTROY")
	}
	if p.StorageClass != nil {
		switch v := *p.StorageClass.Value(); v {
		case "GLACIER", "GLACIER_IR", "DEEP_ARCHIVE":
		default:
			errs = append(errs, fmt.Sprintf("StorageClass %q is not an archive class: use awss3.StorageClass_GLACIER(), StorageClass_GLACIER_INSTANT_RETRIEVAL() or StorageClass_DEEP_ARCHIVE()", v))
		}
	}
	days := func(d awscdk.Duration) (float64, bool) {
		if d == nil || cdkutil.IsDurationToken(d) {
			return 0, false
		}
		return *d.ToDays(&awscdk.TimeConversionOptions{Integral: jsii.Bool(false)}), true
	}
	transition := float64(DefaultTransitionAfterDays)
	if d, ok := days(p.TransitionAfter); ok {
		if d < 1 || d != float64(int(d)) {
			errs = append(errs, fmt.Sprintf("TransitionAfter %v days must be a whole number of days, at least 1", d))
		}
		transition = d
	}
	if d, ok := days(p.Expiration); ok {
		switch {
		case d != float64(int(d)):
			errs = append(errs, fmt.Sprintf("Expiration %v days must be a whole number of days: S3 expires objects whole days after they are written", d))
		case d <= transition:
			errs = append(errs, fmt.Sprintf("Expiration %v days must be later than TransitionAfter (%v days): objects would be deleted before they reach the archive class", d, transition))
		}
	}
	// S3 takes NoncurrentDays as a positive integer.
	if d, ok := days(p.NoncurrentVersionExpiration); ok && (d < 1 || d != float64(int(d))) {
		errs = append(errs, fmt.Sprintf("NoncurrentVersionExpiration %v days must be a whole number of days, at least 1: S3 deletes noncurrent versions whole days after they are replaced (default %d)", d, DefaultNoncurrentVersionExpirationDays))
	}
	if so := p.Stream; so != nil {
		if d := so.MaxRecordAge; d != nil && !cdkutil.IsDurationToken(d) {
			secs := *d.ToSeconds(&awscdk.TimeConversionOptions{Integral: jsii.Bool(false)})
			switch {
			case secs < MinMaxRecordAgeSeconds:
				errs = append(errs, fmt.Sprintf("Stream.MaxRecordAge %v seconds is below Lambda's minimum of %d seconds: use at least 1 minute (default %d hours)", secs, MinMaxRecordAgeSeconds, DefaultMaxRecordAgeHours))
			case secs > MaxMaxRecordAgeHours*3600:
				errs = append(errs, fmt.Sprintf("Stream.MaxRecordAge %v hours leaves less than an hour of the stream's %d-hour retention: records given up on are described on the failure queue by stream position only and must be replayed from the stream before it drops them; use at most %d hours (default %d)", secs/3600, StreamRetentionHours, MaxMaxRecordAgeHours, DefaultMaxRecordAgeHours))
			}
		}
		if r := so.RetryAttempts; r != 0 && !isToken(r) && (r < 0 || r > MaxRetryAttempts || r != float64(int64(r))) {
			errs = append(errs, fmt.Sprintf("Stream.RetryAttempts %v is not a whole number from 1 to %d: leave it 0 to retry until Stream.MaxRecordAge (the default), or bound the retries", r, MaxRetryAttempts))
		}
		// LATEST starts a new or replaced mapping after the records already
		// in the stream: TTL deletions made before it would never be read.
		if sp := so.StartingPosition; sp != "" && sp != awslambda.StartingPosition_TRIM_HORIZON {
			errs = append(errs, fmt.Sprintf("Stream.StartingPosition %s skips the TTL deletions already in the stream when the mapping is created or replaced: they would never be archived; leave it unset (TRIM_HORIZON)", sp))
		}
		if q := so.FailureQueue; q != nil {
			if cfn, ok := q.Node().DefaultChild().(awssqs.CfnQueue); ok {
				if r := cfn.MessageRetentionPeriod(); r != nil && !isToken(*r) && *r < MinFailureRetentionSeconds {
					errs = append(errs, fmt.Sprintf("Stream.FailureQueue %s keeps messages %v seconds: a range given up on must stay on the queue until it is replayed, as long as the stream keeps its records (%d hours); use a retention of at least 1 day (the archive's own queue keeps them %d days)", *q.Node().Path(), *r, StreamRetentionHours, dynamotable.DefaultFailureQueueRetentionDay))
				}
			}
		}
		// Lambda takes a standard queue only as a stream mapping's
		// on-failure destination, and the archiver parks records there
		// with SendMessage without a message group, which a FIFO queue
		// refuses: every malformed record would hold its shard up.
		if q := so.FailureQueue; q != nil && q.Fifo() != nil && *q.Fifo() {
			errs = append(errs, fmt.Sprintf("Stream.FailureQueue %s is a FIFO queue: Lambda sends a DynamoDB stream mapping's discarded batches to a standard queue only, and the archiver parks the records it can never archive there without a message group; give a standard queue, or leave it unset for the archive's own (Failures)", *q.Node().Path()))
		}
	}
	if o := p.Function; o != nil {
		if err := o.Validate(); err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				errs = append(errs, "Function."+line)
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return nil
}

// NewExpiredEventsArchive creates the archive. Invalid props panic with an
// error naming each bad value and its fix.
func NewExpiredEventsArchive(scope constructs.Construct, id *string, props *ExpiredEventsArchiveProps) *ExpiredEventsArchive {
	if props == nil {
		props = &ExpiredEventsArchiveProps{}
	}
	if err := validate(props); err != nil {
		panic(fmt.Errorf("archive %q: invalid props:\n%w", cdkutil.Deref(id), err))
	}
	a := &ExpiredEventsArchive{prefix: props.Prefix}
	if a.prefix == "" {
		a.prefix = DefaultPrefix
	}
	constructs.NewConstruct_Override(a, scope, id)
	removal := props.RemovalPolicy
	if removal == "" {
		removal = awscdk.RemovalPolicy_RETAIN
	}

	a.logs = props.AccessLogsBucket
	if a.logs == nil {
		// With the feature flag (cdk.json sets it) S3 delivers access logs
		// under a bucket policy and ACLs stay off; without it CDK grants the
		// log delivery group an ACL, which needs ObjectWriter ownership.
		owner := awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED
		if !*awscdk.FeatureFlags_Of(scope).IsEnabled(jsii.String("@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy")) {
			owner = awss3.ObjectOwnership_OBJECT_WRITER
		}
		logs := awss3.NewBucket(a, jsii.String("AccessLogs"), &awss3.BucketProps{
			Encryption:        awss3.BucketEncryption_S3_MANAGED,
			BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
			EnforceSSL:        jsii.Bool(true),
			ObjectOwnership:   owner,
			RemovalPolicy:     removal,
			LifecycleRules: &[]*awss3.LifecycleRule{{
				Id:         jsii.String("expire-access-logs"),
				Expiration: awscdk.Duration_Days(jsii.Number(DefaultAccessLogsExpirationDays)),
			}},
		})
		cdkutil.Suppress(logs, "AwsSolutions-S1", "this bucket receives the archive bucket's server access logs; logging it to itself would loop")
		a.logs = logs
	}

	transition := props.TransitionAfter
	if transition == nil {
		transition = awscdk.Duration_Days(jsii.Number(DefaultTransitionAfterDays))
	}
	class := props.StorageClass
	if class == nil {
		class = awss3.StorageClass_GLACIER()
	}
	noncurrent := props.NoncurrentVersionExpiration
	if noncurrent == nil {
		noncurrent = awscdk.Duration_Days(jsii.Number(DefaultNoncurrentVersionExpirationDays))
	}
	bp := &awss3.BucketProps{
		Encryption:             awss3.BucketEncryption_S3_MANAGED,
		BlockPublicAccess:      awss3.BlockPublicAccess_BLOCK_ALL(),
		EnforceSSL:             jsii.Bool(true),
		ObjectOwnership:        awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
		Versioned:              jsii.Bool(true),
		ServerAccessLogsBucket: a.logs,
		ServerAccessLogsPrefix: jsii.String("archive/"),
		RemovalPolicy:          removal,
		LifecycleRules: &[]*awss3.LifecycleRule{{
			Id:                                  jsii.String("archive-expired-events"),
			Prefix:                              jsii.String(a.prefix),
			Transitions:                         &[]*awss3.Transition{{StorageClass: class, TransitionAfter: transition}},
			Expiration:                          props.Expiration,
			NoncurrentVersionExpiration:         noncurrent,
			AbortIncompleteMultipartUploadAfter: awscdk.Duration_Days(jsii.Number(7)),
		}},
	}
	if props.EncryptionKey != nil {
		bp.Encryption = awss3.BucketEncryption_KMS
		bp.EncryptionKey = props.EncryptionKey
		bp.BucketKeyEnabled = jsii.Bool(true)
	}
	a.bucket = awss3.NewBucket(a, jsii.String("Bucket"), bp)

	retention := props.LogRetention
	if retention == "" {
		retention = awslogs.RetentionDays_ONE_MONTH
	}
	fp := &golambda.GoFunctionProps{
		Description:  jsii.String("Triggers archiver: events expired by TTL to S3"),
		LogRetention: retention,
		Tracing:      props.Tracing,
	}
	if o := props.Function; o != nil {
		fp.FunctionOptions = *o
	}
	if fp.Timeout == nil {
		fp.Timeout = awscdk.Duration_Seconds(jsii.Number(DefaultTimeoutSeconds))
	}
	var err error
	if fp.Environment, err = fp.MergeEnvironment(map[string]*string{
		contract.EnvArchiveBucket: a.bucket.BucketName(),
		contract.EnvArchivePrefix: jsii.String(a.prefix),
	}); err != nil {
		panic(fmt.Errorf("archive %q: Function.%w", cdkutil.Deref(id), err))
	}
	switch {
	case fp.Code != nil:
	case props.PrebuiltDir != "":
		fp.PrebuiltDir = filepath.Join(props.PrebuiltDir, PrebuiltSubdir)
	default:
		fp.Entry = ArchiverPackage
	}
	a.fn = golambda.NewGoFunction(a, jsii.String("ArchiverFunction"), fp)
	// cdk-nag's Serverless pack: DeadLetterConfig catches failed
	// asynchronous invocations only; this function is invoked by the
	// stream's event source mapping, whose failures have a destination.
	cdkutil.Suppress(a.fn.Function, "Serverless-LambdaDLQ", "invoked by the events stream's event source mapping only, whose failed batches go to its on-failure destination (Failures)")
	if !props.Tracing {
		cdkutil.Suppress(a.fn.Function, "Serverless-LambdaTracing", "X-Ray tracing is opt-in (ExpiredEventsArchiveProps.Tracing): the function makes only S3 PutObject calls, logged in JSON with the batch's sequence numbers, and active tracing costs per trace")
	}

	// s3:PutObject under the prefix, nothing else (no ACLs, no tagging,
	// no reads, no deletes).
	a.fn.Role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings(archiverPutActions...),
		Resources: jsii.Strings(*a.bucket.ArnForObjects(jsii.String(a.prefix + "*"))),
	}))
	if props.EncryptionKey != nil {
		props.EncryptionKey.Grant(a.fn.Role, jsii.String("kms:GenerateDataKey"))
	}
	cdkutil.Suppress(a.fn.Role, "AwsSolutions-IAM5", "s3:PutObject is scoped to the archive prefix (<bucket>/"+a.prefix+"*: object keys are generated per tenant and day); dynamodb:ListStreams supports no resource-level permissions", "Resource::*",
		&cdknag.RegexAppliesTo{Regex: jsii.String(`/^Resource::<[A-Za-z0-9]+\.Arn>\/` + strings.ReplaceAll(regexp.QuoteMeta(a.prefix), "/", `\/`) + `\*$/`)})

	so := dynamotable.StreamConsumerOptions{}
	if props.Stream != nil {
		so = *props.Stream
	}
	if so.MaxRecordAge == nil {
		so.MaxRecordAge = awscdk.Duration_Hours(jsii.Number(DefaultMaxRecordAgeHours))
	}
	a.maxAge = so.MaxRecordAge
	a.retries = so.RetryAttempts
	unlimited := so.RetryAttempts == 0
	if unlimited {
		// The L2 takes 0-10000 only; the mapping is set to -1 below.
		so.RetryAttempts = MaxRetryAttempts
		a.retries = UnlimitedRetryAttempts
	}
	if so.FailureQueue == nil {
		q := cdkutil.NewTLSOnlyQueue(a, "Failures", &awssqs.QueueProps{
			RetentionPeriod: awscdk.Duration_Days(jsii.Number(dynamotable.DefaultFailureQueueRetentionDay)),
		})
		cdkutil.Suppress(q, "AwsSolutions-SQS3", "this queue is the archiver's on-failure destination: it already is the dead-letter queue of the event source mapping")
		cdkutil.Suppress(q, "Serverless-SQSRedrivePolicy", "this queue is the archiver's on-failure destination and dead-letter queue: descriptions of given-up batches end here, with no further redrive")
		so.FailureQueue = q
	}
	so.Filters = []*map[string]any{TTLFilter()}
	// TTL deletes one copy of an item, in one region; other replicas get
	// a replicated REMOVE without the TTL identity, which TTLFilter
	// drops: every expired event is archived once, wherever it expired.
	so.AllOrigins = true
	a.source = props.EventsTable.AddStreamConsumer(a.fn.Invocable(), &so)
	a.failures = a.source.FailureQueue
	if unlimited {
		mapping(a.fn.Invocable()).AddPropertyOverride(jsii.String("MaximumRetryAttempts"), jsii.Number(UnlimitedRetryAttempts))
	} else {
		n := fmt.Sprint(so.RetryAttempts)
		if isToken(so.RetryAttempts) {
			n = "(a deploy-time value)"
		}
		awscdk.Annotations_Of(a).AddWarningV2(jsii.String(WarningBoundedRetries), jsii.String(fmt.Sprintf(
			"Stream.RetryAttempts %s gives a failing batch up after that many retries, perhaps minutes into an S3 outage, instead of retrying it until Stream.MaxRecordAge: "+
				"every batch given up on waits on the failure queue for a person to replay it (triggers-replay archive) before the stream drops its records at %d hours, "+
				"where the default would have archived it by itself once S3 was back. Leave RetryAttempts 0 unless you mean that; the alarms say which applies",
			n, StreamRetentionHours)))
	}
	// Records that can never be archived are parked on the same queue,
	// with their content (the mapping's destination grant lets the role
	// send to it).
	a.fn.Function.AddEnvironment(jsii.String(contract.EnvDeadLetterQueueURL), a.failures.QueueUrl(), nil)
	return a
}

// mapping returns the L1 of the stream event source mapping that
// AddStreamConsumer added to fn, the function or its alias (its child
// "DynamoDBEventSource:<table>").
func mapping(fn awslambda.IFunction) awscdk.CfnResource {
	for _, c := range *fn.Node().Children() {
		if strings.HasPrefix(*c.Node().Id(), "DynamoDBEventSource:") {
			return c.Node().DefaultChild().(awscdk.CfnResource)
		}
	}
	panic("archive: the archiver function has no DynamoDB event source mapping")
}

// isToken reports whether v is an unresolved number token.
func isToken(v float64) bool { return *awscdk.Token_IsUnresolved(jsii.Number(v)) }

// TTLFilter is the event source mapping's filter: REMOVE records whose
// user identity is DynamoDB's TTL service.
func TTLFilter() *map[string]any {
	return awslambda.FilterCriteria_Filter(&map[string]any{
		"eventName": awslambda.FilterRule_IsEqual(jsii.String(TTLEventName)),
		"userIdentity": map[string]any{
			"type":        awslambda.FilterRule_IsEqual(jsii.String(TTLIdentityType)),
			"principalId": awslambda.FilterRule_IsEqual(jsii.String(TTLIdentityPrinc)),
		},
	})
}
