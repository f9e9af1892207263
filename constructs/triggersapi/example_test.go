package triggersapi_test

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/jsii-runtime-go"

	"github.com/triggers-dev/triggers/constructs/eventstore"
	"github.com/triggers-dev/triggers/constructs/triggersapi"
)

// A consumer role allowed to read the delivery queue, and an alarm on the
// runtime's own metric. (The context entry skips bundling the Go
// functions; a real app leaves it out.)
func ExampleNewTriggersApi_grantsAndMetrics() {
	ctx := map[string]any{"aws:cdk:bundling-stacks": []any{}}
	app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx})
	stack := awscdk.NewStack(app, jsii.String("Triggers"), nil)

	api := triggersapi.NewTriggersApi(stack, jsii.String("Triggers"), nil)

	worker := awsiam.NewRole(stack, jsii.String("Worker"), &awsiam.RoleProps{AssumedBy: awsiam.NewServicePrincipal(jsii.String("ecs-tasks.amazonaws.com"), nil)})
	api.GrantConsumeDeliveries(worker)
	api.MetricEventsRejected("invalid_event", nil).CreateAlarm(stack, jsii.String("Rejections"), &awscloudwatch.CreateAlarmOptions{
		Threshold: jsii.Number(100), EvaluationPeriods: jsii.Number(1),
	})

	fmt.Println(api.MetricsNamespace(), *api.MetricLatency(nil).MetricName())
	tmpl := assertions.Template_FromStack(stack, nil)
	fmt.Println("alarms:", len(*tmpl.FindResources(jsii.String("AWS::CloudWatch::Alarm"), nil)))
	// Output:
	// Triggers/Triggers Latency
	// alarms: 1
}

// Stream delivery alone, on an events table of another stack: new events
// go to a queue a worker consumes.
func ExampleNewStreamDelivery() {
	ctx := map[string]any{"aws:cdk:bundling-stacks": []any{}}
	app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx})
	stack := awscdk.NewStack(app, jsii.String("Delivery"), nil)
	events := eventstore.FromEventsTableAttributes(stack, jsii.String("Events"), &eventstore.EventsTableAttributes{
		TableName:      jsii.String("events"),
		TableStreamArn: jsii.String("arn:aws:dynamodb:eu-west-1:111122223333:table/events/stream/2026-01-01T00:00:00.000"),
	})

	d := triggersapi.NewStreamDelivery(stack, jsii.String("Delivery"), &triggersapi.StreamDeliveryProps{
		EventsTable:     events,
		DeliveryOptions: triggersapi.DeliveryOptions{MaxReceiveCount: 3},
	})
	worker := awsiam.NewRole(stack, jsii.String("Worker"), &awsiam.RoleProps{AssumedBy: awsiam.NewAccountRootPrincipal()})
	d.GrantConsumeDeliveries(worker)

	tmpl := assertions.Template_FromStack(stack, nil)
	fmt.Println("queues:", len(*tmpl.FindResources(jsii.String("AWS::SQS::Queue"), nil)))
	fmt.Println("event source mappings:", len(*tmpl.FindResources(jsii.String("AWS::Lambda::EventSourceMapping"), nil)))
	// Output:
	// queues: 3
	// event source mappings: 1
}

// The API-keys table in a stateful stack; a function of another stack
// gets exactly dynamodb:GetItem on it.
func ExampleNewApiKeysTable() {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Data"), nil)
	keys := triggersapi.NewApiKeysTable(stack, jsii.String("ApiKeys"), nil)

	authorizer := awsiam.NewRole(stack, jsii.String("Authorizer"), &awsiam.RoleProps{AssumedBy: awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil)})
	keys.GrantAuthorize(authorizer)

	fmt.Println(keys.Schema().Name, triggersapi.AuthorizeActions())
	// Output:
	// apikeys [dynamodb:GetItem]
}
