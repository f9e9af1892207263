package assertions

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/constructs/eventstore"
	"github.com/triggers-dev/triggers/internal/testkit/cdktest"
)

// eventsLogicalID is pinned: changing it would make CloudFormation replace
// (and, with RETAIN, orphan) the events table.
const eventsLogicalID = "Events948F067E"

const dataStack = "triggers-dev-data"

func eventsTable(t *testing.T, stack string) map[string]any {
	t.Helper()
	id, r := one(t, tmpl(t, stack), "AWS::DynamoDB::Table", "Events")
	require.Equal(t, eventsLogicalID, id, "events table logical id in %s", stack)
	return r
}

// Seed 001 AC1-AC4 and AC7, encryption, deletion protection and retain,
// on both variants: the default (on-demand) events table of the data stack
// and the provisioned one.
func TestEventsTableCommon(t *testing.T) {
	for _, stack := range []string{dataStack, stackProvisioned} {
		t.Run(stack, func(t *testing.T) { checkEventsTableCommon(t, stack) })
	}
}

func checkEventsTableCommon(t *testing.T, stack string) {
	r := eventsTable(t, stack)
	p := cdktest.Props(r)

	t.Run("AC1 keys and attribute types", func(t *testing.T) {
		assert.JSONEq(t, `[{"AttributeName":"user_id","KeyType":"HASH"},{"AttributeName":"timestamp#event_id","KeyType":"RANGE"}]`, jsonOf(p["KeySchema"]))
		assert.ElementsMatch(t, []any{
			map[string]any{"AttributeName": "user_id", "AttributeType": "S"},
			map[string]any{"AttributeName": "timestamp#event_id", "AttributeType": "S"},
			map[string]any{"AttributeName": "event_type#timestamp", "AttributeType": "S"},
			map[string]any{"AttributeName": "status#timestamp", "AttributeType": "S"},
		}, p["AttributeDefinitions"])
	})
	t.Run("AC1/AC2 GSIs with projection ALL", func(t *testing.T) {
		var gsis []any
		for _, g := range p["GlobalSecondaryIndexes"].([]any) {
			m := map[string]any{}
			for k, v := range g.(map[string]any) {
				if k != "ProvisionedThroughput" && k != "ContributorInsightsSpecification" { // provisioned mode: asserted with scaling; insights below
					m[k] = v
				}
			}
			gsis = append(gsis, m)
		}
		assert.JSONEq(t, `[
		  {"IndexName":"EventTypeIndex","KeySchema":[{"AttributeName":"user_id","KeyType":"HASH"},{"AttributeName":"event_type#timestamp","KeyType":"RANGE"}],"Projection":{"ProjectionType":"ALL"}},
		  {"IndexName":"StatusIndex","KeySchema":[{"AttributeName":"user_id","KeyType":"HASH"},{"AttributeName":"status#timestamp","KeyType":"RANGE"}],"Projection":{"ProjectionType":"ALL"}}
		]`, jsonOf(gsis))
	})
	t.Run("AC3 TTL on ttl", func(t *testing.T) {
		assert.JSONEq(t, `{"AttributeName":"ttl","Enabled":true}`, jsonOf(p["TimeToLiveSpecification"]))
	})
	// NEW_IMAGE plus the old image the archive of expired events needs
	// (AC3): docs/seed-deviations.md.
	t.Run("AC4 stream NEW_AND_OLD_IMAGES", func(t *testing.T) {
		assert.JSONEq(t, `{"StreamViewType":"NEW_AND_OLD_IMAGES"}`, jsonOf(p["StreamSpecification"]))
	})
	t.Run("AC7 PITR 35 days", func(t *testing.T) {
		assert.JSONEq(t, `{"PointInTimeRecoveryEnabled":true,"RecoveryPeriodInDays":35}`, jsonOf(p["PointInTimeRecoverySpecification"]))
	})
	t.Run("encryption with the AWS-managed key", func(t *testing.T) {
		assert.JSONEq(t, `{"SSEEnabled":true}`, jsonOf(p["SSESpecification"]))
	})
	t.Run("deletion protection, retain, generated name", func(t *testing.T) {
		assert.Equal(t, true, p["DeletionProtectionEnabled"])
		assert.Equal(t, "Retain", r["DeletionPolicy"])
		assert.Equal(t, "Retain", r["UpdateReplacePolicy"])
		assert.NotContains(t, p, "TableName", "tables get generated names")
	})
	t.Run("contributor insights", func(t *testing.T) {
		if stack != dataStack {
			assert.NotContains(t, p, "ContributorInsightsSpecification", "contributor insights are off by default")
			return
		}
		// The data stack turns them on, throttled keys only, on the table
		// and both GSIs (stacks.eventsTableOptions): per-tenant hot keys.
		want := `{"Enabled":true,"Mode":"THROTTLED_KEYS"}`
		assert.JSONEq(t, want, jsonOf(p["ContributorInsightsSpecification"]))
		for _, g := range p["GlobalSecondaryIndexes"].([]any) {
			assert.JSONEq(t, want, jsonOf(g.(map[string]any)["ContributorInsightsSpecification"]))
		}
	})
}

// The default events table bills on demand; the data stack exports it.
func TestEventsTableOnDemand(t *testing.T) {
	p := cdktest.Props(eventsTable(t, dataStack))
	t.Run("AC1 billing on demand, no provisioned throughput", func(t *testing.T) {
		assert.Equal(t, "PAY_PER_REQUEST", p["BillingMode"])
		assert.NotContains(t, p, "ProvisionedThroughput")
		assert.Empty(t, cdktest.Resources(tmpl(t, dataStack), "AWS::ApplicationAutoScaling::ScalableTarget"))
	})
	t.Run("stack outputs and termination protection", func(t *testing.T) {
		outs := tmpl(t, dataStack)["Outputs"].(map[string]any)
		for _, o := range []string{"EventsTableName", "EventsTableArn", "EventsTableStreamArn"} {
			assert.Contains(t, outs, o)
		}
		assert.Equal(t, map[string]any{"Ref": eventsLogicalID}, outs["EventsTableName"].(map[string]any)["Value"])
		assert.Equal(t, map[string]any{"Fn::GetAtt": []any{eventsLogicalID, "StreamArn"}}, outs["EventsTableStreamArn"].(map[string]any)["Value"])
	})
}

// scalable is one expected Application Auto Scaling target and its policy.
type scalable struct {
	dimension, resourceSuffix, metric string
	min, max, target                  float64
}

func checkScaling(t *testing.T, stack string, want []scalable) {
	t.Helper()
	tp := tmpl(t, stack)
	targets := cdktest.Resources(tp, "AWS::ApplicationAutoScaling::ScalableTarget")
	policies := cdktest.Resources(tp, "AWS::ApplicationAutoScaling::ScalingPolicy")
	require.Len(t, targets, len(want), "scalable targets")
	require.Len(t, policies, len(want), "scaling policies")
	for _, w := range want {
		var targetID string
		for id, r := range targets {
			p := cdktest.Props(r)
			if p["ScalableDimension"] != w.dimension {
				continue
			}
			rid := jsonOf(p["ResourceId"])
			if (w.resourceSuffix == "" && !strings.Contains(rid, "/index/")) || (w.resourceSuffix != "" && strings.Contains(rid, w.resourceSuffix)) {
				require.Empty(t, targetID, "two targets for %s %s", w.dimension, w.resourceSuffix)
				targetID = id
				assert.Equal(t, "dynamodb", p["ServiceNamespace"])
				assert.Equal(t, w.min, p["MinCapacity"], "%s %s min", w.dimension, w.resourceSuffix)
				assert.Equal(t, w.max, p["MaxCapacity"], "%s %s max", w.dimension, w.resourceSuffix)
				assert.Contains(t, rid, eventsLogicalID, "target refers to the events table")
			}
		}
		require.NotEmpty(t, targetID, "no scalable target for %s %s", w.dimension, w.resourceSuffix)
		found := 0
		for _, r := range policies {
			p := cdktest.Props(r)
			if jsonOf(p["ScalingTargetId"]) != jsonOf(map[string]any{"Ref": targetID}) {
				continue
			}
			found++
			assert.Equal(t, "TargetTrackingScaling", p["PolicyType"])
			cfg := p["TargetTrackingScalingPolicyConfiguration"].(map[string]any)
			assert.Equal(t, w.target, cfg["TargetValue"], "%s %s target", w.dimension, w.resourceSuffix)
			assert.Equal(t, map[string]any{"PredefinedMetricType": w.metric}, cfg["PredefinedMetricSpecification"])
		}
		assert.Equal(t, 1, found, "policies for %s %s", w.dimension, w.resourceSuffix)
	}
}

func scalingSet(readMin, readMax, readTarget, writeMin, writeMax, writeTarget float64) []scalable {
	var out []scalable
	for _, suffix := range []string{"", "/index/EventTypeIndex", "/index/StatusIndex"} {
		dimPrefix := "dynamodb:table:"
		if suffix != "" {
			dimPrefix = "dynamodb:index:"
		}
		out = append(out,
			scalable{dimPrefix + "ReadCapacityUnits", suffix, "DynamoDBReadCapacityUtilization", readMin, readMax, readTarget},
			scalable{dimPrefix + "WriteCapacityUnits", suffix, "DynamoDBWriteCapacityUtilization", writeMin, writeMax, writeTarget},
		)
	}
	return out
}

// Seed 001 AC5/AC6: provisioned billing scales 5-100 WCU/RCU at 70% for the
// table and both GSIs.
func TestEventsTableProvisioned(t *testing.T) {
	p := cdktest.Props(eventsTable(t, stackProvisioned))
	// CloudFormation's default billing mode is PROVISIONED; CDK omits it.
	if bm, ok := p["BillingMode"]; ok {
		assert.Equal(t, "PROVISIONED", bm)
	}
	assert.JSONEq(t, `{"ReadCapacityUnits":5,"WriteCapacityUnits":5}`, jsonOf(p["ProvisionedThroughput"]))
	for _, gsi := range p["GlobalSecondaryIndexes"].([]any) {
		assert.JSONEq(t, `{"ReadCapacityUnits":5,"WriteCapacityUnits":5}`, jsonOf(gsi.(map[string]any)["ProvisionedThroughput"]))
	}
	checkScaling(t, stackProvisioned, scalingSet(5, 100, 70, 5, 100, 70))
	// Everything else stays as in the on-demand variant.
	assert.JSONEq(t, `{"PointInTimeRecoveryEnabled":true,"RecoveryPeriodInDays":35}`, jsonOf(p["PointInTimeRecoverySpecification"]))
	assert.JSONEq(t, `{"StreamViewType":"NEW_AND_OLD_IMAGES"}`, jsonOf(p["StreamSpecification"]))
	assert.JSONEq(t, `{"AttributeName":"ttl","Enabled":true}`, jsonOf(p["TimeToLiveSpecification"]))
}

// The lean profile: one index, StatusIndex, projecting the keys,
// event_type and ttl (provisioned here, so it scales like the table);
// the API function is told the profile and may BatchGetItem; nothing
// refers to EventTypeIndex.
func TestEventsTableLean(t *testing.T) {
	p := cdktest.Props(eventsTable(t, stackLean))
	assert.JSONEq(t, `[{"IndexName":"StatusIndex",
		"KeySchema":[{"AttributeName":"user_id","KeyType":"HASH"},{"AttributeName":"status#timestamp","KeyType":"RANGE"}],
		"Projection":{"NonKeyAttributes":["event_type","ttl"],"ProjectionType":"INCLUDE"},
		"ProvisionedThroughput":{"ReadCapacityUnits":5,"WriteCapacityUnits":5}}]`, jsonOf(p["GlobalSecondaryIndexes"]))
	assert.JSONEq(t, `[{"AttributeName":"user_id","AttributeType":"S"},{"AttributeName":"timestamp#event_id","AttributeType":"S"},{"AttributeName":"status#timestamp","AttributeType":"S"}]`,
		jsonOf(p["AttributeDefinitions"]))
	tp := tmpl(t, stackLean)
	targets := 0
	for _, r := range cdktest.Resources(tp, "AWS::ApplicationAutoScaling::ScalableTarget") {
		targets++
		assert.NotContains(t, jsonOf(r), "EventTypeIndex")
	}
	assert.Equal(t, 4, targets, "read and write on the table and StatusIndex")
	_, fn := one(t, tp, "AWS::Lambda::Function", "TriggersApiFunction")
	assert.Equal(t, "lean", cdktest.Props(fn)["Environment"].(map[string]any)["Variables"].(map[string]any)["EVENTS_PROFILE"])
	assert.Contains(t, jsonOf(tp), `"dynamodb:BatchGetItem"`)
	assert.NotContains(t, jsonOf(tp), "EventTypeIndex", "no grant, alarm or widget names the index a lean table lacks")
}

// Every option set: customer-managed key, contributor insights, 7-day PITR,
// custom scaling, a tag and a child construct on the EventsTable itself.
func TestEventsTableOptions(t *testing.T) {
	r := eventsTable(t, stackCMK)
	p := cdktest.Props(r)
	keyID, _ := one(t, tmpl(t, stackCMK), "AWS::KMS::Key", "Key")
	assert.JSONEq(t, `{"SSEEnabled":true,"SSEType":"KMS","KMSMasterKeyId":{"Fn::GetAtt":["`+keyID+`","Arn"]}}`, jsonOf(p["SSESpecification"]))
	assert.JSONEq(t, `{"Enabled":true}`, jsonOf(p["ContributorInsightsSpecification"]))
	assert.JSONEq(t, `{"PointInTimeRecoveryEnabled":true,"RecoveryPeriodInDays":7}`, jsonOf(p["PointInTimeRecoverySpecification"]))
	assert.JSONEq(t, `{"ReadCapacityUnits":10,"WriteCapacityUnits":20}`, jsonOf(p["ProvisionedThroughput"]))
	checkScaling(t, stackCMK, scalingSet(10, 400, 50, 20, 800, 60))

	assert.Contains(t, p["Tags"], map[string]any{"Key": "owner", "Value": "platform-team"}, "Tags_Of(EventsTable) reaches the table")
	outs := tmpl(t, stackCMK)["Outputs"].(map[string]any)
	var child bool
	for id := range outs {
		child = child || strings.HasPrefix(id, "EventsChildOutput")
	}
	assert.True(t, child, "a construct created with the EventsTable as scope lives under it; outputs: %v", keys(outs))
}

// The intent-level grants name exactly their actions and resources: the
// table ARN, and for inbox reads the two index ARNs; never a wildcard
// resource. With a customer-managed key they add the KMS actions.
func TestEventsTableGrants(t *testing.T) {
	tests := []struct {
		intent  string
		actions []string
		indexes []string
	}{
		{"Append", eventstore.AppendActions(), nil},
		{"ReadInbox", eventstore.ReadInboxActions(), []string{"EventTypeIndex", "StatusIndex"}},
		{"UpdateStatus", eventstore.UpdateStatusActions(), nil},
	}
	for _, stack := range []string{stackConsumer, stackCMK} {
		prefix := ""
		if stack == stackCMK {
			prefix = "Local"
		}
		for _, tt := range tests {
			t.Run(stack+"/"+tt.intent, func(t *testing.T) {
				sts := roleStatements(t, tmpl(t, stack), prefix+tt.intent+"Role")
				var ddb, kms []statement
				for _, s := range sts {
					if strings.HasPrefix(s.Actions[0], "kms:") {
						kms = append(kms, s)
					} else {
						ddb = append(ddb, s)
					}
				}
				require.Len(t, ddb, 1, "one DynamoDB statement")
				assert.Equal(t, "Allow", ddb[0].Effect)
				assert.Equal(t, sorted(tt.actions), ddb[0].Actions)
				require.Len(t, ddb[0].Resources, 1+len(tt.indexes))
				for _, res := range ddb[0].Resources {
					assert.NotContains(t, jsonOf(res), "*", "no wildcard resources")
				}
				for i, ix := range tt.indexes {
					assert.Contains(t, jsonOf(ddb[0].Resources[1+i]), "/index/"+ix)
				}
				if stack == stackConsumer {
					assert.Contains(t, jsonOf(ddb[0].Resources[0]), "table/events-made-elsewhere")
					assert.Empty(t, kms, "no KMS grant without a customer-managed key")
				} else {
					assert.Contains(t, jsonOf(ddb[0].Resources[0]), eventsLogicalID)
					require.Len(t, kms, 1, "one KMS statement")
					want := []string{"kms:Decrypt", "kms:DescribeKey"}
					if tt.intent != "ReadInbox" {
						want = []string{"kms:Decrypt", "kms:DescribeKey", "kms:Encrypt", "kms:GenerateDataKey*", "kms:ReEncrypt*"}
					}
					assert.Equal(t, want, kms[0].Actions)
				}
			})
		}
		t.Run(stack+"/Stream", func(t *testing.T) {
			sts := roleStatements(t, tmpl(t, stack), prefix+"StreamRole")
			var ddb []statement
			for _, s := range sts {
				if !strings.HasPrefix(s.Actions[0], "kms:") {
					ddb = append(ddb, s)
				}
			}
			require.Len(t, ddb, 2, "ListStreams, and the stream's own actions")
			// ListStreams supports no resource-level permission: IAM
			// requires "*" for it (the only wildcard a grant makes).
			assert.Equal(t, statement{Effect: "Allow", Actions: []string{"dynamodb:ListStreams"}, Resources: []any{"*"}}, ddb[0])
			assert.Equal(t, []string{"dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"}, ddb[1].Actions)
			require.Len(t, ddb[1].Resources, 1)
			assert.Contains(t, strings.ToLower(jsonOf(ddb[1].Resources[0])), "stream", "the stream ARN, not the table")
			assert.NotEqual(t, "*", ddb[1].Resources[0])
		})
	}
}
