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
type TicketingStack struct {
	awscdk.Stack
	Events, Registrations, Tickets, Users *dynamotable.Table
}

// NewTicketingStack creates the stack.
func NewTicketingStack(scope constructs.Construct, id *string, props *DataStackProps) *TicketingStack {
	if props == nil {
		props = &DataStackProps{}
	}
	stack := newDataStack(scope, id, "ticketing", props)
	return &TicketingStack{
		Stack:         stack,
		Events:        addTable(stack, "Events", schema.TicketingEvents(), props.TableOptions),
		Registrations: addTable(stack, "Registrations", schema.TicketingRegistrations(), props.TableOptions),
		Tickets:       addTable(stack, "Tickets", schema.TicketingTickets(), props.TableOptions),
		Users:         addTable(stack, "Users", schema.TicketingUsers(), props.TableOptions),
	}
}
