package stacks

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/triggers-dev/triggers/constructs/archive"
	"github.com/triggers-dev/triggers/constructs/dynamotable"
	"github.com/triggers-dev/triggers/constructs/eventstore"
	"github.com/triggers-dev/triggers/constructs/triggersapi"
	"github.com/triggers-dev/triggers/schema"
)

// TriggersDataStackProps configures the Triggers stateful stack.
type TriggersDataStackProps struct {
	awscdk.StackProps
	// Env is the environment name, tagged on every resource.
	//
	// Default: "dev".
	Env string
	// Billing is the tables' billing mode (overrides TableOptions.Billing).
	//
	// Default: dynamotable.OnDemand.
	Billing dynamotable.Billing
	// TableOptions apply to both tables. The events table adds, unless
	// set here, an AWS Backup plan (Backup: dynamotable.DefaultBackupRules,
	// daily kept 35 days and monthly kept 365, in its own vault) and
	// Contributor Insights in throttled-keys mode on the table and both
	// GSIs (see eventsTableOptions).
	//
	// Default: dynamotable's defaults, plus the events table's backup plan
	// and Contributor Insights.
	TableOptions dynamotable.TableOptions
	// EventsStreamView is the events table's stream view
	// (eventstore.EventsTableProps.StreamView). Changing it on a deployed
	// table replaces the stream: docs/delivery.md, "Changing the stream
	// view".
	//
	// Default: schema.StreamNewAndOldImages.
	EventsStreamView schema.StreamView
	// EventsProfile is the events table's profile
	// (eventstore.EventsTableProps.Profile): schema.ProfileLean writes
	// each event about half as many times. Choose it before the first
	// deployment: DynamoDB cannot change a deployed index's projection.
	//
	// Default: schema.ProfileSeed.
	EventsProfile schema.EventsProfile
	// EventsSharding lets the events table's tenants be sharded
	// (eventstore.EventsTableProps.Sharding).
	//
	// Default: false.
	EventsSharding bool
	// ArchiveExpiredEvents keeps the events DynamoDB's TTL deletes in an S3
	// archive (archive.ExpiredEventsArchive, id "ExpiredEventsArchive",
	// outputs ArchiveBucketName, ArchiveFailureQueueUrl, ArchiverFunctionName); it needs the
	// old image in the stream.
	//
	// Default: true, unless EventsStreamView is schema.StreamNewImage.
	ArchiveExpiredEvents *bool
	// Archive configures the archive; its EventsTable is set here.
	//
	// Default: archive.ExpiredEventsArchive's defaults.
	Archive archive.ExpiredEventsArchiveProps
}

// TriggersDataStack holds the Triggers service's stateful resources: the
// events table (seeds 000/001) and the API-keys table. Termination
// protection is on.
type TriggersDataStack struct {
	awscdk.Stack
	// Events is the events table.
	Events *eventstore.EventsTable
	// ApiKeys maps API-key hashes to tenants.
	ApiKeys *triggersapi.ApiKeysTable
	// Archive keeps the events TTL deletes; nil when turned off.
	Archive *archive.ExpiredEventsArchive
	// EventsContributorInsights reports whether the events table has
	// Contributor Insights on (the API stack's dashboard then shows it).
	EventsContributorInsights bool
}

// NewTriggersDataStack creates the stack.
func NewTriggersDataStack(scope constructs.Construct, id *string, props *TriggersDataStackProps) *TriggersDataStack {
	if props == nil {
		props = &TriggersDataStackProps{}
	}
	env := envName(props.Env)
	sp := props.StackProps
	if sp.TerminationProtection == nil {
		sp.TerminationProtection = jsii.Bool(true)
	}
	stack := awscdk.NewStack(scope, id, &sp)
	awscdk.Tags_Of(stack).Add(jsii.String("triggers:env"), jsii.String(env), nil)
	awscdk.Tags_Of(stack).Add(jsii.String("triggers:system"), jsii.String("triggers"), nil)

	opts := props.TableOptions
	if props.Billing != "" {
		opts.Billing = props.Billing
	}
	eventsOpts := eventsTableOptions(opts)
	events := eventstore.NewEventsTable(stack, jsii.String("Events"), &eventstore.EventsTableProps{StreamView: props.EventsStreamView, Profile: props.EventsProfile, Sharding: props.EventsSharding, TableOptions: eventsOpts})

	stackName := *stack.StackName() // one jsii read for every export name
	awscdk.NewCfnOutput(stack, jsii.String("EventsTableName"), &awscdk.CfnOutputProps{
		Value: events.TableName(), Description: jsii.String("Events table name"),
		ExportName: jsii.String(stackName + "-EventsTableName"),
	})
	awscdk.NewCfnOutput(stack, jsii.String("EventsTableArn"), &awscdk.CfnOutputProps{
		Value: events.TableArn(), Description: jsii.String("Events table ARN"),
		ExportName: jsii.String(stackName + "-EventsTableArn"),
	})
	awscdk.NewCfnOutput(stack, jsii.String("EventsTableStreamArn"), &awscdk.CfnOutputProps{
		Value: events.TableStreamArn(), Description: jsii.String("Events table stream ARN (" + string(events.StreamView()) + ")"),
		ExportName: jsii.String(stackName + "-EventsTableStreamArn"),
	})
	// The table's path (and so its logical id) is the one addTable gave
	// it: <stack>/ApiKeys/Resource.
	apiKeys := triggersapi.NewApiKeysTable(stack, jsii.String("ApiKeys"), &triggersapi.ApiKeysTableProps{TableOptions: opts})
	awscdk.NewCfnOutput(stack, jsii.String("ApiKeysTableName"), &awscdk.CfnOutputProps{
		Value:       apiKeys.TableName(),
		Description: jsii.String("ApiKeys table name (schema " + apiKeys.Schema().Name + ")"),
		ExportName:  jsii.String(stackName + "-ApiKeysTableName"),
	})
	ds := &TriggersDataStack{Stack: stack, Events: events, ApiKeys: apiKeys, EventsContributorInsights: eventsOpts.ContributorInsights != nil && *eventsOpts.ContributorInsights}
	if on := props.ArchiveExpiredEvents; (on == nil && events.StreamView() != schema.StreamNewImage) || (on != nil && *on) {
		ap := props.Archive
		ap.EventsTable = events
		ds.Archive = archive.NewExpiredEventsArchive(stack, jsii.String("ExpiredEventsArchive"), &ap)
		archiveOutputs(stack, stackName, ds.Archive, "events expired by TTL")
	}
	return ds
}

// archiveOutputs adds the outputs of an archive of expired events:
// ArchiveBucketName (exported as <stack>-ArchiveBucketName; what says
// whose events it keeps), ArchiveFailureQueueUrl and ArchiverFunctionName
// (triggers-replay archive -function).
func archiveOutputs(stack awscdk.Stack, stackName string, a *archive.ExpiredEventsArchive, what string) {
	awscdk.NewCfnOutput(stack, jsii.String("ArchiveBucketName"), &awscdk.CfnOutputProps{
		Value:       a.ArchiveBucket().BucketName(),
		Description: jsii.String("S3 bucket archiving " + what + " (" + *a.ArchivePrefix() + "tenant=<t>/date=<YYYY-MM-DD>/)"),
		ExportName:  jsii.String(stackName + "-ArchiveBucketName"),
	})
	awscdk.NewCfnOutput(stack, jsii.String("ArchiveFailureQueueUrl"), &awscdk.CfnOutputProps{
		Value:       a.FailureQueue().QueueUrl(),
		Description: jsii.String("Archive failure queue: stream ranges the archiver's mapping gave up on (replay within 24 h: triggers-replay archive -from-queue) and records parked as never archivable"),
	})
	awscdk.NewCfnOutput(stack, jsii.String("ArchiverFunctionName"), &awscdk.CfnOutputProps{
		Value:       a.ArchiverFunction().Function.FunctionName(),
		Description: jsii.String("The archiver function, whose failure records triggers-replay archive replays (-function)"),
	})
}
