package assertions

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/examples/multiregion"
)

// The multi-region example builds the primary (global tables with a
// replica in the secondary, a replicated cursor secret) and the secondary
// (the API on the replicas) from one function; both APIs write only in
// the primary.
func TestMultiRegionExample(t *testing.T) {
	const primary, secondary = "us-east-1", "eu-west-1"
	synth := func(props *multiregion.RegionStackProps) (assertions.Template, []string) {
		ctx := map[string]any{"aws:cdk:bundling-stacks": []any{}}
		app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx})
		props.Account, props.Primary = "111111111111", primary
		stack := multiregion.NewRegionStack(app, jsii.String("Triggers-"+props.Region), props)
		tmpl := assertions.Template_FromStack(stack.Stack, nil)
		var filters []string
		for _, m := range *tmpl.FindResources(jsii.String("AWS::Lambda::EventSourceMapping"), nil) {
			b, err := json.Marshal((*m)["Properties"].(map[string]any)["FilterCriteria"])
			require.NoError(t, err)
			filters = append(filters, string(b))
		}
		return tmpl, filters
	}
	writer := map[string]any{"Environment": map[string]any{"Variables": assertions.Match_ObjectLike(&map[string]any{"WRITER_REGION": primary})}}

	p, pFilters := synth(&multiregion.RegionStackProps{Region: primary, Replicas: []string{secondary}})
	p.ResourceCountIs(jsii.String("AWS::DynamoDB::GlobalTable"), jsii.Number(2)) // events and API keys
	for _, region := range []string{primary, secondary} {
		p.AllResourcesProperties(jsii.String("AWS::DynamoDB::GlobalTable"), map[string]any{
			"Replicas": assertions.Match_ArrayWith(&[]any{assertions.Match_ObjectLike(&map[string]any{"Region": region})}),
		})
	}
	p.HasResourceProperties(jsii.String("AWS::SecretsManager::Secret"), map[string]any{
		"Name": multiregion.CursorSecretName, "ReplicaRegions": []any{map[string]any{"Region": secondary}},
	})
	p.HasResourceProperties(jsii.String("AWS::Lambda::Function"), writer)
	// TriggersMonitoring alarms on the events table's replication to the
	// secondary (10 s by default).
	p.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
		"Threshold":        10000,
		"AlarmDescription": assertions.Match_StringLikeRegexp(jsii.String("replication to " + secondary + " took more than 10000 ms")),
	})
	assert.Equal(t, 1, replicationAlarms(p))
	// Each region archives the TTL deletions of its own replica.
	assert.Equal(t, 1, archiveMappings(t, p, ""), "the primary's archive")
	// The delivery consumer on the global table skips the events another
	// region accepted: only this region's origin (or none) passes.
	assert.Contains(t, pFilters, `{"Filters":[{"Pattern":"{\"dynamodb\":{\"NewImage\":{\"origin_region\":{\"S\":[\"us-east-1\"]}}},\"eventName\":[\"INSERT\"]}"},{"Pattern":"{\"dynamodb\":{\"NewImage\":{\"origin_region\":[{\"exists\":false}]}},\"eventName\":[\"INSERT\"]}"}]}`)

	s, sFilters := synth(&multiregion.RegionStackProps{Region: secondary, EventsTableName: "triggers-events",
		EventsStreamArn:  "arn:aws:dynamodb:eu-west-1:111111111111:table/triggers-events/stream/2026-11-26T00:00:00.000",
		ApiKeysTableName: "triggers-api-keys"})
	s.ResourceCountIs(jsii.String("AWS::DynamoDB::GlobalTable"), jsii.Number(0))
	s.ResourceCountIs(jsii.String("AWS::SecretsManager::Secret"), jsii.Number(0))
	assert.Zero(t, replicationAlarms(s), "the replica region's stack does not own the global table: no replication alarms there")
	s.HasResourceProperties(jsii.String("AWS::Lambda::Function"), writer)
	// On the imported replica too (TriggersApi with WriterRegion in a
	// stack of a concrete region): the primary's events never reach the
	// secondary's consumer.
	assert.Contains(t, sFilters, `{"Filters":[{"Pattern":"{\"dynamodb\":{\"NewImage\":{\"origin_region\":{\"S\":[\"eu-west-1\"]}}},\"eventName\":[\"INSERT\"]}"},{"Pattern":"{\"dynamodb\":{\"NewImage\":{\"origin_region\":[{\"exists\":false}]}},\"eventName\":[\"INSERT\"]}"}]}`)
	assert.NotContains(t, sFilters, `{"Filters":[{"Pattern":"{\"eventName\":[\"INSERT\"]}"}]}`)
	assert.Equal(t, 1, archiveMappings(t, s, "arn:aws:dynamodb:eu-west-1:111111111111:table/triggers-events/stream/2026-11-26T00:00:00.000"), "the secondary's archive of its replica's TTL deletions")
	// The secondary's API reads the replicas named, in its own region.
	b, err := json.Marshal(s.ToJSON())
	require.NoError(t, err)
	assert.Contains(t, string(b), "table/triggers-api-keys")
	assert.Contains(t, string(b), "secret:"+multiregion.CursorSecretName)
}

// replicationAlarms counts the template's ReplicationLatency alarms.
func replicationAlarms(tmpl assertions.Template) int {
	n := 0
	for id := range *tmpl.FindResources(jsii.String("AWS::CloudWatch::Alarm"), nil) {
		if strings.Contains(id, "ReplicationLatency") {
			n++
		}
	}
	return n
}
