// Package multiregion is an example of the Triggers service on a DynamoDB
// global table (docs/multi-region.md): one function builds the stack of
// either region, the primary (the global tables, the shared cursor
// secret and an API) or a replica region (an API on the replicas), and
// every region's API writes only in WriterRegion. Each region archives the
// events whose TTL deletion happened there (TTL deletes an item in one
// region; the others get a replicated delete, which the archive skips).
// The app in ./app deploys one region per run.
package multiregion

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/triggers-dev/triggers/constructs/archive"
	"github.com/triggers-dev/triggers/constructs/dynamotable"
	"github.com/triggers-dev/triggers/constructs/eventstore"
	"github.com/triggers-dev/triggers/constructs/monitoring"
	"github.com/triggers-dev/triggers/constructs/triggersapi"
)

// CursorSecretName is the name of the secret signing inbox cursors in
// every region: the primary creates it with a replica in each other
// region, the others import it by name.
const CursorSecretName = "triggers-example-cursor"

// RegionStackProps configures one region's stack.
type RegionStackProps struct {
	// Account is the AWS account. Required.
	Account string
	// Region is this stack's region. Required.
	Region string
	// Primary is the region holding the global tables' first replica and
	// this example's writer region. Required.
	Primary string
	// Replicas are the other regions of the global tables; read in the
	// primary only. Required there.
	Replicas []string
	// EventsTableName, EventsStreamArn and ApiKeysTableName name the
	// replicas of a replica region (the primary's outputs and this
	// region's stream ARN). Required outside the primary.
	EventsTableName, EventsStreamArn, ApiKeysTableName string
}

// RegionStack is one region's stack.
type RegionStack struct {
	awscdk.Stack
	// Api is the region's Triggers API.
	Api *triggersapi.TriggersApi
	// Archive keeps the events whose TTL deletion happened in this
	// region's replica.
	Archive *archive.ExpiredEventsArchive
	// Monitoring is the region's dashboard and alarms.
	Monitoring *monitoring.TriggersMonitoring
}

// NewRegionStack builds the stack of props.Region.
func NewRegionStack(scope constructs.Construct, id *string, props *RegionStackProps) *RegionStack {
	if props == nil || props.Account == "" || props.Region == "" || props.Primary == "" {
		panic("multiregion: RegionStackProps needs Account, Region and Primary")
	}
	stack := awscdk.NewStack(scope, id, &awscdk.StackProps{
		Env: &awscdk.Environment{Account: jsii.String(props.Account), Region: jsii.String(props.Region)},
	})
	api := triggersapi.TriggersApiProps{WriterRegion: props.Primary, Webhooks: &triggersapi.WebhookOptions{}}
	if props.Region == props.Primary {
		opts := dynamotable.TableOptions{}
		replicas := []*awssecretsmanager.ReplicaRegion{}
		for _, r := range props.Replicas {
			opts.Replicas = append(opts.Replicas, dynamotable.Replica{Region: r})
			replicas = append(replicas, &awssecretsmanager.ReplicaRegion{Region: jsii.String(r)})
		}
		events := eventstore.NewEventsTable(stack, jsii.String("Events"), &eventstore.EventsTableProps{TableOptions: opts})
		keys := triggersapi.NewApiKeysTable(stack, jsii.String("ApiKeys"), &triggersapi.ApiKeysTableProps{TableOptions: opts})
		api.EventsTable, api.ApiKeysTable = events, keys
		api.CursorSecret = awssecretsmanager.NewSecret(stack, jsii.String("CursorSecret"), &awssecretsmanager.SecretProps{
			SecretName:     jsii.String(CursorSecretName),
			Description:    jsii.String("HMAC key that signs Triggers inbox cursors in every region"),
			ReplicaRegions: &replicas,
			GenerateSecretString: &awssecretsmanager.SecretStringGenerator{
				PasswordLength: jsii.Number(64), ExcludePunctuation: jsii.Bool(true),
			},
		})
		awscdk.NewCfnOutput(stack, jsii.String("EventsTableName"), &awscdk.CfnOutputProps{Value: events.TableName()})
		awscdk.NewCfnOutput(stack, jsii.String("ApiKeysTableName"), &awscdk.CfnOutputProps{Value: keys.TableName()})
	} else {
		if props.EventsTableName == "" || props.EventsStreamArn == "" || props.ApiKeysTableName == "" {
			panic(fmt.Sprintf("multiregion: region %s is a replica region: give EventsTableName, EventsStreamArn (this region's) and ApiKeysTableName from the primary's outputs", props.Region))
		}
		api.EventsTable = eventstore.FromEventsTableAttributes(stack, jsii.String("Events"), &eventstore.EventsTableAttributes{
			TableName: jsii.String(props.EventsTableName), TableStreamArn: jsii.String(props.EventsStreamArn),
		})
		api.ApiKeysTable = triggersapi.FromApiKeysTableAttributes(stack, jsii.String("ApiKeys"), &triggersapi.ApiKeysTableAttributes{
			TableName: jsii.String(props.ApiKeysTableName),
		})
		api.CursorSecret = awssecretsmanager.Secret_FromSecretNameV2(stack, jsii.String("CursorSecret"), jsii.String(CursorSecretName))
	}
	rs := &RegionStack{Stack: stack, Api: triggersapi.NewTriggersApi(stack, jsii.String("Triggers"), &api)}
	// Each region archives its replica's TTL deletions: an expired event
	// is archived once, by the region where it expired.
	rs.Archive = archive.NewExpiredEventsArchive(stack, jsii.String("ExpiredEventsArchive"), &archive.ExpiredEventsArchiveProps{EventsTable: api.EventsTable})
	// Each region has its dashboard and alarms (its archive's included);
	// the primary's events table alarms on ReplicationLatency to each
	// replica region.
	rs.Monitoring = monitoring.NewTriggersMonitoring(stack, jsii.String("Monitoring"), &monitoring.TriggersMonitoringProps{Api: rs.Api, Archive: rs.Archive})
	return rs
}
