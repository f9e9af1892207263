package assertions

import (
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
