package stacks

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"

	"github.com/triggers-dev/triggers/constructs/dynamotable"
	"github.com/triggers-dev/triggers/schema"
)

// TicketingStack is the event-ticketing system of seed 002: Events,
// Registrations, Tickets and Users tables with every GSI (PaymentIndex
// sparse), on demand, PITR, encrypted, TTL on tickets. Access patterns:
// stacks/ACCESS_PATTERNS.md.
//
// Seed 002's backup line ("weekly backups retained for 35 days") is an AWS
// Backup plan per table (Sundays 05:00 UTC, kept 35 days) into one vault of
// the stack ("BackupVault", AWS-managed key, retained), unless
// TableOptions.Backup says otherwise. One dashboard ("ticketing-<env>")
// shows the four tables, and their alarms go to one topic
// (DataStackProps.AlarmTopic, else the stack's own).
type TicketingStack struct {
	awscdk.Stack
	Events, Registrations, Tickets, Users *dynamotable.Table
	// Monitoring is the stack's dashboard, alarm topic and per-table alarms.
	Monitoring *TablesMonitoring
}

// NewTicketingStack creates the stack.
func NewTicketingStack(scope constructs.Construct, id *string, props *DataStackProps) *TicketingStack {
	if props == nil {
		props = &DataStackProps{}
	}
	stack := newDataStack(scope, id, "ticketing", props)
	opts := seed002Backup(stack, props.TableOptions)
	s := &TicketingStack{
		Stack:         stack,
		Events:        addTable(stack, "Events", schema.TicketingEvents(), opts),
		Registrations: addTable(stack, "Registrations", schema.TicketingRegistrations(), opts),
		Tickets:       addTable(stack, "Tickets", schema.TicketingTickets(), opts),
		Users:         addTable(stack, "Users", schema.TicketingUsers(), opts),
	}
	s.Monitoring = monitorTables(stack, "ticketing", props.Env, props.AlarmTopic,
		monitoredTable{id: "Events", table: s.Events, insights: ptrTrue(opts.ContributorInsights)},
		monitoredTable{id: "Registrations", table: s.Registrations, insights: ptrTrue(opts.ContributorInsights)},
		monitoredTable{id: "Tickets", table: s.Tickets, insights: ptrTrue(opts.ContributorInsights)},
		monitoredTable{id: "Users", table: s.Users, insights: ptrTrue(opts.ContributorInsights)},
	)
	return s
}
