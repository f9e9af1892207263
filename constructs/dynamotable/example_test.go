package dynamotable_test

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/triggers-dev/triggers/constructs/dynamotable"
	"github.com/triggers-dev/triggers/schema"
)

// A table from any schema, provisioned with auto scaling on the table and
// its index.
func ExampleNewTable() {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Orders"), nil)

	orders := schema.Table{
		Name:         "orders",
		PartitionKey: schema.S("customer_id"),
		SortKey:      schema.Ptr(schema.S("order_id")),
		GlobalIndexes: []schema.Index{
			{Name: "ByStatus", PartitionKey: schema.S("status"), SortKey: schema.Ptr(schema.S("created_at")), Projection: schema.KeysOnly()},
		},
		TTLAttribute: "expires_at",
	}
	dynamotable.NewTable(stack, jsii.String("Orders"), &dynamotable.TableProps{
		Schema: &orders,
		TableOptions: dynamotable.TableOptions{
			Billing:      dynamotable.Provisioned,
			WriteScaling: &dynamotable.Scaling{MinCapacity: 10, MaxCapacity: 500},
		},
	})

	tmpl := assertions.Template_FromStack(stack, nil)
	fmt.Println("tables:", len(*tmpl.FindResources(jsii.String("AWS::DynamoDB::Table"), nil)))
	fmt.Println("scalable targets:", len(*tmpl.FindResources(jsii.String("AWS::ApplicationAutoScaling::ScalableTarget"), nil)))
	// Output:
	// tables: 1
	// scalable targets: 4
}
