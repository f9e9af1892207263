package dynamotable_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/constructs/dynamotable"
	"github.com/triggers-dev/triggers/internal/testkit/cdktest"
	"github.com/triggers-dev/triggers/schema"
)

// regionStack returns a stack in a concrete region, as a global table
// needs.
func regionStack(region string) awscdk.Stack {
	return awscdk.NewStack(awscdk.NewApp(nil), jsii.String("S"), &awscdk.StackProps{
		Env: &awscdk.Environment{Account: jsii.String("111111111111"), Region: jsii.String(region)},
	})
}

// A replica can turn off Contributor Insights the table has on: without
// a setting of its own, CDK's TableV2 gives it the table's. (Found by
// review: the off was dropped, and the replica kept the rules.)
func TestReplicaTurnsContributorInsightsOff(t *testing.T) {
	stack := regionStack("us-east-1")
	dynamotable.NewTable(stack, jsii.String("T"), &dynamotable.TableProps{Schema: events(), TableOptions: dynamotable.TableOptions{
		ContributorInsights: jsii.Bool(true),
		Replicas:            []dynamotable.Replica{{Region: "eu-west-1", ContributorInsights: jsii.Bool(false)}, {Region: "ap-southeast-2"}},
	}})
	replicas := replicasByRegion(globalTable(t, assertions.Template_FromStack(stack, nil)))
	assert.Equal(t, map[string]any{"Enabled": true}, replicas["us-east-1"]["ContributorInsightsSpecification"])
	assert.Equal(t, map[string]any{"Enabled": false}, replicas["eu-west-1"]["ContributorInsightsSpecification"], "turned off for its replica")
	assert.Equal(t, map[string]any{"Enabled": true}, replicas["ap-southeast-2"]["ContributorInsightsSpecification"], "the table's setting")
}

// globalTable returns the only AWS::DynamoDB::GlobalTable of tmpl, as
// plain JSON values.
func globalTable(t *testing.T, tmpl assertions.Template) map[string]any {
	t.Helper()
	found := *tmpl.FindResources(jsii.String("AWS::DynamoDB::GlobalTable"), nil)
	require.Len(t, found, 1, "want one AWS::DynamoDB::GlobalTable")
	for _, r := range found {
		b, err := json.Marshal(r)
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m))
		return m["Properties"].(map[string]any)
	}
	return nil
}

// replicasByRegion indexes a GlobalTable's Replicas by region.
func replicasByRegion(props map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, r := range props["Replicas"].([]any) {
		m := r.(map[string]any)
		out[m["Region"].(string)] = m
	}
	return out
}

// With Replicas, the table is one AWS::DynamoDB::GlobalTable (and no
// AWS::DynamoDB::Table) with a replica in the stack's region and each
// replica region; every replica has point-in-time recovery and deletion
// protection, the table its schema's stream, TTL and GSIs and server-side
// encryption; per-replica overrides reach only their replica. cdk-nag's
// DynamoDB rules inspect AWS::DynamoDB::Table only, so this test is what
// checks PITR and encryption on every replica.
func TestReplicasMakeAGlobalTable(t *testing.T) {
	stack := regionStack("us-east-1")
	table := dynamotable.NewTable(stack, jsii.String("T"), &dynamotable.TableProps{Schema: events(), TableOptions: dynamotable.TableOptions{
		RecoveryPeriodDays: 21,
		Replicas: []dynamotable.Replica{
			{Region: "eu-west-1", TableClass: awsdynamodb.TableClass_STANDARD_INFREQUENT_ACCESS, RecoveryPeriodDays: 7, ContributorInsights: jsii.Bool(true)},
			{Region: "ap-southeast-2", MaxReadRequestUnits: 500},
		},
	}})
	fn := awslambda.NewFunction(stack, jsii.String("Fn"), &awslambda.FunctionProps{
		Runtime: awslambda.Runtime_NODEJS_22_X(), Handler: jsii.String("index.handler"), Code: awslambda.Code_FromInline(jsii.String("exports.handler = async () => {}")),
	})
	table.GrantReadWriteData(fn)
	table.AddStreamConsumer(fn, nil)
	// Given filters are combined with the origin filters (an INSERT-only
	// filter keeps the two INSERT ones); AllOrigins leaves them alone.
	fn2 := awslambda.NewFunction(stack, jsii.String("Fn2"), &awslambda.FunctionProps{
		Runtime: awslambda.Runtime_NODEJS_22_X(), Handler: jsii.String("index.handler"), Code: awslambda.Code_FromInline(jsii.String("exports.handler = async () => {}")),
	})
	table.AddStreamConsumer(fn2, &dynamotable.StreamConsumerOptions{Filters: []*map[string]any{awslambda.FilterCriteria_Filter(&map[string]any{
		"eventName": awslambda.FilterRule_IsEqual(jsii.String("INSERT")),
	})}})
	fn3 := awslambda.NewFunction(stack, jsii.String("Fn3"), &awslambda.FunctionProps{
		Runtime: awslambda.Runtime_NODEJS_22_X(), Handler: jsii.String("index.handler"), Code: awslambda.Code_FromInline(jsii.String("exports.handler = async () => {}")),
	})
	table.AddStreamConsumer(fn3, &dynamotable.StreamConsumerOptions{AllOrigins: true})

	assert.Equal(t, []string{"eu-west-1", "ap-southeast-2"}, table.ReplicaRegions())
	assert.NotNil(t, table.L2V2())
	assert.NotNil(t, table.CfnGlobalTable())
	assert.PanicsWithError(t, `table "events" is a global table (replicas in eu-west-1, ap-southeast-2): it is an awsdynamodb.TableV2, use L2V2() and CfnGlobalTable()`, func() { table.L2() })

	id := *stack.GetLogicalId(table.CfnGlobalTable())
	tmpl := assertions.Template_FromStack(stack, nil)
	tmpl.ResourceCountIs(jsii.String("AWS::DynamoDB::Table"), jsii.Number(0))
	tmpl.HasResource(jsii.String("AWS::DynamoDB::GlobalTable"), map[string]any{"DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain"})
	props := globalTable(t, tmpl)
	assert.Equal(t, map[string]any{"StreamViewType": "NEW_AND_OLD_IMAGES"}, props["StreamSpecification"])
	assert.Equal(t, map[string]any{"AttributeName": schema.AttrTTL, "Enabled": true}, props["TimeToLiveSpecification"])
	assert.Equal(t, "PAY_PER_REQUEST", props["BillingMode"])
	assert.Equal(t, map[string]any{"SSEEnabled": true, "SSEType": "KMS"}, props["SSESpecification"])
	var indexes []string
	for _, ix := range props["GlobalSecondaryIndexes"].([]any) {
		indexes = append(indexes, ix.(map[string]any)["IndexName"].(string))
	}
	assert.ElementsMatch(t, []string{schema.EventTypeIndex, schema.StatusIndex}, indexes)

	replicas := replicasByRegion(props)
	require.Len(t, replicas, 3, "a replica in the stack's region and one per Replicas entry")
	wantDays := map[string]float64{"us-east-1": 21, "eu-west-1": 7, "ap-southeast-2": 21}
	for region, r := range replicas {
		assert.Equal(t, map[string]any{"PointInTimeRecoveryEnabled": true, "RecoveryPeriodInDays": wantDays[region]}, r["PointInTimeRecoverySpecification"], "PITR of the replica in %s", region)
		assert.Equal(t, true, r["DeletionProtectionEnabled"], "deletion protection of the replica in %s", region)
	}
	assert.Equal(t, "STANDARD_INFREQUENT_ACCESS", replicas["eu-west-1"]["TableClass"])
	assert.Nil(t, replicas["us-east-1"]["TableClass"], "the override reaches its replica only")
	assert.Equal(t, map[string]any{"Enabled": true}, replicas["eu-west-1"]["ContributorInsightsSpecification"])
	assert.Nil(t, replicas["ap-southeast-2"]["ContributorInsightsSpecification"])
	assert.Equal(t, map[string]any{"MaxReadRequestUnits": float64(500)}, replicas["ap-southeast-2"]["ReadOnDemandThroughputSettings"])
	for _, ix := range replicas["ap-southeast-2"]["GlobalSecondaryIndexes"].([]any) {
		assert.Equal(t, map[string]any{"MaxReadRequestUnits": float64(500)}, ix.(map[string]any)["ReadOnDemandThroughputSettings"], "a replica's read cap holds for its GSIs")
	}

	// The stream consumer reads the global table's stream in this region,
	// and the grants name the table and its GSIs.
	tmpl.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), map[string]any{
		"EventSourceArn": map[string]any{"Fn::GetAtt": []any{id, "StreamArn"}},
		// Only the records of items this region accepted (or without an
		// origin): a replicated write is delivered by its own region.
		"FilterCriteria": map[string]any{"Filters": []any{
			map[string]any{"Pattern": `{"dynamodb":{"NewImage":{"origin_region":{"S":["us-east-1"]}}},"eventName":["INSERT","MODIFY"]}`},
			map[string]any{"Pattern": `{"dynamodb":{"NewImage":{"origin_region":[{"exists":false}]}},"eventName":["INSERT","MODIFY"]}`},
			map[string]any{"Pattern": `{"dynamodb":{"OldImage":{"origin_region":{"S":["us-east-1"]}}},"eventName":["REMOVE"]}`},
			map[string]any{"Pattern": `{"dynamodb":{"OldImage":{"origin_region":[{"exists":false}]}},"eventName":["REMOVE"]}`},
		}},
	})
	tmpl.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), map[string]any{
		"FunctionName": map[string]any{"Ref": *stack.GetLogicalId(fn2.Node().DefaultChild().(awscdk.CfnElement))},
		"FilterCriteria": map[string]any{"Filters": []any{
			map[string]any{"Pattern": `{"dynamodb":{"NewImage":{"origin_region":{"S":["us-east-1"]}}},"eventName":["INSERT"]}`},
			map[string]any{"Pattern": `{"dynamodb":{"NewImage":{"origin_region":[{"exists":false}]}},"eventName":["INSERT"]}`},
		}},
	})
	tmpl.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), map[string]any{
		"FunctionName":   map[string]any{"Ref": *stack.GetLogicalId(fn3.Node().DefaultChild().(awscdk.CfnElement))},
		"FilterCriteria": assertions.Match_Absent(),
	})
	assert.PanicsWithError(t, `stream consumer of table "events": no record passes both the given Filters and the origin filters of a global table: check the Filters' eventName, or set AllOrigins: true`, func() {
		table.AddStreamConsumer(fn3, &dynamotable.StreamConsumerOptions{Filters: []*map[string]any{awslambda.FilterCriteria_Filter(&map[string]any{
			"eventName": awslambda.FilterRule_IsEqual(jsii.String("CREATE")),
		})}})
	})
	tmpl.HasResourceProperties(jsii.String("AWS::IAM::Policy"), map[string]any{
		"PolicyDocument": map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{map[string]any{
			"Action":   dynamotable.ReadWriteDataActions(),
			"Effect":   "Allow",
			"Resource": assertions.Match_ArrayWith(&[]any{map[string]any{"Fn::GetAtt": []any{id, "Arn"}}}),
		}})},
	})
}

// A customer-managed key needs a key of each replica's region; provisioned
// billing scales writes alike everywhere and reads per replica.
func TestReplicasWithKeysAndProvisionedReads(t *testing.T) {
	stack := regionStack("us-east-1")
	key := awskms.NewKey(stack, jsii.String("Key"), &awskms.KeyProps{EnableKeyRotation: jsii.Bool(true)})
	euKey := awskms.Key_FromKeyArn(stack, jsii.String("EuKey"), jsii.String("arn:aws:kms:eu-west-1:111111111111:key/eu"))
	dynamotable.NewTable(stack, jsii.String("T"), &dynamotable.TableProps{Schema: events(), TableOptions: dynamotable.TableOptions{
		Billing: dynamotable.Provisioned, EncryptionKey: key,
		WriteScaling: &dynamotable.Scaling{MinCapacity: 10, MaxCapacity: 50},
		Replicas:     []dynamotable.Replica{{Region: "eu-west-1", EncryptionKey: euKey, ReadScaling: &dynamotable.Scaling{MinCapacity: 2, MaxCapacity: 20}}},
	}})
	props := globalTable(t, assertions.Template_FromStack(stack, nil))
	assert.Equal(t, "PROVISIONED", props["BillingMode"])
	assert.Equal(t, map[string]any{"SSEEnabled": true, "SSEType": "KMS"}, props["SSESpecification"])
	write := props["WriteProvisionedThroughputSettings"].(map[string]any)["WriteCapacityAutoScalingSettings"].(map[string]any)
	assert.Equal(t, float64(10), write["MinCapacity"])
	assert.Equal(t, float64(50), write["MaxCapacity"])
	replicas := replicasByRegion(props)
	assert.Equal(t, "arn:aws:kms:eu-west-1:111111111111:key/eu", replicas["eu-west-1"]["SSESpecification"].(map[string]any)["KMSMasterKeyId"])
	assert.Equal(t, map[string]any{"Fn::GetAtt": []any{"Key961B73FD", "Arn"}}, replicas["us-east-1"]["SSESpecification"].(map[string]any)["KMSMasterKeyId"])
	read := func(region string) map[string]any {
		return replicas[region]["ReadProvisionedThroughputSettings"].(map[string]any)["ReadCapacityAutoScalingSettings"].(map[string]any)
	}
	assert.Equal(t, float64(2), read("eu-west-1")["MinCapacity"])
	assert.Equal(t, float64(20), read("eu-west-1")["MaxCapacity"])
	assert.Equal(t, float64(dynamotable.DefaultMinCapacity), read("us-east-1")["MinCapacity"])
	assert.Equal(t, float64(dynamotable.DefaultMaxCapacity), read("us-east-1")["MaxCapacity"])
}

// A schema without a stream still replicates: the global table gets the
// stream replication needs, and the table still offers no stream to
// consumers.
func TestReplicasOfATableWithoutStream(t *testing.T) {
	stack := regionStack("us-east-1")
	keys := schema.APIKeys()
	require.Equal(t, schema.StreamNone, keys.Stream, "the API-keys schema has no stream")
	table := dynamotable.NewTable(stack, jsii.String("Keys"), &dynamotable.TableProps{Schema: &keys, TableOptions: dynamotable.TableOptions{
		Replicas: []dynamotable.Replica{{Region: "eu-west-1"}},
	}})
	props := globalTable(t, assertions.Template_FromStack(stack, nil))
	assert.Equal(t, map[string]any{"StreamViewType": "NEW_AND_OLD_IMAGES"}, props["StreamSpecification"])
	assert.Len(t, props["Replicas"], 2)
	assert.Panics(t, func() { table.GrantStreamRead(awsiam.NewAccountRootPrincipal()) }, "no stream for consumers")
}

// Without Replicas nothing changes: an AWS::DynamoDB::Table, no
// GlobalTable, no replica regions, and L2V2 is nil.
func TestNoReplicasIsASingleRegionTable(t *testing.T) {
	stack := regionStack("us-east-1")
	table := dynamotable.NewTable(stack, jsii.String("T"), &dynamotable.TableProps{Schema: events()})
	tmpl := assertions.Template_FromStack(stack, nil)
	tmpl.ResourceCountIs(jsii.String("AWS::DynamoDB::Table"), jsii.Number(1))
	tmpl.ResourceCountIs(jsii.String("AWS::DynamoDB::GlobalTable"), jsii.Number(0))
	assert.Nil(t, table.ReplicaRegions())
	assert.Nil(t, table.L2V2())
	assert.PanicsWithError(t, `table "events" has no replicas: it is an AWS::DynamoDB::Table, use CfnTable()`, func() { table.CfnGlobalTable() })
}

// Each mistake with Replicas fails at synth, naming the bad value and the
// fix, and leaves nothing behind.
func TestReplicasRejected(t *testing.T) {
	opts := func(o dynamotable.TableOptions) *dynamotable.TableProps {
		return &dynamotable.TableProps{Schema: events(), TableOptions: o}
	}
	eu := []dynamotable.Replica{{Region: "eu-west-1"}}
	tests := []struct {
		name   string
		region string
		props  *dynamotable.TableProps
		want   string
	}{
		{"stack region unresolved", "", opts(dynamotable.TableOptions{Replicas: eu}), "Replicas are set but the stack's region is not known at synth time"},
		{"the stack's own region", "us-east-1", opts(dynamotable.TableOptions{Replicas: []dynamotable.Replica{{Region: "us-east-1"}}}), `Replicas[0].Region "us-east-1" is the stack's own region: the table's first replica is there already; remove it, or name another region`},
		{"duplicated region", "us-east-1", opts(dynamotable.TableOptions{Replicas: []dynamotable.Replica{{Region: "eu-west-1"}, {Region: "eu-west-1"}}}), `Replicas[1].Region "eu-west-1" is also Replicas[0].Region: a region holds one replica`},
		{"empty region", "us-east-1", opts(dynamotable.TableOptions{Replicas: []dynamotable.Replica{{}}}), `Replicas[0].Region is empty: name the replica's region`},
		{"not a region", "us-east-1", opts(dynamotable.TableOptions{Replicas: []dynamotable.Replica{{Region: "Ireland"}}}), `Replicas[0].Region "Ireland" is not a region name`},
		{"PITR off", "us-east-1", opts(dynamotable.TableOptions{PointInTimeRecovery: jsii.Bool(false), Replicas: eu}), "Replicas are set with PointInTimeRecovery off"},
		{"index insights", "us-east-1", opts(dynamotable.TableOptions{ContributorInsights: jsii.Bool(true), ContributorInsightsOnIndexes: jsii.Bool(true), Replicas: eu}), "ContributorInsightsOnIndexes is set with Replicas"},
		{"table key without replica key", "us-east-1", &dynamotable.TableProps{Schema: events()}, "Replicas[0] (eu-west-1) has no EncryptionKey but the table has one"},
		{"replica key without table key", "us-east-1", opts(dynamotable.TableOptions{Replicas: []dynamotable.Replica{{Region: "eu-west-1", EncryptionKey: awskms.Key_FromKeyArn(awscdk.NewStack(awscdk.NewApp(nil), jsii.String("K"), nil), jsii.String("K"), jsii.String("arn:aws:kms:eu-west-1:111111111111:key/k"))}}}), "Replicas[0] (eu-west-1) has an EncryptionKey but the table has none"},
		{"replica read scaling on demand", "us-east-1", opts(dynamotable.TableOptions{Replicas: []dynamotable.Replica{{Region: "eu-west-1", ReadScaling: &dynamotable.Scaling{MaxCapacity: 10}}}}), "Replicas[0] (eu-west-1): ReadScaling is set but billing is on-demand"},
		{"replica recovery period", "us-east-1", opts(dynamotable.TableOptions{Replicas: []dynamotable.Replica{{Region: "eu-west-1", RecoveryPeriodDays: 40}}}), "Replicas[0] (eu-west-1): RecoveryPeriodDays 40 is outside 1-35"},
		{"replica table class", "us-east-1", opts(dynamotable.TableOptions{Replicas: []dynamotable.Replica{{Region: "eu-west-1", TableClass: "GLACIER"}}}), `Replicas[0] (eu-west-1): TableClass "GLACIER" is unknown`},
		{"replica insights mode without insights", "us-east-1", opts(dynamotable.TableOptions{Replicas: []dynamotable.Replica{{Region: "eu-west-1", ContributorInsightsMode: awsdynamodb.ContributorInsightsMode_THROTTLED_KEYS}}}), `Replicas[0] (eu-west-1): ContributorInsightsMode "THROTTLED_KEYS" is set but ContributorInsights is off`},
		{"replica max reads on provisioned", "us-east-1", opts(dynamotable.TableOptions{Billing: dynamotable.Provisioned, Replicas: []dynamotable.Replica{{Region: "eu-west-1", MaxReadRequestUnits: 10}}}), "Replicas[0] (eu-west-1): MaxReadRequestUnits 10 is set but billing is provisioned"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stack awscdk.Stack
			if tt.region == "" {
				stack = awscdk.NewStack(awscdk.NewApp(nil), jsii.String("S"), nil)
			} else {
				stack = regionStack(tt.region)
			}
			props := tt.props
			if tt.name == "table key without replica key" {
				props.EncryptionKey = awskms.NewKey(stack, jsii.String("Key"), nil)
				props.Replicas = eu
			}
			defer func() {
				r := recover()
				require.NotNil(t, r, "NewTable did not panic, want an error containing %q", tt.want)
				err, ok := r.(error)
				require.True(t, ok, "panic value %v is not an error", r)
				assert.Contains(t, err.Error(), tt.want)
				assert.Nil(t, stack.Node().TryFindChild(jsii.String("Bad")), "no construct is left behind")
			}()
			dynamotable.NewTable(stack, jsii.String("Bad"), props)
		})
	}
}

// The replica's resource policy is its own.
func TestReplicaResourcePolicy(t *testing.T) {
	stack := regionStack("us-east-1")
	key := awskms.NewKey(stack, jsii.String("Key"), &awskms.KeyProps{EnableKeyRotation: jsii.Bool(true)})
	dynamotable.NewTable(stack, jsii.String("T"), &dynamotable.TableProps{Schema: events(), TableOptions: dynamotable.TableOptions{
		EncryptionKey: key,
		Replicas: []dynamotable.Replica{{
			Region: "eu-west-1", EncryptionKey: awskms.Key_FromKeyArn(stack, jsii.String("EuKey"), jsii.String("arn:aws:kms:eu-west-1:111111111111:key/eu")),
			ResourcePolicy: policy(&awsiam.PolicyStatementProps{
				Principals: &[]awsiam.IPrincipal{awsiam.NewAccountPrincipal(jsii.String("222222222222"))},
				Actions:    jsii.Strings("dynamodb:GetItem"), Resources: jsii.Strings("*"),
			}),
		}},
	}})
	replicas := replicasByRegion(globalTable(t, assertions.Template_FromStack(stack, nil)))
	require.NotNil(t, replicas["eu-west-1"]["ResourcePolicy"], "the replica in eu-west-1 has its policy")
	b, _ := json.Marshal(replicas["eu-west-1"]["ResourcePolicy"])
	assert.Contains(t, string(b), "222222222222")
	assert.Nil(t, replicas["us-east-1"]["ResourcePolicy"], "the stack region's replica has none")
}

// The global tables' templates pass cfn-lint (cdk-nag does not inspect
// AWS::DynamoDB::GlobalTable): on demand with per-replica overrides, and
// provisioned with customer-managed keys per region.
func TestGlobalTableTemplatesPassCfnLint(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for name, opts := range map[string]func(awscdk.Stack) dynamotable.TableOptions{
		"ondemand": func(awscdk.Stack) dynamotable.TableOptions {
			return dynamotable.TableOptions{MaxReadRequestUnits: 1000, Replicas: []dynamotable.Replica{
				{Region: "eu-west-1", TableClass: awsdynamodb.TableClass_STANDARD_INFREQUENT_ACCESS, RecoveryPeriodDays: 7, ContributorInsights: jsii.Bool(true)},
				{Region: "ap-southeast-2", MaxReadRequestUnits: 500},
			}}
		},
		"provisioned": func(stack awscdk.Stack) dynamotable.TableOptions {
			return dynamotable.TableOptions{
				Billing:       dynamotable.Provisioned,
				EncryptionKey: awskms.NewKey(stack, jsii.String("Key"), &awskms.KeyProps{EnableKeyRotation: jsii.Bool(true)}),
				Replicas: []dynamotable.Replica{{
					Region: "eu-west-1", ReadScaling: &dynamotable.Scaling{MinCapacity: 2, MaxCapacity: 20},
					EncryptionKey: awskms.Key_FromKeyArn(stack, jsii.String("EuKey"), jsii.String("arn:aws:kms:eu-west-1:111111111111:key/eu")),
				}},
			}
		},
	} {
		stack := regionStack("us-east-1")
		dynamotable.NewTable(stack, jsii.String("T"), &dynamotable.TableProps{Schema: events(), TableOptions: opts(stack)})
		b, err := json.Marshal(*assertions.Template_FromStack(stack, nil).ToJSON())
		require.NoError(t, err)
		path := filepath.Join(dir, name+".json")
		require.NoError(t, os.WriteFile(path, b, 0o644))
		paths = append(paths, path)
	}
	cdktest.CfnLint(t, paths...)
}
