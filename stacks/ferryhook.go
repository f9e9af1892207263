package stacks

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"

	"github.com/triggers-dev/triggers/constructs/dynamotable"
	"github.com/triggers-dev/triggers/schema"
)

// FerryhookStack is the webhook relay of seed 004: ferryhook-main (users,
// sources, connections, API keys; GSI1-GSI3) and ferryhook-events (events,
// delivery attempts; GSI1; TTL on expiresAt), on demand with PITR. Access
// patterns: stacks/ACCESS_PATTERNS.md. One dashboard ("ferryhook-<env>")
// shows both tables, and their alarms go to one topic
// (DataStackProps.AlarmTopic, else the stack's own). Seed 004 asks for no
// backups beyond PITR (TableOptions.Backup adds a plan).
type FerryhookStack struct {
	awscdk.Stack
	Main, Events *dynamotable.Table
	// Monitoring is the stack's dashboard, alarm topic and per-table alarms.
	Monitoring *TablesMonitoring
}

// NewFerryhookStack creates the stack.
func NewFerryhookStack(scope constructs.Construct, id *string, props *DataStackProps) *FerryhookStack {
	if props == nil {
		props = &DataStackProps{}
	}
	stack := newDataStack(scope, id, "ferryhook", props)
	s := &FerryhookStack{
		Stack:  stack,
		Main:   addTable(stack, "Main", schema.FerryhookMain(), props.TableOptions),
		Events: addTable(stack, "Events", schema.FerryhookEvents(), props.TableOptions),
	}
	s.Monitoring = monitorTables(stack, "ferryhook", props.Env, props.AlarmTopic,
		monitoredTable{id: "Main", table: s.Main, insights: ptrTrue(props.TableOptions.ContributorInsights)},
		monitoredTable{id: "Events", table: s.Events, insights: ptrTrue(props.TableOptions.ContributorInsights)},
	)
	return s
}
