package monitoring_test

import (
	"fmt"
	"sort"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/jsii-runtime-go"

	"github.com/triggers-dev/triggers/constructs/dynamotable"
	"github.com/triggers-dev/triggers/constructs/monitoring"
	"github.com/triggers-dev/triggers/schema"
)

// Monitoring of one provisioned table with a GSI: its own dashboard, and
// alarms on throttling (table and GSI), system errors, latency of the
// operations the application calls and consumed capacity (table and GSI),
// each notifying the on-call topic.
func ExampleNewTableMonitoring() {
	stack := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("Data"), nil)
	orders := dynamotable.NewTable(stack, jsii.String("Orders"), &dynamotable.TableProps{
		Schema: &schema.Table{
			Name:          "orders",
			PartitionKey:  schema.S("customer_id"),
			SortKey:       schema.Ptr(schema.S("order_id")),
			GlobalIndexes: []schema.Index{{Name: "ByStatus", PartitionKey: schema.S("status")}},
		},
		TableOptions: dynamotable.TableOptions{Billing: dynamotable.Provisioned},
	})
	onCall := awssns.Topic_FromTopicArn(stack, jsii.String("OnCall"), jsii.String("arn:aws:sns:eu-west-1:111111111111:on-call"))
	mon := monitoring.NewTableMonitoring(stack, jsii.String("OrdersMonitoring"), &monitoring.TableMonitoringProps{
		Table:         orders,
		DashboardName: "orders-prod",
		AlarmTopic:    onCall,
		Operations:    []string{"GetItem", "Query", "PutItem"},
		Thresholds:    &monitoring.TableThresholds{LatencyMs: map[string]float64{"Query": 40}},
	})
	ids := make([]string, 0, len(mon.Alarms))
	for id := range mon.Alarms {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		fmt.Println(id)
	}
	// Output:
	// ByStatusReadCapacity
	// ByStatusReadThrottleEvents
	// ByStatusWriteCapacity
	// ByStatusWriteThrottleEvents
	// GetItemLatency
	// PutItemLatency
	// QueryLatency
	// ReadCapacity
	// ReadThrottleEvents
	// SystemErrors
	// WriteCapacity
	// WriteThrottleEvents
}
