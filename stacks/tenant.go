package stacks

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"

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
type TenantStack struct {
	awscdk.Stack
	APIKeys, Events *dynamotable.Table
}

// NewTenantStack creates the stack.
func NewTenantStack(scope constructs.Construct, id *string, props *TenantStackProps) *TenantStack {
	if props == nil {
		props = &TenantStackProps{}
	}
	stack := newDataStack(scope, id, "tenant", &props.DataStackProps)
	return &TenantStack{
		Stack:   stack,
		APIKeys: addTable(stack, "TenantApiKeys", schema.APIKeys(), props.TableOptions),
		Events:  addTable(stack, "Events", schema.TenantEvents(props.EventTypeIndex), props.TableOptions),
	}
}
