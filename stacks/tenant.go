package stacks

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/triggers-dev/triggers/constructs/dynamotable"
	"github.com/triggers-dev/triggers/schema"
)

// TenantStackProps configures the tenant stack of seed 003.
type TenantStackProps struct {
	DataStackProps
	// EventTypeIndex adds the seed's optional event-type-index
	// (tenant_id, gsi2sk = event_type#timestamp) to the events table.
	//
	// Default: false.
	EventTypeIndex bool
}

// TenantStack is the tenant design of seed 003: the API-keys table (keyed
// by the key's SHA-256, not the key) and the events table with
// status-index. Access patterns: stacks/ACCESS_PATTERNS.md.
//
// The events table is partitioned by tenant, so its Contributor Insights
// (throttled keys only, on the table and its indexes, unless
// TableOptions.ContributorInsights is set) name the tenants that hit a
// partition's limits. One dashboard ("tenant-<env>") shows both tables,
// and their alarms go to one topic (DataStackProps.AlarmTopic, else the
// stack's own). Seed 003 asks for no backups beyond PITR
// (TableOptions.Backup adds a plan).
type TenantStack struct {
	awscdk.Stack
	APIKeys, Events *dynamotable.Table
	// Monitoring is the stack's dashboard, alarm topic and per-table alarms.
	Monitoring *TablesMonitoring
}

// NewTenantStack creates the stack.
func NewTenantStack(scope constructs.Construct, id *string, props *TenantStackProps) *TenantStack {
	if props == nil {
		props = &TenantStackProps{}
	}
	stack := newDataStack(scope, id, "tenant", &props.DataStackProps)
	eventsOpts := props.TableOptions
	if eventsOpts.ContributorInsights == nil {
		eventsOpts.ContributorInsights = jsii.Bool(true)
		eventsOpts.ContributorInsightsMode = awsdynamodb.ContributorInsightsMode_THROTTLED_KEYS
		eventsOpts.ContributorInsightsOnIndexes = jsii.Bool(true)
	}
	s := &TenantStack{
		Stack:   stack,
		APIKeys: addTable(stack, "TenantApiKeys", schema.APIKeys(), props.TableOptions),
		Events:  addTable(stack, "Events", schema.TenantEvents(props.EventTypeIndex), eventsOpts),
	}
	s.Monitoring = monitorTables(stack, "tenant", props.Env, props.AlarmTopic,
		monitoredTable{id: "TenantApiKeys", table: s.APIKeys, insights: ptrTrue(props.TableOptions.ContributorInsights)},
		monitoredTable{id: "Events", table: s.Events, insights: ptrTrue(eventsOpts.ContributorInsights)},
	)
	return s
}

func ptrTrue(b *bool) bool { return b != nil && *b }
