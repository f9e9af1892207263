package stacks

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/triggers-dev/triggers/constructs/dynamotable"
	"github.com/triggers-dev/triggers/schema"
)

// DataStackProps are the settings every stateful stack shares.
type DataStackProps struct {
	awscdk.StackProps
	// Env is the environment name, tagged on every resource.
	//
	// Default: "dev".
	Env string
	// TableOptions apply to every table of the stack (billing, PITR,
	// encryption key, removal policy...).
	//
	// Default: dynamotable's defaults (on demand, PITR 35 days, AWS-managed
	// encryption, deletion protection, RETAIN).
	TableOptions dynamotable.TableOptions
	// AlarmTopic receives the ALARM and OK notifications of every alarm of
	// the stack's tables (ticketing, tenant and Ferryhook stacks).
	//
	// Default: a new topic per stack (AWS-managed key alias/aws/sns, TLS
	// only), output as AlarmTopicArn.
	AlarmTopic awssns.ITopic
}

// newDataStack creates a stateful stack: termination protection on unless
// the caller set it, tagged with system and environment.
func newDataStack(scope constructs.Construct, id *string, system string, props *DataStackProps) awscdk.Stack {
	env := envName(props.Env)
	sp := props.StackProps
	if sp.TerminationProtection == nil {
		sp.TerminationProtection = jsii.Bool(true)
	}
	stack := awscdk.NewStack(scope, id, &sp)
	awscdk.Tags_Of(stack).Add(jsii.String("triggers:env"), jsii.String(env), nil)
	awscdk.Tags_Of(stack).Add(jsii.String("triggers:system"), jsii.String(system), nil)
	return stack
}

// addTable adds a table from a schema, with its name output (exported as
// <stack>-<id>TableName).
func addTable(stack awscdk.Stack, id string, s schema.Table, opts dynamotable.TableOptions) *dynamotable.Table {
	t := dynamotable.NewTable(stack, jsii.String(id), &dynamotable.TableProps{Schema: &s, TableOptions: opts})
	awscdk.NewCfnOutput(stack, jsii.String(id+"TableName"), &awscdk.CfnOutputProps{
		Value:       t.TableName(),
		Description: jsii.String(fmt.Sprintf("%s table name (schema %s)", id, s.Name)),
		ExportName:  jsii.String(*stack.StackName() + "-" + id + "TableName"),
	})
	return t
}
