package eventstore_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"

	"github.com/triggers-dev/triggers/constructs/dynamotable"
	"github.com/triggers-dev/triggers/constructs/eventstore"
	_ "github.com/triggers-dev/triggers/internal/synth/jsiienv"
	"github.com/triggers-dev/triggers/internal/synth/jsiirt"
	"github.com/triggers-dev/triggers/schema"
)

func TestMain(m *testing.M) { jsiirt.RunTests(m) }

// The events table with every default: on demand, PITR 35 days, stream
// NEW_AND_OLD_IMAGES, TTL on ttl, AWS-managed encryption, deletion protection, RETAIN.
func ExampleNewEventsTable() {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Data"), nil)
	events := eventstore.NewEventsTable(stack, jsii.String("Events"), nil)

	fmt.Println(*events.EventTypeIndexName(), *events.StatusIndexName())
	tmpl := assertions.Template_FromStack(stack, nil)
	tmpl.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), map[string]any{
		"BillingMode":                      "PAY_PER_REQUEST",
		"StreamSpecification":              map[string]any{"StreamViewType": "NEW_AND_OLD_IMAGES"},
		"TimeToLiveSpecification":          map[string]any{"AttributeName": "ttl", "Enabled": true},
		"PointInTimeRecoverySpecification": map[string]any{"PointInTimeRecoveryEnabled": true, "RecoveryPeriodInDays": 35},
	})
	fmt.Println("ok")
	// Output:
	// EventTypeIndex StatusIndex
	// ok
}

// Provisioned capacity: 5-100 RCU and WCU at 70% on the table and both
// indexes, as seed 001 AC5/AC6 ask.
func ExampleNewEventsTable_provisioned() {
	stack := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("Data"), nil)
	eventstore.NewEventsTable(stack, jsii.String("Events"), &eventstore.EventsTableProps{
		TableOptions: dynamotable.TableOptions{Billing: dynamotable.Provisioned},
	})
	tmpl := assertions.Template_FromStack(stack, nil)
	fmt.Println(len(*tmpl.FindResources(jsii.String("AWS::ApplicationAutoScaling::ScalableTarget"), nil)), "scalable targets")
	// Output: 6 scalable targets
}

// Another stack imports a table made elsewhere and grants a role what an
// inbox reader needs: Query and GetItem on the table and its two indexes.
func ExampleFromEventsTableAttributes() {
	stack := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("Consumer"), nil)
	events := eventstore.FromEventsTableAttributes(stack, jsii.String("Events"), &eventstore.EventsTableAttributes{
		TableName: awscdk.Fn_ImportValue(jsii.String("triggers-dev-data-EventsTableName")),
	})
	reader := awsiam.NewRole(stack, jsii.String("Reader"), &awsiam.RoleProps{
		AssumedBy: awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
	})
	events.GrantReadInbox(reader)
	tmpl := assertions.Template_FromStack(stack, nil)
	tmpl.HasResourceProperties(jsii.String("AWS::IAM::Policy"), map[string]any{
		"PolicyDocument": map[string]any{"Statement": []any{map[string]any{
			"Action": []any{"dynamodb:Query", "dynamodb:GetItem"}, "Effect": "Allow",
			"Resource": assertions.Match_AnyValue(),
		}}},
	})
	fmt.Println("granted")
	// Output: granted
}

// A table deployed before the archive existed keeps its NEW_IMAGE stream
// (and its stream ARN) until its consumers are ready to move: see
// docs/delivery.md, "Changing the stream view".
func ExampleNewEventsTable_newImageOnly() {
	stack := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("Data"), nil)
	events := eventstore.NewEventsTable(stack, jsii.String("Events"), &eventstore.EventsTableProps{
		StreamView: schema.StreamNewImage,
	})
	fmt.Println(events.StreamView())
	assertions.Template_FromStack(stack, nil).HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), map[string]any{
		"StreamSpecification": map[string]any{"StreamViewType": "NEW_IMAGE"},
	})
	// Output: NEW_IMAGE
}

func TestStreamViewValidated(t *testing.T) {
	stack := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("Data"), nil)
	for _, v := range []schema.StreamView{schema.StreamKeysOnly, schema.StreamOldImage, "NEW"} {
		func() {
			defer func() {
				r := recover()
				err, ok := r.(error)
				if !ok || !strings.Contains(err.Error(), `StreamView "`+string(v)+`" is not supported`) {
					t.Errorf("NewEventsTable(StreamView %q) panicked with %v, want an error naming the view", v, r)
				}
			}()
			eventstore.NewEventsTable(stack, jsii.String("Events"+string(v)), &eventstore.EventsTableProps{StreamView: v})
		}()
	}
}

// The lean profile writes each event about half as many times (see
// docs/capacity.md): one index, StatusIndex, sparse and projecting only
// the keys, event_type and ttl. Inbox readers also get BatchGetItem,
// since a page reads the index, then the events.
func ExampleNewEventsTable_lean() {
	stack := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("Data"), nil)
	events := eventstore.NewEventsTable(stack, jsii.String("Events"), &eventstore.EventsTableProps{
		Profile: schema.ProfileLean,
	})
	fmt.Println(events.Profile())
	tmpl := assertions.Template_FromStack(stack, nil)
	tmpl.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), map[string]any{
		"GlobalSecondaryIndexes": []any{map[string]any{
			"IndexName": "StatusIndex",
			"KeySchema": []any{
				map[string]any{"AttributeName": "user_id", "KeyType": "HASH"},
				map[string]any{"AttributeName": "status#timestamp", "KeyType": "RANGE"},
			},
			"Projection": map[string]any{"ProjectionType": "INCLUDE", "NonKeyAttributes": []any{"event_type", "ttl"}},
		}},
	})
	// Output: lean
}

func TestProfile(t *testing.T) {
	stack := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("Data"), nil)
	seed := eventstore.NewEventsTable(stack, jsii.String("Seed"), nil)
	if got := seed.Profile(); got != schema.ProfileSeed {
		t.Errorf("default profile %q, want seed", got)
	}
	// A bad profile names the value and the choices.
	for _, bad := range []schema.EventsProfile{"Lean", "slim"} {
		func() {
			defer func() {
				err, ok := recover().(error)
				want := `eventstore "Bad": Profile: events table profile "` + string(bad) + `" is not known: use "seed" (the default) or "lean"`
				if !ok || err.Error() != want {
					t.Errorf("NewEventsTable(Profile %q) panicked with %v, want %q", bad, err, want)
				}
			}()
			eventstore.NewEventsTable(stack, jsii.String("Bad"), &eventstore.EventsTableProps{Profile: bad})
		}()
	}

	// The inbox grant follows the profile, for an imported table too:
	// lean readers may BatchGetItem, on the table and StatusIndex only.
	consumer := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("Consumer"), nil)
	role := func(id string) awsiam.Role {
		return awsiam.NewRole(consumer, jsii.String(id), &awsiam.RoleProps{AssumedBy: awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil)})
	}
	lean := eventstore.FromEventsTableAttributes(consumer, jsii.String("Lean"), &eventstore.EventsTableAttributes{
		TableName: jsii.String("lean-events"), Profile: schema.ProfileLean,
	})
	if got := lean.Profile(); got != schema.ProfileLean {
		t.Errorf("imported profile %q, want lean", got)
	}
	lean.GrantReadInbox(role("LeanReader"))
	eventstore.FromEventsTableAttributes(consumer, jsii.String("Seed"), &eventstore.EventsTableAttributes{
		TableName: jsii.String("seed-events"),
	}).GrantReadInbox(role("SeedReader"))
	tmpl := assertions.Template_FromStack(consumer, nil)
	statement := func(table string, actions []any, indexes ...string) map[string]any {
		arn := func(suffix string) any {
			return map[string]any{"Fn::Join": []any{"", []any{
				"arn:", map[string]any{"Ref": "AWS::Partition"}, ":dynamodb:", map[string]any{"Ref": "AWS::Region"}, ":",
				map[string]any{"Ref": "AWS::AccountId"}, ":table/" + table + suffix,
			}}}
		}
		resources := []any{arn("")}
		for _, ix := range indexes {
			resources = append(resources, arn("/index/"+ix))
		}
		return map[string]any{"PolicyDocument": map[string]any{"Statement": []any{map[string]any{
			"Action": actions, "Effect": "Allow", "Resource": resources,
		}}}}
	}
	tmpl.HasResourceProperties(jsii.String("AWS::IAM::Policy"),
		statement("lean-events", []any{"dynamodb:Query", "dynamodb:GetItem", "dynamodb:BatchGetItem"}, "StatusIndex"))
	tmpl.HasResourceProperties(jsii.String("AWS::IAM::Policy"),
		statement("seed-events", []any{"dynamodb:Query", "dynamodb:GetItem"}, "EventTypeIndex", "StatusIndex"))

	func() {
		defer func() {
			if err, ok := recover().(error); !ok || !strings.Contains(err.Error(), `Profile: events table profile "x" is not known`) {
				t.Errorf("FromEventsTableAttributes(Profile x) panicked with %v", err)
			}
		}()
		eventstore.FromEventsTableAttributes(consumer, jsii.String("BadImport"), &eventstore.EventsTableAttributes{TableName: jsii.String("t"), Profile: "x"})
	}()
}

// The same construct code in a primary and a secondary region. In the
// primary, the events table is a global table with a replica in the
// secondary; the secondary imports that replica (same table name, its own
// stream ARN: after the first deployment, from
// `aws dynamodbstreams list-streams --region eu-west-1 --table-name ...`).
// Each region's stream consumer gets only the records of events its own
// region accepted: automatically on the global table, with
// dynamotable.OriginFilters on the imported replica. docs/multi-region.md
// runs the service this way, with one writer region.
func ExampleNewEventsTable_multiRegion() {
	const primary, secondary = "us-east-1", "eu-west-1"
	// One app per region, as each region's `cdk deploy` runs.
	regionStack := func(region string) (globalTables, originFilters int) {
		app := awscdk.NewApp(nil)
		stack := awscdk.NewStack(app, jsii.String("Triggers-"+region), &awscdk.StackProps{
			Env: &awscdk.Environment{Account: jsii.String("111111111111"), Region: jsii.String(region)},
		})
		var events eventstore.IEventsTable
		var opts *dynamotable.StreamConsumerOptions
		if region == primary {
			events = eventstore.NewEventsTable(stack, jsii.String("Events"), &eventstore.EventsTableProps{
				TableOptions: dynamotable.TableOptions{Replicas: []dynamotable.Replica{{Region: secondary}}},
			})
		} else {
			events = eventstore.FromEventsTableAttributes(stack, jsii.String("Events"), &eventstore.EventsTableAttributes{
				TableName:      jsii.String("triggers-events"),
				TableStreamArn: jsii.String("arn:aws:dynamodb:eu-west-1:111111111111:table/triggers-events/stream/2026-11-26T00:00:00.000"),
			})
			opts = &dynamotable.StreamConsumerOptions{Filters: dynamotable.OriginFilters(region)}
		}
		fn := awslambda.NewFunction(stack, jsii.String("Audit"), &awslambda.FunctionProps{
			Runtime: awslambda.Runtime_NODEJS_22_X(), Handler: jsii.String("index.handler"),
			Code: awslambda.Code_FromInline(jsii.String("exports.handler = async () => ({batchItemFailures: []})")),
		})
		events.AddStreamConsumer(fn, opts)
		tmpl := assertions.Template_FromStack(stack, nil)
		globalTables = len(*tmpl.FindResources(jsii.String("AWS::DynamoDB::GlobalTable"), nil))
		for _, m := range *tmpl.FindResources(jsii.String("AWS::Lambda::EventSourceMapping"), nil) {
			originFilters = len((*m)["Properties"].(map[string]any)["FilterCriteria"].(map[string]any)["Filters"].([]any))
		}
		return globalTables, originFilters
	}
	for _, region := range []string{primary, secondary} {
		tables, filters := regionStack(region)
		fmt.Printf("%s: %d global table, %d origin filters\n", region, tables, filters)
	}
	// Output:
	// us-east-1: 1 global table, 4 origin filters
	// eu-west-1: 0 global table, 4 origin filters
}
