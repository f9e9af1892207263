package triggersapi_test

import (
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/assert"

	"github.com/triggers-dev/triggers/constructs/dynamotable"
	"github.com/triggers-dev/triggers/constructs/eventstore"
	"github.com/triggers-dev/triggers/constructs/triggersapi"
)

// The table constructs embed an internal core; each is still a real jsii
// construct: a scope for children, and Tags_Of reaches its table.
func TestTableConstructsAreJsiiConstructs(t *testing.T) {
	stack := awscdk.NewStack(newApp(), jsii.String("S"), nil)
	keys := triggersapi.NewApiKeysTable(stack, jsii.String("ApiKeys"), nil)
	events := eventstore.NewEventsTable(stack, jsii.String("Events"), nil)
	sc := eventstore.NewEventsTable(stack, jsii.String("Plain"), nil).Schema()
	plain := dynamotable.NewTable(stack, jsii.String("Table"), &dynamotable.TableProps{Schema: &sc})
	awscdk.Tags_Of(keys).Add(jsii.String("owner"), jsii.String("keys"), nil)
	awscdk.Tags_Of(events).Add(jsii.String("owner"), jsii.String("events"), nil)
	awssqs.NewQueue(keys, jsii.String("Child"), nil)
	awssqs.NewQueue(events, jsii.String("Child"), nil)
	awssqs.NewQueue(plain, jsii.String("Child"), nil)
	assert.Equal(t, "S/ApiKeys/Child", *keys.Node().FindChild(jsii.String("Child")).Node().Path())
	assert.Equal(t, "S/Events/Resource", *events.Node().DefaultChild().Node().Path())
	assert.Equal(t, dynamotable.OnDemand, keys.Billing())
	tmpl := assertions.Template_FromStack(stack, nil)
	for _, owner := range []string{"keys", "events"} {
		tmpl.ResourcePropertiesCountIs(jsii.String("AWS::DynamoDB::Table"), map[string]any{
			"Tags": assertions.Match_ArrayWith(&[]any{map[string]any{"Key": "owner", "Value": owner}}),
		}, jsii.Number(1))
	}
}
