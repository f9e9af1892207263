package dynamotable_test

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
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

// An on-demand table capped and pre-warmed for a launch, on Standard-IA,
// readable from another account through a resource policy (with a
// customer-managed key, which that account can be allowed to use).
func ExampleNewTable_tableOptions() {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Catalog"), nil)
	catalog := schema.Table{Name: "catalog", PartitionKey: schema.S("sku")}
	key := awskms.NewKey(stack, jsii.String("CatalogKey"), &awskms.KeyProps{EnableKeyRotation: jsii.Bool(true)})
	dynamotable.NewTable(stack, jsii.String("Catalog"), &dynamotable.TableProps{
		Schema: &catalog,
		TableOptions: dynamotable.TableOptions{
			TableClass:           awsdynamodb.TableClass_STANDARD_INFREQUENT_ACCESS,
			MaxReadRequestUnits:  30000,
			MaxWriteRequestUnits: 5000,
			WarmThroughput:       &dynamotable.WarmThroughput{ReadUnitsPerSecond: 30000},
			EncryptionKey:        key,
			ResourcePolicy: awsiam.NewPolicyDocument(&awsiam.PolicyDocumentProps{Statements: &[]awsiam.PolicyStatement{
				awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
					Principals: &[]awsiam.IPrincipal{awsiam.NewAccountPrincipal(jsii.String("222222222222"))},
					Actions:    jsii.Strings("dynamodb:GetItem", "dynamodb:Query"),
					Resources:  jsii.Strings("*"), // the table itself
				}),
			}}),
		},
	})

	// A warm throughput below what every table starts with fails at synth.
	err := dynamotable.ValidateProps(&dynamotable.TableProps{Schema: &catalog, TableOptions: dynamotable.TableOptions{
		WarmThroughput: &dynamotable.WarmThroughput{WriteUnitsPerSecond: 1000},
	}})
	fmt.Println(err)
	// Output:
	// WarmThroughput.WriteUnitsPerSecond 1000 is below 4000, the warm throughput every new table and index starts with: give the peak you expect (at least 4000), or leave it 0
}

// A global table: the stack's region (which must be concrete) holds the
// first replica, each Replica one more; eu-west-1 keeps its data on
// Standard-IA and 7 days of point-in-time recovery, every other setting is
// the table's. The schema needs a stream.
func ExampleNewTable_replicas() {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Orders"), &awscdk.StackProps{
		Env: &awscdk.Environment{Account: jsii.String("111111111111"), Region: jsii.String("us-east-1")},
	})
	orders := schema.Table{Name: "orders", PartitionKey: schema.S("order_id"), Stream: schema.StreamNewAndOldImages}
	table := dynamotable.NewTable(stack, jsii.String("Orders"), &dynamotable.TableProps{
		Schema: &orders,
		TableOptions: dynamotable.TableOptions{
			Replicas: []dynamotable.Replica{
				{Region: "eu-west-1", TableClass: awsdynamodb.TableClass_STANDARD_INFREQUENT_ACCESS, RecoveryPeriodDays: 7},
				{Region: "ap-southeast-2"},
			},
		},
	})

	tmpl := assertions.Template_FromStack(stack, nil)
	fmt.Println("global tables:", len(*tmpl.FindResources(jsii.String("AWS::DynamoDB::GlobalTable"), nil)))
	fmt.Println("replica regions:", table.ReplicaRegions())
	// Output:
	// global tables: 1
	// replica regions: [eu-west-1 ap-southeast-2]
}
