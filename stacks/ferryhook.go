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
// patterns: stacks/ACCESS_PATTERNS.md.
type FerryhookStack struct {
	awscdk.Stack
	Main, Events *dynamotable.Table
}

// NewFerryhookStack creates the stack.
func NewFerryhookStack(scope constructs.Construct, id *string, props *DataStackProps) *FerryhookStack {
	if props == nil {
		props = &DataStackProps{}
	}
	stack := newDataStack(scope, id, "ferryhook", props)
	return &FerryhookStack{
		Stack:  stack,
		Main:   addTable(stack, "Main", schema.FerryhookMain(), props.TableOptions),
		Events: addTable(stack, "Events", schema.FerryhookEvents(), props.TableOptions),
	}
}
