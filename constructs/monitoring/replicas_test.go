package monitoring_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/constructs/dynamotable"
	"github.com/triggers-dev/triggers/constructs/monitoring"
	"github.com/triggers-dev/triggers/schema"
)

// A dynamotable global table gets a ReplicationLatency alarm per replica
// region without ReplicaRegions being given.
func TestGlobalTableReplicationAlarms(t *testing.T) {
	stack := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("Global"), &awscdk.StackProps{
		Env: &awscdk.Environment{Account: jsii.String("111111111111"), Region: jsii.String("us-east-1")},
	})
	orders := schema.Table{Name: "orders", PartitionKey: schema.S("id"), Stream: schema.StreamNewAndOldImages}
	table := dynamotable.NewTable(stack, jsii.String("Orders"), &dynamotable.TableProps{Schema: &orders, TableOptions: dynamotable.TableOptions{
		Replicas: []dynamotable.Replica{{Region: "eu-west-1"}, {Region: "ap-southeast-2"}},
	}})
	monitoring.NewTableMonitoring(stack, jsii.String("OrdersMonitoring"), &monitoring.TableMonitoringProps{Table: table})
	alarms := *assertions.Template_FromStack(stack, nil).FindResources(jsii.String("AWS::CloudWatch::Alarm"), nil)
	var regions []string
	for _, a := range alarms {
		b, err := json.Marshal(*a)
		require.NoError(t, err)
		if !strings.Contains(string(b), `"ReplicationLatency"`) {
			continue
		}
		for _, r := range []string{"eu-west-1", "ap-southeast-2"} {
			if strings.Contains(string(b), `"ReceivingRegion","Value":"`+r+`"`) {
				regions = append(regions, r)
			}
		}
	}
	assert.ElementsMatch(t, []string{"eu-west-1", "ap-southeast-2"}, regions, "one ReplicationLatency alarm per replica region among %d alarms", len(alarms))
}
