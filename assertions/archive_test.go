package assertions

import (
	"regexp"
	"sort"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/constructs/archive"
	"github.com/triggers-dev/triggers/constructs/dynamotable"
	"github.com/triggers-dev/triggers/constructs/eventstore"
	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/testkit/cdktest"
	"github.com/triggers-dev/triggers/schema"
	"github.com/triggers-dev/triggers/stacks"
)

// Logical ids of the archive's stateful resources: pinned, since a
// change would replace the bucket (RETAIN keeps the old one, orphaned).
const (
	archiveBucketID     = "ExpiredEventsArchiveBucket2BEBCE8A"
	archiveAccessLogsID = "ExpiredEventsArchiveAccessLogs4D4BE4CA"
)

// archiveResource returns the one resource of typ in the data stack whose
// logical id starts with ExpiredEventsArchive<child>.
func archiveResource(t *testing.T, typ, child string) (string, map[string]any) {
	t.Helper()
	return one(t, tmpl(t, dataStack), typ, "ExpiredEventsArchive"+child)
}

// Story 001 AC3 and seed 002: the archive bucket is encrypted, TLS only,
// private, versioned, logged, and moves objects to Glacier after a year.
func TestArchiveBucket(t *testing.T) {
	id, r := archiveResource(t, "AWS::S3::Bucket", "Bucket")
	assert.Equal(t, archiveBucketID, id, "pinned logical id")
	assert.Equal(t, "Retain", r["DeletionPolicy"])
	assert.Equal(t, "Retain", r["UpdateReplacePolicy"])
	p := cdktest.Props(r)
	assert.JSONEq(t, `{"ServerSideEncryptionConfiguration":[{"ServerSideEncryptionByDefault":{"SSEAlgorithm":"AES256"}}]}`, jsonOf(p["BucketEncryption"]))
	assert.JSONEq(t, `{"BlockPublicAcls":true,"BlockPublicPolicy":true,"IgnorePublicAcls":true,"RestrictPublicBuckets":true}`, jsonOf(p["PublicAccessBlockConfiguration"]))
	assert.JSONEq(t, `{"Status":"Enabled"}`, jsonOf(p["VersioningConfiguration"]))
	assert.JSONEq(t, `{"Rules":[{"ObjectOwnership":"BucketOwnerEnforced"}]}`, jsonOf(p["OwnershipControls"]))
	logsID, logs := archiveResource(t, "AWS::S3::Bucket", "AccessLogs")
	assert.Equal(t, archiveAccessLogsID, logsID, "pinned logical id")
	assert.JSONEq(t, `{"DestinationBucketName":{"Ref":"`+logsID+`"},"LogFilePrefix":"archive/"}`, jsonOf(p["LoggingConfiguration"]))
	assert.JSONEq(t, `{"Rules":[{
	  "Id":"archive-expired-events","Prefix":"expired/","Status":"Enabled",
	  "Transitions":[{"StorageClass":"GLACIER","TransitionInDays":365}],
	  "NoncurrentVersionExpiration":{"NoncurrentDays":90},
	  "AbortIncompleteMultipartUpload":{"DaysAfterInitiation":7}
	}]}`, jsonOf(p["LifecycleConfiguration"]))
	assert.Equal(t, contract.DefaultArchivePrefix, "expired/")

	lp := cdktest.Props(logs)
	assert.JSONEq(t, `{"ServerSideEncryptionConfiguration":[{"ServerSideEncryptionByDefault":{"SSEAlgorithm":"AES256"}}]}`, jsonOf(lp["BucketEncryption"]))
	assert.JSONEq(t, `{"BlockPublicAcls":true,"BlockPublicPolicy":true,"IgnorePublicAcls":true,"RestrictPublicBuckets":true}`, jsonOf(lp["PublicAccessBlockConfiguration"]))
	assert.JSONEq(t, `{"Rules":[{"Id":"expire-access-logs","ExpirationInDays":365,"Status":"Enabled"}]}`, jsonOf(lp["LifecycleConfiguration"]))

	// Both buckets refuse requests without TLS; S3 may deliver logs.
	policies := map[string]string{}
	for _, bp := range cdktest.Resources(tmpl(t, dataStack), "AWS::S3::BucketPolicy") {
		bpp := cdktest.Props(bp)
		policies[bpp["Bucket"].(map[string]any)["Ref"].(string)] = jsonOf(bpp["PolicyDocument"])
	}
	for _, b := range []string{id, logsID} {
		require.Contains(t, policies, b)
		assert.Contains(t, policies[b], `"Condition":{"Bool":{"aws:SecureTransport":"false"}},"Effect":"Deny"`, b)
	}
	assert.Contains(t, policies[logsID], `"Principal":{"Service":"logging.s3.amazonaws.com"}`)
}

// The event source mapping passes only TTL deletions to the archiver, with
// partial batch responses, bisect, retries without a count limit until the
// records are 20 hours old (4 hours before the stream drops them), and an
// encrypted on-failure queue kept 14 days.
func TestArchiveEventSourceMapping(t *testing.T) {
	_, r := archiveResource(t, "AWS::Lambda::EventSourceMapping", "ArchiverFunction")
	p := cdktest.Props(r)
	filters := p["FilterCriteria"].(map[string]any)["Filters"].([]any)
	require.Len(t, filters, 1)
	assert.JSONEq(t, `{"eventName":["REMOVE"],"userIdentity":{"type":["Service"],"principalId":["dynamodb.amazonaws.com"]}}`,
		filters[0].(map[string]any)["Pattern"].(string))
	assert.JSONEq(t, `{"Fn::GetAtt":["Events948F067E","StreamArn"]}`, jsonOf(p["EventSourceArn"]))
	fnID, _ := archiveResource(t, "AWS::Lambda::Function", "ArchiverFunction")
	assert.JSONEq(t, `{"Ref":"`+fnID+`"}`, jsonOf(p["FunctionName"]))
	queueID, _ := archiveResource(t, "AWS::SQS::Queue", "Failures")
	assert.JSONEq(t, `{"OnFailure":{"Destination":{"Fn::GetAtt":["`+queueID+`","Arn"]}}}`, jsonOf(p["DestinationConfig"]))
	_, q := archiveResource(t, "AWS::SQS::Queue", "Failures")
	qp := cdktest.Props(q)
	assert.Equal(t, true, qp["SqsManagedSseEnabled"], "encrypted")
	assert.Equal(t, float64(14*24*3600), qp["MessageRetentionPeriod"], "kept 14 days")
	assert.Less(t, archive.DefaultMaxRecordAgeHours, archive.StreamRetentionHours, "given up while the stream still has the records")
	for k, want := range map[string]any{
		"StartingPosition":           "TRIM_HORIZON",
		"BatchSize":                  float64(dynamotable.DefaultStreamBatchSize),
		"BisectBatchOnFunctionError": true,
		"MaximumRetryAttempts":       float64(-1),
		"MaximumRecordAgeInSeconds":  float64(20 * 3600),
		"ParallelizationFactor":      float64(1),
		"FunctionResponseTypes":      []any{"ReportBatchItemFailures"},
	} {
		assert.Equal(t, want, p[k], k)
	}
}

// The archiver function: arm64 Go, its environment from contract, and a
// role that may write objects under the prefix, read the stream, send to
// its failure queue and write its own logs: action by action, nothing else.
func TestArchiverFunction(t *testing.T) {
	tp := tmpl(t, dataStack)
	_, fn := archiveResource(t, "AWS::Lambda::Function", "ArchiverFunction")
	p := cdktest.Props(fn)
	assert.Equal(t, "provided.al2023", p["Runtime"])
	assert.Equal(t, []any{"arm64"}, p["Architectures"])
	assert.Equal(t, float64(archive.DefaultTimeoutSeconds), p["Timeout"])
	vars := p["Environment"].(map[string]any)["Variables"].(map[string]any)
	queueID, _ := archiveResource(t, "AWS::SQS::Queue", "Failures")
	assert.JSONEq(t, `{"`+contract.EnvArchiveBucket+`":{"Ref":"`+archiveBucketID+`"},"`+contract.EnvArchivePrefix+`":"expired/","`+contract.EnvDeadLetterQueueURL+`":{"Ref":"`+queueID+`"}}`, jsonOf(vars))

	logGroupID, _ := archiveResource(t, "AWS::Logs::LogGroup", "ArchiverFunctionLogGroup")
	var got []string
	for _, st := range roleStatements(t, tp, "ExpiredEventsArchiveArchiverFunctionServiceRole") {
		require.Equal(t, "Allow", st.Effect)
		for _, a := range st.Actions {
			for _, r := range st.Resources {
				got = append(got, a+" on "+jsonOf(r))
			}
		}
	}
	sort.Strings(got)
	object := `{"Fn::Join":["",[{"Fn::GetAtt":["` + archiveBucketID + `","Arn"]},"/expired/*"]]}`
	stream := `{"Fn::GetAtt":["Events948F067E","StreamArn"]}`
	logs := `{"Fn::GetAtt":["` + logGroupID + `","Arn"]}`
	queue := `{"Fn::GetAtt":["` + queueID + `","Arn"]}`
	want := []string{
		"dynamodb:DescribeStream on " + stream,
		"dynamodb:GetRecords on " + stream,
		"dynamodb:GetShardIterator on " + stream,
		`dynamodb:ListStreams on "*"`,
		"logs:CreateLogStream on " + logs,
		"logs:PutLogEvents on " + logs,
		"s3:PutObject on " + object,
		"sqs:GetQueueAttributes on " + queue,
		"sqs:GetQueueUrl on " + queue,
		"sqs:SendMessage on " + queue,
	}
	sort.Strings(want)
	assert.Equal(t, want, got)
}

// The data stack outputs the archive bucket and its failure queue (for
// triggers-replay archive); ArchiveExpiredEvents false (or a NEW_IMAGE
// stream) leaves the archive out.
func TestArchiveWiring(t *testing.T) {
	outs := tmpl(t, dataStack)["Outputs"].(map[string]any)
	require.Contains(t, outs, "ArchiveBucketName")
	assert.JSONEq(t, `{"Ref":"`+archiveBucketID+`"}`, jsonOf(outs["ArchiveBucketName"].(map[string]any)["Value"]))
	queueID, _ := archiveResource(t, "AWS::SQS::Queue", "Failures")
	require.Contains(t, outs, "ArchiveFailureQueueUrl")
	assert.JSONEq(t, `{"Ref":"`+queueID+`"}`, jsonOf(outs["ArchiveFailureQueueUrl"].(map[string]any)["Value"]))
	assert.Contains(t, jsonOf(outs["EventsTableStreamArn"]), "NEW_AND_OLD_IMAGES")

	app, err := cdktest.NewApp("", nil)
	require.NoError(t, err)
	off := stacks.NewTriggersDataStack(app, jsii.String("off"), &stacks.TriggersDataStackProps{ArchiveExpiredEvents: jsii.Bool(false)})
	assert.Nil(t, off.Archive)
	legacy := stacks.NewTriggersDataStack(app, jsii.String("legacy"), &stacks.TriggersDataStackProps{EventsStreamView: "NEW_IMAGE"})
	assert.Nil(t, legacy.Archive, "a NEW_IMAGE stream has no old image to archive")
	for _, s := range []awscdk.Stack{off.Stack, legacy.Stack} {
		assertions.Template_FromStack(s, nil).ResourceCountIs(jsii.String("AWS::S3::Bucket"), jsii.Number(0))
	}
	assert.Panics(t, func() {
		stacks.NewTriggersDataStack(app, jsii.String("conflict"), &stacks.TriggersDataStackProps{EventsStreamView: "NEW_IMAGE", ArchiveExpiredEvents: jsii.Bool(true)})
	})
}

// A restored events table is swapped in by name through context: the API
// stack imports it, and its functions and stream consumer use it.
func TestRestoredEventsTableContext(t *testing.T) {
	const name = "triggers-dev-events-restored-202611231200"
	const arn = "arn:aws:dynamodb:us-east-1:111111111111:table/" + name + "/stream/2026-11-23T12:00:00.000"
	for _, bad := range []map[string]any{
		{stacks.ContextEventsTableName: name},
		{stacks.ContextEventsTableStreamArn: arn},
		{stacks.ContextEventsTableName: "other", stacks.ContextEventsTableStreamArn: arn},
	} {
		_, err := stacks.ConfigFromContext(awscdk.NewApp(&awscdk.AppProps{Context: &bad}))
		require.Error(t, err, "%v", bad)
		assert.Contains(t, err.Error(), "must be given together")
	}
	app, err := cdktest.NewApp("", map[string]any{stacks.ContextEventsTableName: name, stacks.ContextEventsTableStreamArn: arn})
	require.NoError(t, err)
	cfg, err := stacks.ConfigFromContext(app)
	require.NoError(t, err)
	assert.Equal(t, name, cfg.EventsTableName)
	assert.Equal(t, arn, cfg.EventsTableStreamArn)
	stacks.Build(app, cfg)
	api := app.Node().FindChild(jsii.String("triggers-dev-api")).(awscdk.Stack)
	tp := assertions.Template_FromStack(api, nil)
	tp.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), map[string]any{"EventSourceArn": arn})
	// The restored table expires its own items: an archive of the API
	// stack keeps them (the data stack's archive reads the old table's
	// stream only), with the TTL filter, and its outputs.
	assert.Equal(t, 1, archiveMappings(t, tp, arn), "mappings of the restored table's stream with the TTL filter")
	tp.HasOutput(jsii.String("ArchiveBucketName"), map[string]any{"Export": map[string]any{"Name": "triggers-dev-api-ArchiveBucketName"}})
	tp.HasOutput(jsii.String("ArchiveFailureQueueUrl"), assertions.Match_AnyValue())
	text := jsonOf(tp.ToJSON())
	assert.Contains(t, text, `"EVENTS_TABLE":"`+name+`"`)
	// ArchiveExpiredEvents false: no archive in the API stack.
	off, err := cdktest.NewApp("", nil)
	require.NoError(t, err)
	data := stacks.NewTriggersDataStack(off, jsii.String("D"), &stacks.TriggersDataStackProps{})
	noArchive := stacks.NewTriggersApiStack(off, jsii.String("A"), &stacks.TriggersApiStackProps{Data: data, DisableWebhooks: true,
		EventsTable:          &eventstore.EventsTableAttributes{TableName: jsii.String(name), TableStreamArn: jsii.String(arn)},
		ArchiveExpiredEvents: jsii.Bool(false)})
	assert.Nil(t, noArchive.Archive)
	assert.Zero(t, archiveMappings(t, assertions.Template_FromStack(noArchive.Stack, nil), ""), "an archive in the API stack")
	// By default, only where the data stack archives its own table (its
	// stream has the old image the archive needs).
	dataOff := stacks.NewTriggersDataStack(off, jsii.String("D2"), &stacks.TriggersDataStackProps{ArchiveExpiredEvents: jsii.Bool(false)})
	followsData := stacks.NewTriggersApiStack(off, jsii.String("A2"), &stacks.TriggersApiStackProps{Data: dataOff, DisableWebhooks: true,
		EventsTable: &eventstore.EventsTableAttributes{TableName: jsii.String(name), TableStreamArn: jsii.String(arn)}})
	assert.Nil(t, followsData.Archive, "the data stack has no archive: neither has the API stack by default")
	for _, m := range regexp.MustCompile(`.{0,200}Events948F067E.{0,80}`).FindAllString(text, 3) {
		t.Errorf("a reference to the data stack's table is left: %s", m)
	}
	// A NEW_IMAGE data stack: no archive of the imported table by default
	// (a copy or replica of that table streams NEW_IMAGE too), and asking
	// for one is refused with the fix, rather than an archive that parks
	// every record.
	dataNew := stacks.NewTriggersDataStack(off, jsii.String("D3"), &stacks.TriggersDataStackProps{EventsStreamView: schema.StreamNewImage})
	imported := &eventstore.EventsTableAttributes{TableName: jsii.String(name), TableStreamArn: jsii.String(arn)}
	assert.Nil(t, stacks.NewTriggersApiStack(off, jsii.String("A3"), &stacks.TriggersApiStackProps{Data: dataNew, DisableWebhooks: true, EventsTable: imported}).Archive)
	bad, err := cdktest.NewApp("", nil)
	require.NoError(t, err)
	badData := stacks.NewTriggersDataStack(bad, jsii.String("D"), &stacks.TriggersDataStackProps{EventsStreamView: schema.StreamNewImage})
	assert.PanicsWithValue(t, "stacks: TriggersApiStackProps.ArchiveExpiredEvents is true, but the data stack's events table streams NEW_IMAGE (TriggersDataStackProps.EventsStreamView), "+
		"and so does the imported EventsTable (a restored copy or a replica of it): the archive needs NEW_AND_OLD_IMAGES, the old image of a TTL delete, or it parks every record. "+
		`Change the stream view first (docs/delivery.md, "Changing the stream view") or leave ArchiveExpiredEvents unset`, func() {
		stacks.NewTriggersApiStack(bad, jsii.String("A"), &stacks.TriggersApiStackProps{Data: badData, DisableWebhooks: true, EventsTable: imported, ArchiveExpiredEvents: jsii.Bool(true)})
	})
}
