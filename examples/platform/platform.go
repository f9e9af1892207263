package main

import (
	"path/filepath"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssnssubscriptions"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/triggers-dev/triggers/constructs/dynamotable"
	"github.com/triggers-dev/triggers/constructs/eventstore"
	"github.com/triggers-dev/triggers/constructs/golambda"
	"github.com/triggers-dev/triggers/constructs/monitoring"
	"github.com/triggers-dev/triggers/constructs/triggersapi"
)

// AuditEntry is the audit function's main package, a directory of this
// module; its prebuilt binary goes to <PrebuiltDir>/audit/bootstrap.
const AuditEntry = "functions/audit"

// PlatformStackProps configures the platform team's stack.
type PlatformStackProps struct {
	awscdk.StackProps
	// Env is the environment name, in the dashboard's name.
	Env string
	// EventsTable is the Triggers events table (with its stream), here
	// from the Triggers data stack of this app. A table deployed by
	// another app is imported with eventstore.FromEventsTableAttributes
	// (its name and stream ARN).
	EventsTable eventstore.IEventsTable
	// ApiKeysTable maps API-key hashes to tenants.
	ApiKeysTable dynamotable.ITable
	// PrebuiltDir holds binaries built in CI: api/, authorizer/,
	// streamconsumer/ and audit/, each with its bootstrap. Empty: every
	// function is built at synth.
	PrebuiltDir string
	// AlarmEmail is subscribed to the alarm topic. Empty: no subscription.
	AlarmEmail string
}

// PlatformStack holds the team's stateless resources around the Triggers
// tables.
type PlatformStack struct {
	awscdk.Stack
	// Api is the Triggers API (REST API, authorizer, functions, delivery).
	Api *triggersapi.TriggersApi
	// Audit is the team's own consumer of the events stream.
	Audit *golambda.GoFunction
	// AlarmTopic receives the paging alarms.
	AlarmTopic awssns.Topic
	// TicketTopic receives the alarms that open a ticket (no page).
	TicketTopic awssns.Topic
	// Monitoring is the dashboard, alarms and saved queries.
	Monitoring *monitoring.TriggersMonitoring
}

// NewPlatformStack creates the stack.
func NewPlatformStack(scope constructs.Construct, id *string, props *PlatformStackProps) *PlatformStack {
	stack := awscdk.NewStack(scope, id, &props.StackProps)
	s := &PlatformStack{Stack: stack}

	// The Triggers API. Its three functions are built at synth by import
	// path in this module (github.com/triggers-dev/triggers/lambda/...),
	// or taken from PrebuiltDir.
	s.Api = triggersapi.NewTriggersApi(stack, jsii.String("Triggers"), &triggersapi.TriggersApiProps{
		EventsTable:  props.EventsTable,
		ApiKeysTable: props.ApiKeysTable,
		PrebuiltDir:  props.PrebuiltDir,
		// The stage's logs need API Gateway's account-level CloudWatch
		// role; this stack makes it (false if another stack of the
		// account already does).
		CloudWatchRole: jsii.Bool(true),
	})

	// A second consumer of the events stream: the team's audit log of new
	// events and status changes, a Go handler of this module.
	audit := &golambda.GoFunctionProps{
		Description:     jsii.String("Audit log of Triggers events (new events and status changes)"),
		FunctionOptions: golambda.FunctionOptions{Timeout: awscdk.Duration_Seconds(jsii.Number(30))},
	}
	if props.PrebuiltDir != "" {
		audit.PrebuiltDir = filepath.Join(props.PrebuiltDir, "audit")
	} else {
		audit.Entry = AuditEntry
	}
	s.Audit = golambda.NewGoFunction(stack, jsii.String("AuditFunction"), audit)
	props.EventsTable.AddStreamConsumer(s.Audit.Function, &dynamotable.StreamConsumerOptions{
		BatchSize: 50,
		Filters: []*map[string]any{awslambda.FilterCriteria_Filter(&map[string]any{
			"eventName": awslambda.FilterRule_Or(jsii.String("INSERT"), jsii.String("MODIFY")),
		})},
	})

	// The team's own topics: monitoring pages through the alarm topic
	// and opens tickets through the ticket topic.
	snsKey := awskms.Alias_FromAliasName(stack, jsii.String("SnsKey"), jsii.String("alias/aws/sns"))
	s.AlarmTopic = awssns.NewTopic(stack, jsii.String("AlarmTopic"), &awssns.TopicProps{
		DisplayName: jsii.String("Platform: Triggers alarms (" + props.Env + ")"),
		EnforceSSL:  jsii.Bool(true),
		MasterKey:   snsKey,
	})
	s.TicketTopic = awssns.NewTopic(stack, jsii.String("TicketTopic"), &awssns.TopicProps{
		DisplayName: jsii.String("Platform: Triggers tickets (" + props.Env + ")"),
		EnforceSSL:  jsii.Bool(true),
		MasterKey:   snsKey,
	})
	if props.AlarmEmail != "" {
		s.AlarmTopic.AddSubscription(awssnssubscriptions.NewEmailSubscription(jsii.String(props.AlarmEmail), nil))
	}
	s.Monitoring = monitoring.NewTriggersMonitoring(stack, jsii.String("Monitoring"), &monitoring.TriggersMonitoringProps{
		Api:           s.Api,
		AlarmTopic:    s.AlarmTopic,
		TicketTopic:   s.TicketTopic,
		DashboardName: "platform-triggers-" + props.Env,
	})

	awscdk.NewCfnOutput(stack, jsii.String("ApiUrl"), &awscdk.CfnOutputProps{
		Value: s.Api.Url(), Description: jsii.String("Base URL of the Triggers HTTP API (append v1/...)"),
	})
	awscdk.NewCfnOutput(stack, jsii.String("DeliveryQueueUrl"), &awscdk.CfnOutputProps{
		Value: s.Api.DeliveryQueue().QueueUrl(), Description: jsii.String("SQS queue receiving one message per new event"),
	})
	awscdk.NewCfnOutput(stack, jsii.String("AlarmTopicArn"), &awscdk.CfnOutputProps{
		Value: s.AlarmTopic.TopicArn(), Description: jsii.String("SNS topic receiving the paging Triggers alarms"),
	})
	awscdk.NewCfnOutput(stack, jsii.String("TicketTopicArn"), &awscdk.CfnOutputProps{
		Value: s.TicketTopic.TopicArn(), Description: jsii.String("SNS topic receiving the Triggers alarms that open a ticket"),
	})
	return s
}
