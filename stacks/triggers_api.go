package stacks

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/triggers-dev/triggers/constructs/archive"
	"github.com/triggers-dev/triggers/constructs/eventstore"
	"github.com/triggers-dev/triggers/constructs/monitoring"
	"github.com/triggers-dev/triggers/constructs/triggersapi"
	"github.com/triggers-dev/triggers/schema"
)

// TriggersApiStackProps configures the Triggers stateless stack.
type TriggersApiStackProps struct {
	awscdk.StackProps
	// Data is the stateful stack whose tables the API uses. Required.
	Data *TriggersDataStack
	// EventsTable imports this events table instead of Data.Events: a
	// table restored with PITR or from a backup, swapped in by name
	// (docs/runbook.md, "PITR restore"; context keys
	// triggers:events-table-name and triggers:events-table-stream-arn).
	// TableName and TableStreamArn are required (the stream consumer
	// reads the stream).
	//
	// Default: Data.Events.
	EventsTable *eventstore.EventsTableAttributes
	// ArchiveExpiredEvents keeps the events TTL deletes from EventsTable
	// in an S3 archive of this stack (archive.ExpiredEventsArchive, id
	// "ExpiredEventsArchive", outputs ArchiveBucketName,
	// ArchiveFailureQueueUrl and ArchiverFunctionName), as the data stack's archive does for its
	// own table, which never sees another table's records: a restored
	// table expires its own items, and a global table's replica in this
	// region expires some of them itself (TTL deletes an item in one
	// region; the others get a replicated delete, which the archive's
	// filter drops). Ignored without EventsTable.
	//
	// Default: true with EventsTable when the data stack archives its own
	// table (Data.Archive set; the imported table then has the same
	// NEW_AND_OLD_IMAGES stream, which the archive needs). True while the
	// data stack's table streams NEW_IMAGE panics with the fix: a copy or
	// replica of it streams NEW_IMAGE too, and the archive would park
	// every record.
	ArchiveExpiredEvents *bool
	// Archive configures that archive; its EventsTable is set here.
	//
	// Default: archive.ExpiredEventsArchive's defaults.
	Archive archive.ExpiredEventsArchiveProps
	// ApiKeysTable imports this API-keys table instead of Data.ApiKeys: in
	// a replica region of a global table, its replica there (context key
	// triggers:api-keys-table-name; docs/multi-region.md). TableName or
	// TableArn is required.
	//
	// Default: Data.ApiKeys.
	ApiKeysTable *triggersapi.ApiKeysTableAttributes
	// CursorSecretName imports this Secrets Manager secret (by name) as
	// Api.CursorSecret unless Api sets it: on a global table, one secret
	// with replica regions signs cursors in every region (context key
	// triggers:cursor-secret-name; docs/multi-region.md).
	//
	// Default: "", the API generates its own secret.
	CursorSecretName string
	// Env is the environment name, tagged on every resource.
	//
	// Default: "dev".
	Env string
	// Api configures the API; its EventsTable and ApiKeysTable are set
	// from Data. Api.Webhooks is set here unless DisableWebhooks.
	//
	// Default: triggersapi defaults, with webhook push delivery on.
	Api triggersapi.TriggersApiProps
	// CloudWatchRole creates API Gateway's account-level CloudWatch role
	// (triggersapi.TriggersApiProps.CloudWatchRole) unless Api sets it.
	// Context triggers:cloudwatch-role.
	//
	// Default: true.
	CloudWatchRole *bool
	// DisableWebhooks leaves webhook push delivery off (Api.Webhooks
	// nil): no webhook function, the delivery queue is yours to consume.
	//
	// Default: false: webhooks on, with triggersapi.WebhookOptions
	// defaults unless Api.Webhooks gives options.
	DisableWebhooks bool
	// Monitoring configures the dashboard and alarms; Api and the dashboard
	// name ("triggers-<env>") are set here.
	//
	// Default: monitoring defaults.
	Monitoring monitoring.TriggersMonitoringProps
}

// TriggersApiStack holds the Triggers service's stateless resources: the
// API, its functions, the stream consumer, the delivery queues and webhook
// push delivery (its function and retry queues).
type TriggersApiStack struct {
	awscdk.Stack
	// Api is the TriggersApi construct.
	Api *triggersapi.TriggersApi
	// Monitoring is the environment's dashboard, alarms and saved queries.
	Monitoring *monitoring.TriggersMonitoring
	// Archive keeps the events TTL deletes from an imported EventsTable
	// (ArchiveExpiredEvents); nil otherwise (the data stack's Archive
	// keeps its own table's).
	Archive *archive.ExpiredEventsArchive
}

// NewTriggersApiStack creates the stack.
func NewTriggersApiStack(scope constructs.Construct, id *string, props *TriggersApiStackProps) *TriggersApiStack {
	if props == nil || props.Data == nil {
		panic("stacks: TriggersApiStackProps.Data is required: pass the stack made by NewTriggersDataStack")
	}
	env := envName(props.Env)
	stack := awscdk.NewStack(scope, id, &props.StackProps)
	awscdk.Tags_Of(stack).Add(jsii.String("triggers:env"), jsii.String(env), nil)
	awscdk.Tags_Of(stack).Add(jsii.String("triggers:system"), jsii.String("triggers"), nil)

	ap := props.Api
	ap.EventsTable = props.Data.Events
	if a := props.EventsTable; a != nil {
		if a.TableName == nil || a.TableStreamArn == nil {
			panic("stacks: TriggersApiStackProps.EventsTable needs TableName and TableStreamArn: enable the restored table's stream (NEW_AND_OLD_IMAGES) and pass its ARN")
		}
		ap.EventsTable = eventstore.FromEventsTableAttributes(stack, jsii.String("ImportedEvents"), a)
	}
	ap.ApiKeysTable = props.Data.ApiKeys
	if a := props.ApiKeysTable; a != nil {
		if a.TableName == nil && a.TableArn == nil {
			panic("stacks: TriggersApiStackProps.ApiKeysTable needs TableName or TableArn: name the API-keys table (in a replica region, the global table's name)")
		}
		ap.ApiKeysTable = triggersapi.FromApiKeysTableAttributes(stack, jsii.String("ImportedApiKeys"), a)
	}
	if props.CursorSecretName != "" && ap.CursorSecret == nil {
		ap.CursorSecret = awssecretsmanager.Secret_FromSecretNameV2(stack, jsii.String("CursorSecret"), jsii.String(props.CursorSecretName))
	}
	if ap.CloudWatchRole == nil {
		// The app creates API Gateway's account-level logging role, so
		// that a first deployment to a fresh account works whatever
		// cdk.json's feature flag says; context triggers:cloudwatch-role
		// false (Api.CloudWatchRole false) leaves it to the stack that
		// owns it.
		ap.CloudWatchRole = jsii.Bool(props.CloudWatchRole == nil || *props.CloudWatchRole)
	}
	switch {
	case props.DisableWebhooks:
		ap.Webhooks = nil
	case ap.Webhooks == nil:
		ap.Webhooks = &triggersapi.WebhookOptions{}
	}
	api := triggersapi.NewTriggersApi(stack, jsii.String("Triggers"), &ap)

	stackName := *stack.StackName() // one jsii read for every export name
	out := func(id, desc string, v *string) {
		awscdk.NewCfnOutput(stack, jsii.String(id), &awscdk.CfnOutputProps{
			Value: v, Description: jsii.String(desc), ExportName: jsii.String(stackName + "-" + id),
		})
	}
	out("ApiUrl", "Base URL of the Triggers HTTP API (append v1/...)", api.Url())
	out("DeliveryQueueUrl", "SQS queue receiving one message per new event", api.DeliveryQueue().QueueUrl())
	out("DeliveryDeadLetterQueueUrl", "Delivery messages received too many times", api.DeliveryDeadLetterQueue().QueueUrl())
	out("StreamFailureQueueUrl", "Stream records the consumer gave up on", api.StreamFailureQueue().QueueUrl())
	out("CursorSecretArn", "Secrets Manager secret signing inbox cursors", api.CursorSecret().SecretArn())
	if w := api.Webhooks(); w != nil {
		out("WebhookRetryQueueUrl", "SQS queue of webhook retries and redeliveries", w.RetryQueue().QueueUrl())
		out("WebhookRetryDeadLetterQueueUrl", "Webhook retry tasks received too many times", w.RetryDeadLetterQueue().QueueUrl())
	}

	var arch *archive.ExpiredEventsArchive
	if on := props.ArchiveExpiredEvents; props.EventsTable != nil && on != nil && *on && props.Data.Events.StreamView() == schema.StreamNewImage {
		// An imported table's stream view cannot be read at synth; a
		// restored copy or a replica has the data stack's table's.
		panic(fmt.Sprintf("stacks: TriggersApiStackProps.ArchiveExpiredEvents is true, but the data stack's events table streams %s (TriggersDataStackProps.EventsStreamView), and so does the imported EventsTable (a restored copy or a replica of it): the archive needs %s, the old image of a TTL delete, or it parks every record. Change the stream view first (docs/delivery.md, \"Changing the stream view\") or leave ArchiveExpiredEvents unset",
			schema.StreamNewImage, schema.StreamNewAndOldImages))
	}
	if on := props.ArchiveExpiredEvents; props.EventsTable != nil && ((on == nil && props.Data.Archive != nil) || (on != nil && *on)) {
		aap := props.Archive
		aap.EventsTable = ap.EventsTable
		arch = archive.NewExpiredEventsArchive(stack, jsii.String("ExpiredEventsArchive"), &aap)
		archiveOutputs(stack, stackName, arch, "the events TTL deletes from this region's imported events table")
	}

	mp := props.Monitoring
	mp.Api = api
	if props.EventsTable == nil { // the data stack's own table and its archive
		if mp.Archive == nil {
			mp.Archive = props.Data.Archive
		}
		if props.Data.EventsContributorInsights {
			mp.ContributorInsights = true
		}
	} else if mp.Archive == nil {
		mp.Archive = arch
	}
	if mp.DashboardName == "" {
		mp.DashboardName = "triggers-" + env
	}
	mon := monitoring.NewTriggersMonitoring(stack, jsii.String("Monitoring"), &mp)
	out("AlarmTopicArn", "SNS topic receiving the paging alarms (subscribe your on-call here)", mon.AlarmTopic.TopicArn())
	if mon.TicketTopic != nil {
		out("TicketTopicArn", "SNS topic receiving the ticket alarms (subscribe your ticketing system or team channel)", mon.TicketTopic.TopicArn())
	}
	out("DashboardName", "CloudWatch dashboard of this environment", mon.Dashboard.DashboardName())
	return &TriggersApiStack{Stack: stack, Api: api, Monitoring: mon, Archive: arch}
}
