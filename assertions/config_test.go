package assertions

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/triggers-dev/triggers/schema"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/constructs/dynamotable"
	"github.com/triggers-dev/triggers/stacks"
)

func TestConfigFromContext(t *testing.T) {
	tests := []struct {
		name    string
		ctx     map[string]any
		want    stacks.Config
		wantErr string
	}{
		{"defaults", nil, stacks.Config{Env: "dev", Billing: dynamotable.OnDemand, EventsProfile: schema.ProfileSeed}, ""},
		{"prod provisioned", map[string]any{"triggers:env": "prod", "triggers:billing": "provisioned"}, stacks.Config{Env: "prod", Billing: dynamotable.Provisioned, EventsProfile: schema.ProfileSeed}, ""},
		{"tenant index on", map[string]any{"tenant:event-type-index": "true"}, stacks.Config{Env: "dev", Billing: dynamotable.OnDemand, TenantEventTypeIndex: true, EventsProfile: schema.ProfileSeed}, ""},
		{"bad env", map[string]any{"triggers:env": "Prod!"}, stacks.Config{}, "context triggers:env=Prod! is not an environment name: use dev, staging, prod, or another name"},
		{"team env", map[string]any{"triggers:env": "qa-2"}, stacks.Config{Env: "qa-2", Billing: dynamotable.OnDemand, EventsProfile: schema.ProfileSeed}, ""},
		{"bad billing", map[string]any{"triggers:billing": "cheap"}, stacks.Config{}, "context triggers:billing=cheap is unknown: use on-demand or provisioned"},
		{"lean", map[string]any{"triggers:events-profile": "lean"}, stacks.Config{Env: "dev", Billing: dynamotable.OnDemand, EventsProfile: schema.ProfileLean}, ""},
		{"bad profile", map[string]any{"triggers:events-profile": "slim"}, stacks.Config{}, "context triggers:events-profile=slim is unknown: use seed (the default) or lean"},
		{"empty profile", map[string]any{"triggers:events-profile": ""}, stacks.Config{}, "context triggers:events-profile= is unknown"},
		{"no CloudWatch role", map[string]any{"triggers:cloudwatch-role": "false"}, stacks.Config{Env: "dev", Billing: dynamotable.OnDemand, EventsProfile: schema.ProfileSeed, NoCloudWatchRole: true}, ""},
		{"CloudWatch role", map[string]any{"triggers:cloudwatch-role": true}, stacks.Config{Env: "dev", Billing: dynamotable.OnDemand, EventsProfile: schema.ProfileSeed}, ""},
		{"bad CloudWatch role", map[string]any{"triggers:cloudwatch-role": "maybe"}, stacks.Config{}, "context triggers:cloudwatch-role=maybe is not a boolean"},
		{"bad bool", map[string]any{"tenant:event-type-index": "yes"}, stacks.Config{}, "context tenant:event-type-index=yes is not a boolean"},
		{"sharding", map[string]any{"triggers:events-sharding": "true"}, stacks.Config{Env: "dev", Billing: dynamotable.OnDemand, EventsProfile: schema.ProfileSeed, EventsSharding: true}, ""},
		{"no sharding", map[string]any{"triggers:events-sharding": false}, stacks.Config{Env: "dev", Billing: dynamotable.OnDemand, EventsProfile: schema.ProfileSeed}, ""},
		{"bad sharding", map[string]any{"triggers:events-sharding": "8"}, stacks.Config{}, "context triggers:events-sharding=8 is not a boolean: use true"},
		{"primary region", map[string]any{"triggers:region": "us-east-1", "triggers:replica-regions": "eu-west-1, ap-southeast-2", "triggers:writer-region": "us-east-1"},
			stacks.Config{Env: "dev", Billing: dynamotable.OnDemand, EventsProfile: schema.ProfileSeed, Region: "us-east-1", ReplicaRegions: []string{"eu-west-1", "ap-southeast-2"}, WriterRegion: "us-east-1"}, ""},
		{"primary after failover", map[string]any{"triggers:region": "us-east-1", "triggers:replica-regions": "eu-west-1", "triggers:writer-region": "eu-west-1"},
			stacks.Config{Env: "dev", Billing: dynamotable.OnDemand, EventsProfile: schema.ProfileSeed, Region: "us-east-1", ReplicaRegions: []string{"eu-west-1"}, WriterRegion: "eu-west-1"}, ""},
		{"replica region", map[string]any{"triggers:region": "eu-west-1", "triggers:writer-region": "us-east-1", "triggers:events-table-name": "evs", "triggers:events-table-stream-arn": "arn:aws:dynamodb:eu-west-1:111111111111:table/evs/stream/2026-01-01T00:00:00.000", "triggers:api-keys-table-name": "keys"},
			stacks.Config{Env: "dev", Billing: dynamotable.OnDemand, EventsProfile: schema.ProfileSeed, Region: "eu-west-1", WriterRegion: "us-east-1", EventsTableName: "evs", EventsTableStreamArn: "arn:aws:dynamodb:eu-west-1:111111111111:table/evs/stream/2026-01-01T00:00:00.000", ApiKeysTableName: "keys"}, ""},
		{"cursor secret", map[string]any{"triggers:cursor-secret-name": "triggers-prod-cursor"}, stacks.Config{Env: "dev", Billing: dynamotable.OnDemand, EventsProfile: schema.ProfileSeed, CursorSecretName: "triggers-prod-cursor"}, ""},
		{"API-keys table ARN", map[string]any{"triggers:api-keys-table-name": "arn:aws:dynamodb:us-east-1:111111111111:table/keys"}, stacks.Config{},
			"context triggers:api-keys-table-name=arn:aws:dynamodb:us-east-1:111111111111:table/keys is not a table name: give the table's name (3-255 letters, digits and _.-), not its ARN; the data stack outputs it as ApiKeysTableName"},
		{"API-keys table too short", map[string]any{"triggers:api-keys-table-name": "k"}, stacks.Config{}, "context triggers:api-keys-table-name=k is not a table name"},
		{"events table ARN", map[string]any{"triggers:events-table-name": "arn:aws:dynamodb:us-east-1:111111111111:table/ev", "triggers:events-table-stream-arn": "arn:aws:dynamodb:us-east-1:111111111111:table/evs/stream/x"}, stacks.Config{},
			"context triggers:events-table-name=arn:aws:dynamodb:us-east-1:111111111111:table/ev is not a table name: give the table's name (3-255 letters, digits and _.-), not its ARN; scripts/restore-drill.sh prints it"},
		{"cursor secret ARN", map[string]any{"triggers:cursor-secret-name": "arn:aws:secretsmanager:us-east-1:1:secret:x"}, stacks.Config{}, "is not a secret name: give the name"},
		{"bad region", map[string]any{"triggers:region": "Virginia"}, stacks.Config{}, "context triggers:region=Virginia is not a region name: use one such as us-east-1"},
		{"replicas without region", map[string]any{"triggers:replica-regions": "eu-west-1"}, stacks.Config{}, "context triggers:replica-regions=eu-west-1 needs triggers:region"},
		{"bad replica", map[string]any{"triggers:region": "us-east-1", "triggers:replica-regions": "eu-west-1;eu-central-1"}, stacks.Config{}, `"eu-west-1;eu-central-1" is not a region name: list regions comma-separated`},
		{"replica is own region", map[string]any{"triggers:region": "us-east-1", "triggers:replica-regions": "us-east-1"}, stacks.Config{}, "lists us-east-1, the stacks' own region"},
		{"replica twice", map[string]any{"triggers:region": "us-east-1", "triggers:replica-regions": "eu-west-1,eu-west-1"}, stacks.Config{}, "lists eu-west-1 twice: remove one"},
		{"writer not a replica", map[string]any{"triggers:region": "us-east-1", "triggers:replica-regions": "eu-west-1", "triggers:writer-region": "eu-central-1"}, stacks.Config{},
			"context triggers:writer-region=eu-central-1 is neither triggers:region=us-east-1 nor one of triggers:replica-regions=eu-west-1"},
		{"writer without region", map[string]any{"triggers:writer-region": "us-east-1"}, stacks.Config{}, "context triggers:writer-region=us-east-1 needs triggers:region"},
		{"replica region without tables", map[string]any{"triggers:region": "eu-west-1", "triggers:writer-region": "us-east-1"}, stacks.Config{},
			"this is a replica region's run; give the global tables' replicas here with -c triggers:events-table-name=<name>"},
		{"stream of another region", map[string]any{"triggers:region": "eu-west-1", "triggers:events-table-name": "evs", "triggers:events-table-stream-arn": "arn:aws:dynamodb:us-east-1:111111111111:table/evs/stream/x"}, stacks.Config{},
			"is not a stream of triggers:region=eu-west-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := tt.ctx
			app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx})
			got, err := stacks.ConfigFromContext(app)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// -c triggers:env=prod names every stack of the app after prod;
// -c triggers:events-profile=lean makes the data stack's events table lean
// and tells the API stack's function; -c triggers:events-sharding=true
// turns sharding on in it.
func TestBuildNamesEveryStackAfterTheEnvironment(t *testing.T) {
	ctx := map[string]any{"aws:cdk:bundling-stacks": []any{}, "triggers:env": "prod", "triggers:events-profile": "lean", "triggers:events-sharding": true}
	app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx})
	cfg, err := stacks.ConfigFromContext(app)
	require.NoError(t, err)
	stacks.Build(app, cfg)
	var names []string
	for _, c := range *app.Node().Children() {
		if s, ok := c.(awscdk.Stack); ok {
			names = append(names, *s.StackName())
		}
	}
	assert.ElementsMatch(t, []string{"triggers-prod-data", "triggers-prod-api", "ticketing-prod-data", "tenant-prod-data", "ferryhook-prod-data"}, names)

	data := assertions.Template_FromStack(app.Node().FindChild(jsii.String("triggers-prod-data")).(awscdk.Stack), nil)
	data.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), map[string]any{
		"GlobalSecondaryIndexes": []any{assertions.Match_ObjectLike(&map[string]any{"IndexName": "StatusIndex"})},
		"StreamSpecification":    map[string]any{"StreamViewType": "NEW_AND_OLD_IMAGES"},
	})
	api := assertions.Template_FromStack(app.Node().FindChild(jsii.String("triggers-prod-api")).(awscdk.Stack), nil)
	api.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
		"Environment": map[string]any{"Variables": assertions.Match_ObjectLike(&map[string]any{"EVENTS_PROFILE": "lean", "EVENTS_SHARDING": "on"})},
	})
}

func TestStackNames(t *testing.T) {
	assert.Equal(t, "ticketing-staging-data", stacks.StackName("ticketing", "staging", "data"))
	assert.Equal(t, "triggers-prod", stacks.StackName("triggers", "prod", ""))
}

// -c triggers:region, triggers:replica-regions and triggers:writer-region
// deploy the same app as a global table's primary, and with the replicas'
// names as its replica region.
func TestBuildPrimaryAndReplicaRegions(t *testing.T) {
	build := func(ctx map[string]any) awscdk.App {
		ctx["aws:cdk:bundling-stacks"] = []any{}
		app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx})
		cfg, err := stacks.ConfigFromContext(app)
		require.NoError(t, err)
		stacks.Build(app, cfg)
		stacks.CheckWithCdkNag(app)
		return app
	}
	tmpl := func(app awscdk.App, name string) assertions.Template {
		s := app.Node().FindChild(jsii.String(name)).(awscdk.Stack)
		// cdk-nag passes the regional stacks as it passes the default ones.
		nag := assertions.Match_StringLikeRegexp(jsii.String("^(AwsSolutions|Serverless)-"))
		a := assertions.Annotations_FromStack(s)
		assert.Empty(t, *a.FindError(jsii.String("*"), nag), "cdk-nag errors in %s", name)
		assert.Empty(t, *a.FindWarning(jsii.String("*"), nag), "cdk-nag warnings in %s", name)
		return assertions.Template_FromStack(s, nil)
	}
	writerEnv := func(region string) map[string]any {
		return map[string]any{"Environment": map[string]any{"Variables": assertions.Match_ObjectLike(&map[string]any{"WRITER_REGION": region})}}
	}

	primary := build(map[string]any{"triggers:env": "prod", "triggers:region": "us-east-1", "triggers:replica-regions": "eu-west-1", "triggers:writer-region": "us-east-1"})
	assert.Equal(t, "us-east-1", *primary.Node().FindChild(jsii.String("triggers-prod-api")).(awscdk.Stack).Region())
	data := tmpl(primary, "triggers-prod-data")
	// Both tables are global: the API-keys table must be readable where
	// the replica region's authorizer runs.
	data.ResourceCountIs(jsii.String("AWS::DynamoDB::GlobalTable"), jsii.Number(2))
	for _, region := range []string{"us-east-1", "eu-west-1"} {
		data.AllResourcesProperties(jsii.String("AWS::DynamoDB::GlobalTable"), map[string]any{
			"Replicas": assertions.Match_ArrayWith(&[]any{assertions.Match_ObjectLike(&map[string]any{"Region": region})}),
		})
	}
	tmpl(primary, "triggers-prod-api").HasResourceProperties(jsii.String("AWS::Lambda::Function"), writerEnv("us-east-1"))

	replica := build(map[string]any{"triggers:env": "prod", "triggers:region": "eu-west-1", "triggers:writer-region": "us-east-1",
		"triggers:events-table-name": "evs", "triggers:events-table-stream-arn": "arn:aws:dynamodb:eu-west-1:111111111111:table/evs/stream/2026-01-01T00:00:00.000",
		"triggers:api-keys-table-name": "keys", "triggers:cursor-secret-name": "triggers-prod-cursor"})
	api := tmpl(replica, "triggers-prod-api")
	// Cursors are signed with the shared secret, not one of the stack's own.
	api.ResourceCountIs(jsii.String("AWS::SecretsManager::Secret"), jsii.Number(0))
	api.HasResourceProperties(jsii.String("AWS::Lambda::Function"), writerEnv("us-east-1"))
	// The API reads the replicas named, not the data stack's tables.
	apiJSON := fmt.Sprint(*api.ToJSON())
	assert.Contains(t, apiJSON, "table/keys")
	assert.Contains(t, apiJSON, "arn:aws:dynamodb:eu-west-1:111111111111:table/evs/stream/2026-01-01T00:00:00.000")
	assert.Contains(t, apiJSON, "secret:triggers-prod-cursor")
	assert.NotContains(t, apiJSON, "Fn::ImportValue", "a replica region's API stack must not depend on that region's data stack")
	assert.NotContains(t, apiJSON, "MonitoringDataArchiverErrors", "nor watch its archive")
	// TTL deletes some items in this region: its API stack archives them
	// (the primary's archive gets a replicated delete, which it skips).
	assert.Equal(t, 1, archiveMappings(t, api, "arn:aws:dynamodb:eu-west-1:111111111111:table/evs/stream/2026-01-01T00:00:00.000"))
	api.HasOutput(jsii.String("ArchiveBucketName"), assertions.Match_AnyValue())
	// The replica has Contributor Insights as the primary's table: the
	// region's dashboard has the section.
	assert.Contains(t, apiJSON, "Contributor Insights (events)")
	// A single-region run with both tables swapped for restored ones
	// (imported by name, as a replica run's are) is no replica run: a
	// restored table has no Contributor Insights (a restore does not carry
	// it over), so its dashboard has no section for them.
	restored := build(map[string]any{"triggers:env": "prod", "triggers:events-table-name": "ev-restored",
		"triggers:events-table-stream-arn": "arn:aws:dynamodb:us-east-1:111111111111:table/ev-restored/stream/2026-01-01T00:00:00.000",
		"triggers:api-keys-table-name":     "keys-restored"})
	restoredJSON := fmt.Sprint(*tmpl(restored, "triggers-prod-api").ToJSON())
	assert.Contains(t, restoredJSON, "table/keys-restored", "the run imports the restored API-keys table")
	assert.NotContains(t, restoredJSON, "Contributor Insights (events)",
		"restored tables have no Contributor Insights (a restore does not carry it over)")
	// Both archives are watched: the imported table's (this stack's) and
	// the data stack's own, which still archives what TTL deletes from the
	// replaced table (it was unmonitored during a swap).
	for _, id := range []string{"MonitoringArchiverErrors", "MonitoringDataArchiverErrors", "MonitoringDataArchiverIteratorAge", "MonitoringDataArchiveFailuresNotEmpty"} {
		assert.Contains(t, restoredJSON, id, "alarm %s", id)
	}
	assert.Contains(t, restoredJSON, "Archive of expired events (Data)")
}

// The failover drill and the multi-region guide give the app's real
// context keys, so their commands run as written.
func TestMultiRegionDocsUseTheAppsContextKeys(t *testing.T) {
	known := map[string]bool{}
	for _, k := range []string{stacks.ContextEnv, stacks.ContextBilling, stacks.ContextEventsTableName, stacks.ContextEventsTableStreamArn,
		stacks.ContextEventsProfile, stacks.ContextCloudWatchRole, stacks.ContextRegion, stacks.ContextReplicaRegions,
		stacks.ContextWriterRegion, stacks.ContextApiKeysTableName, stacks.ContextCursorSecretName} {
		known[k] = true
	}
	keyRE := regexp.MustCompile(`-c ([a-z:-]+)=`)
	for _, doc := range []string{"../docs/runbook.md", "../docs/multi-region.md"} {
		b, err := os.ReadFile(doc)
		require.NoError(t, err)
		n := 0
		for _, m := range keyRE.FindAllStringSubmatch(string(b), -1) {
			if strings.HasPrefix(m[1], "triggers:") {
				assert.True(t, known[m[1]], "%s: -c %s= is not a context key of the app (stacks.Context*)", doc, m[1])
				n++
			}
		}
		assert.NotZero(t, n, "%s gives no -c key=value", doc)
	}
	b, err := os.ReadFile("../docs/runbook.md")
	require.NoError(t, err)
	drill := string(b)[strings.Index(string(b), "## Regional failover drill"):]
	assert.Contains(t, drill, "-c triggers:writer-region=")
}
