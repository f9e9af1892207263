package monitoring_test

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/constructs/dynamotable"
	"github.com/triggers-dev/triggers/constructs/monitoring"
	"github.com/triggers-dev/triggers/schema"
)

const (
	onDemandTopicArn    = "arn:aws:sns:eu-west-1:111111111111:orders-on-call"
	provisionedTopicArn = "arn:aws:sns:eu-west-1:111111111111:keys-on-call"
	keysRule            = "DynamoDBContributorInsights-PKC-keys-1707744000000"
)

var ordersSchema = schema.Table{
	Name:          "orders",
	PartitionKey:  schema.S("customer_id"),
	SortKey:       schema.Ptr(schema.S("order_id")),
	GlobalIndexes: []schema.Index{{Name: "ByStatus", PartitionKey: schema.S("status"), SortKey: schema.Ptr(schema.S("created_at"))}},
	TTLAttribute:  "expires_at",
}

var keysSchema = schema.Table{
	Name:          "keys",
	PartitionKey:  schema.S("key_hash"),
	GlobalIndexes: []schema.Index{{Name: "ByTenant", PartitionKey: schema.S("tenant_id"), Projection: schema.KeysOnly()}},
}

// tableMonitoringFixture is one stack, synthesized once, with an on-demand
// table (own dashboard, SNS topic, a replica, Contributor Insights without
// rule names) and a provisioned table (shared dashboard, alarm action,
// custom thresholds, operations, period and rule names).
type tableMonitoringFixture struct {
	stack                    awscdk.Stack
	tmpl                     assertions.Template
	resources                map[string]map[string]any
	onDemand, provisioned    *monitoring.TableMonitoring
	onDemandTable, provTable *dynamotable.Table
	shared                   awscloudwatch.Dashboard
}

func newTableMonitoringFixture(t *testing.T) *tableMonitoringFixture {
	t.Helper()
	f := &tableMonitoringFixture{}
	f.stack = awscdk.NewStack(awscdk.NewApp(nil), jsii.String("Tables"), nil)
	f.onDemandTable = dynamotable.NewTable(f.stack, jsii.String("Orders"), &dynamotable.TableProps{Schema: &ordersSchema})
	f.provTable = dynamotable.NewTable(f.stack, jsii.String("Keys"), &dynamotable.TableProps{
		Schema: &keysSchema, TableOptions: dynamotable.TableOptions{Billing: dynamotable.Provisioned},
	})
	f.onDemand = monitoring.NewTableMonitoring(f.stack, jsii.String("OrdersMonitoring"), &monitoring.TableMonitoringProps{
		Table:               f.onDemandTable,
		DashboardName:       "orders-table",
		AlarmTopic:          awssns.Topic_FromTopicArn(f.stack, jsii.String("OrdersOnCall"), jsii.String(onDemandTopicArn)),
		ReplicaRegions:      []string{"eu-central-1"},
		ContributorInsights: true,
	})
	f.shared = awscloudwatch.NewDashboard(f.stack, jsii.String("Shared"), &awscloudwatch.DashboardProps{DashboardName: jsii.String("shared")})
	f.provisioned = monitoring.NewTableMonitoring(f.stack, jsii.String("KeysMonitoring"), &monitoring.TableMonitoringProps{
		Table:       f.provTable,
		Dashboard:   f.shared,
		AlarmAction: awscloudwatchactions.NewSnsAction(awssns.Topic_FromTopicArn(f.stack, jsii.String("KeysOnCall"), jsii.String(provisionedTopicArn))),
		Operations:  []string{"GetItem", "Query", "PutItem"},
		Thresholds: &monitoring.TableThresholds{
			ReadThrottleEvents: 5, LatencyMs: map[string]float64{"GetItem": 7}, ConsumedCapacityPercent: 90,
		},
		ContributorInsightsRuleNames: []string{keysRule},
		Period:                       awscdk.Duration_Minutes(jsii.Number(5)),
	})
	f.tmpl = assertions.Template_FromStack(f.stack, nil) // the one synth
	f.resources = map[string]map[string]any{}
	for id, r := range (*f.tmpl.ToJSON())["Resources"].(map[string]any) {
		f.resources[id] = r.(map[string]any)
	}
	return f
}

func (f *tableMonitoringFixture) logicalID(c constructs.IConstruct) string {
	return *f.stack.GetLogicalId(c.Node().DefaultChild().(awscdk.CfnElement))
}

// metricWant is one metric an alarm reads.
type metricWant struct {
	Name   string
	Dims   map[string]any
	Stat   string
	Period float64
}

type alarmWant struct {
	id         string
	metrics    []metricWant
	threshold  float64
	cmp        string
	evals, dps float64
	missing    string
	actions    []any
}

// alarmMetrics returns the metrics an AWS::CloudWatch::Alarm reads, for a
// single-metric alarm or a math-expression alarm alike, sorted.
func alarmMetrics(t *testing.T, props map[string]any) []metricWant {
	t.Helper()
	dims := func(ds any) map[string]any {
		out := map[string]any{}
		for _, d := range ds.([]any) {
			d := d.(map[string]any)
			out[d["Name"].(string)] = d["Value"]
		}
		return out
	}
	var got []metricWant
	if name, ok := props["MetricName"].(string); ok {
		assert.Equal(t, "AWS/DynamoDB", props["Namespace"])
		stat, _ := props["Statistic"].(string)
		if stat == "" {
			stat, _ = props["ExtendedStatistic"].(string)
		}
		got = append(got, metricWant{name, dims(props["Dimensions"]), stat, props["Period"].(float64)})
	}
	if qs, ok := props["Metrics"].([]any); ok {
		for _, q := range qs {
			ms, ok := q.(map[string]any)["MetricStat"].(map[string]any)
			if !ok {
				continue
			}
			metric := ms["Metric"].(map[string]any)
			assert.Equal(t, "AWS/DynamoDB", metric["Namespace"])
			got = append(got, metricWant{metric["MetricName"].(string), dims(metric["Dimensions"]), ms["Stat"].(string), ms["Period"].(float64)})
		}
	}
	sortMetrics(got)
	return got
}

func sortMetrics(ms []metricWant) {
	sort.Slice(ms, func(i, j int) bool { return fmt.Sprint(ms[i]) < fmt.Sprint(ms[j]) })
}

func (f *tableMonitoringFixture) checkAlarms(t *testing.T, m *monitoring.TableMonitoring, wants []alarmWant) {
	t.Helper()
	ids := make([]string, 0, len(wants))
	for _, w := range wants {
		ids = append(ids, w.id)
	}
	got := make([]string, 0, len(m.Alarms))
	for id := range m.Alarms {
		got = append(got, id)
	}
	assert.ElementsMatch(t, ids, got, "alarm ids")
	for _, w := range wants {
		t.Run(w.id, func(t *testing.T) {
			a := m.Alarm(w.id)
			require.NotNil(t, a)
			res := f.resources[f.logicalID(a)]
			require.Equal(t, "AWS::CloudWatch::Alarm", res["Type"])
			p := res["Properties"].(map[string]any)
			sortMetrics(w.metrics)
			assert.Equal(t, w.metrics, alarmMetrics(t, p), "metrics")
			assert.Equal(t, w.threshold, p["Threshold"], "Threshold")
			assert.Equal(t, w.cmp, p["ComparisonOperator"], "ComparisonOperator")
			assert.Equal(t, w.evals, p["EvaluationPeriods"], "EvaluationPeriods")
			assert.Equal(t, w.dps, p["DatapointsToAlarm"], "DatapointsToAlarm")
			assert.Equal(t, w.missing, p["TreatMissingData"], "TreatMissingData")
			assert.Equal(t, w.actions, p["AlarmActions"], "AlarmActions")
			assert.Equal(t, w.actions, p["OKActions"], "OKActions")
			desc, _ := p["AlarmDescription"].(string)
			assert.Regexp(t, `^DynamoDB table \w+: .+ Runbook: `+monitoring.DefaultRunbookURL+`#[a-z-]+$`, desc)
		})
	}
}

// dashboardBody renders an AWS::CloudWatch::Dashboard body (an Fn::Join)
// as text, tokens as their JSON.
func (f *tableMonitoringFixture) dashboardBody(t *testing.T, d awscloudwatch.Dashboard) string {
	t.Helper()
	body := f.resources[f.logicalID(d)]["Properties"].(map[string]any)["DashboardBody"]
	if s, ok := body.(string); ok {
		return s
	}
	parts := body.(map[string]any)["Fn::Join"].([]any)[1].([]any)
	var b strings.Builder
	for _, p := range parts {
		if s, ok := p.(string); ok {
			b.WriteString(s)
		} else {
			j, _ := json.Marshal(p)
			b.Write(j)
		}
	}
	return b.String()
}

func TestTableMonitoring(t *testing.T) {
	f := newTableMonitoringFixture(t)
	ordersRef := map[string]any{"Ref": f.logicalID(f.onDemandTable.L2())}
	keysRef := map[string]any{"Ref": f.logicalID(f.provTable.L2())}
	table := func(ref any, extra ...string) map[string]any {
		d := map[string]any{"TableName": ref}
		for i := 0; i+1 < len(extra); i += 2 {
			d[extra[i]] = extra[i+1]
		}
		return d
	}
	const (
		gte  = "GreaterThanOrEqualToThreshold"
		gt   = "GreaterThanThreshold"
		notB = "notBreaching"
	)

	t.Run("OnDemandAlarms", func(t *testing.T) {
		acts := []any{onDemandTopicArn}
		m := func(name, stat string, dims map[string]any) metricWant { return metricWant{name, dims, stat, 60} }
		wants := []alarmWant{
			{"ReadThrottleEvents", []metricWant{m("ReadThrottleEvents", "Sum", table(ordersRef))}, 1, gte, 5, 3, notB, acts},
			{"WriteThrottleEvents", []metricWant{m("WriteThrottleEvents", "Sum", table(ordersRef))}, 1, gte, 5, 3, notB, acts},
			{"ByStatusReadThrottleEvents", []metricWant{m("ReadThrottleEvents", "Sum", table(ordersRef, "GlobalSecondaryIndexName", "ByStatus"))}, 1, gte, 5, 3, notB, acts},
			{"ByStatusWriteThrottleEvents", []metricWant{m("WriteThrottleEvents", "Sum", table(ordersRef, "GlobalSecondaryIndexName", "ByStatus"))}, 1, gte, 5, 3, notB, acts},
			{"ReplicationLatency-eu-central-1", []metricWant{m("ReplicationLatency", "Average", table(ordersRef, "ReceivingRegion", "eu-central-1"))}, 10000, gt, 5, 5, "ignore", acts},
		}
		var sysErr []metricWant
		for _, op := range monitoring.TableOperations() {
			sysErr = append(sysErr, m("SystemErrors", "Sum", table(ordersRef, "Operation", op)))
			wants = append(wants, alarmWant{op + "Latency", []metricWant{m("SuccessfulRequestLatency", "Average", table(ordersRef, "Operation", op))},
				monitoring.DefaultTableLatencyMs(op), gt, 5, 5, notB, acts})
		}
		wants = append(wants, alarmWant{"SystemErrors", sysErr, 1, gte, 5, 3, notB, acts})
		require.Len(t, wants, 13)
		f.checkAlarms(t, f.onDemand, wants)
		assert.Nil(t, f.onDemand.Alarm("ReadCapacity"), "no capacity alarm on demand")
	})

	t.Run("ProvisionedAlarms", func(t *testing.T) {
		acts := []any{provisionedTopicArn}
		m := func(name, stat string, dims map[string]any) metricWant { return metricWant{name, dims, stat, 300} }
		ix := func(extra ...string) map[string]any {
			return table(keysRef, append([]string{"GlobalSecondaryIndexName", "ByTenant"}, extra...)...)
		}
		wants := []alarmWant{
			{"ReadThrottleEvents", []metricWant{m("ReadThrottleEvents", "Sum", table(keysRef))}, 5, gte, 5, 3, notB, acts},
			{"WriteThrottleEvents", []metricWant{m("WriteThrottleEvents", "Sum", table(keysRef))}, 1, gte, 5, 3, notB, acts},
			{"ByTenantReadThrottleEvents", []metricWant{m("ReadThrottleEvents", "Sum", ix())}, 5, gte, 5, 3, notB, acts},
			{"ByTenantWriteThrottleEvents", []metricWant{m("WriteThrottleEvents", "Sum", ix())}, 1, gte, 5, 3, notB, acts},
			{"SystemErrors", []metricWant{
				m("SystemErrors", "Sum", table(keysRef, "Operation", "GetItem")),
				m("SystemErrors", "Sum", table(keysRef, "Operation", "Query")),
				m("SystemErrors", "Sum", table(keysRef, "Operation", "PutItem")),
			}, 1, gte, 5, 3, notB, acts},
			{"GetItemLatency", []metricWant{m("SuccessfulRequestLatency", "Average", table(keysRef, "Operation", "GetItem"))}, 7, gt, 5, 5, notB, acts},
			{"QueryLatency", []metricWant{m("SuccessfulRequestLatency", "Average", table(keysRef, "Operation", "Query"))}, 25, gt, 5, 5, notB, acts},
			{"PutItemLatency", []metricWant{m("SuccessfulRequestLatency", "Average", table(keysRef, "Operation", "PutItem"))}, 15, gt, 5, 5, notB, acts},
			{"ReadCapacity", []metricWant{m("ConsumedReadCapacityUnits", "Sum", table(keysRef)), m("ProvisionedReadCapacityUnits", "Average", table(keysRef))}, 90, gt, 5, 5, notB, acts},
			{"WriteCapacity", []metricWant{m("ConsumedWriteCapacityUnits", "Sum", table(keysRef)), m("ProvisionedWriteCapacityUnits", "Average", table(keysRef))}, 90, gt, 5, 5, notB, acts},
			{"ByTenantReadCapacity", []metricWant{m("ConsumedReadCapacityUnits", "Sum", ix()), m("ProvisionedReadCapacityUnits", "Average", ix())}, 90, gt, 5, 5, notB, acts},
			{"ByTenantWriteCapacity", []metricWant{m("ConsumedWriteCapacityUnits", "Sum", ix()), m("ProvisionedWriteCapacityUnits", "Average", ix())}, 90, gt, 5, 5, notB, acts},
		}
		f.checkAlarms(t, f.provisioned, wants)
	})

	t.Run("CapacityExpression", func(t *testing.T) {
		p := f.resources[f.logicalID(f.provisioned.Alarm("ReadCapacity"))]["Properties"].(map[string]any)
		var exprs []string
		for _, q := range p["Metrics"].([]any) {
			if e, ok := q.(map[string]any)["Expression"].(string); ok {
				exprs = append(exprs, e)
			}
		}
		assert.Equal(t, []string{"100 * (c / PERIOD(c)) / FILL(p, REPEAT)"}, exprs, "the provisioned capacity (every 5 minutes) carried over a 1-minute period")
	})

	t.Run("NoWarnings", func(t *testing.T) {
		// CDK warns about math expressions it cannot check (unknown
		// identifiers, mixed periods); the monitoring must produce none.
		warnings := *assertions.Annotations_FromStack(f.stack).FindWarning(jsii.String("*"), assertions.Match_AnyValue())
		for _, w := range warnings {
			if strings.Contains(*w.Id, "Monitoring") || strings.Contains(*w.Id, "Shared") {
				t.Errorf("warning on %s: %v", *w.Id, w.Entry.Data)
			}
		}
	})

	t.Run("AlarmCount", func(t *testing.T) {
		f.tmpl.ResourceCountIs(jsii.String("AWS::CloudWatch::Alarm"), jsii.Number(13+12))
		f.tmpl.ResourceCountIs(jsii.String("AWS::SNS::Topic"), jsii.Number(0))
	})

	t.Run("OwnDashboard", func(t *testing.T) {
		f.tmpl.ResourceCountIs(jsii.String("AWS::CloudWatch::Dashboard"), jsii.Number(2))
		assert.Equal(t, "orders-table", f.resources[f.logicalID(f.onDemand.Dashboard)]["Properties"].(map[string]any)["DashboardName"])
		body := f.dashboardBody(t, f.onDemand.Dashboard)
		for _, want := range []string{
			"## DynamoDB table orders", `"Capacity (table)"`, `"Capacity (GSI ByStatus)"`,
			`"ConsumedReadCapacityUnits"`, `"ConsumedWriteCapacityUnits"`, "Consumed RCU/s", "Consumed WCU/s",
			`"ReadThrottleEvents"`, `"WriteThrottleEvents"`, `"GlobalSecondaryIndexName","ByStatus"`,
			`"SystemErrors"`, `"ConditionalCheckFailedRequests"`, `"UserErrors"`, "account-level",
			`"TimeToLiveDeletedItemCount"`, `"ReplicationLatency"`, `"ReceivingRegion","eu-central-1"`,
			"DynamoDBContributorInsights-", "`PKT`", "`SKC`", `"type":"alarm"`,
		} {
			assert.Contains(t, body, want)
		}
		for _, op := range monitoring.TableOperations() {
			assert.Contains(t, body, `"SuccessfulRequestLatency `+op+` (ms)"`)
			assert.Contains(t, body, `"Operation","`+op+`"`)
		}
		for _, stat := range []string{`"stat":"p50"`, `"stat":"p99"`, `{"label":"Average","period":60}`} {
			assert.Contains(t, body, stat)
		}
		assert.NotContains(t, body, "Provisioned", "on demand: consumed capacity only")
		assert.NotContains(t, body, "DynamoDB table keys", "the other table's widgets went to the shared dashboard")
	})

	t.Run("SharedDashboard", func(t *testing.T) {
		assert.Equal(t, f.logicalID(f.shared), f.logicalID(f.provisioned.Dashboard), "widgets go to the given dashboard")
		body := f.dashboardBody(t, f.shared)
		for _, want := range []string{
			"## DynamoDB table keys", `"ProvisionedReadCapacityUnits"`, `"ProvisionedWriteCapacityUnits"`,
			`"GlobalSecondaryIndexName","ByTenant"`, `"SuccessfulRequestLatency GetItem (ms)"`,
			"INSIGHT_RULE_METRIC('" + keysRule + "', 'MaxContributorValue')",
			"INSIGHT_RULE_METRIC('" + keysRule + "', 'UniqueContributors')", `"type":"alarm"`,
		} {
			assert.Contains(t, body, want)
		}
		for _, absent := range []string{"TimeToLiveDeletedItemCount", "ReplicationLatency", "UpdateItem", "orders"} {
			assert.NotContains(t, body, absent)
		}
	})
}

// numberParam is a Number CfnParameter of stack: a number token.
func numberParam(stack awscdk.Stack, id string) float64 {
	return *awscdk.NewCfnParameter(stack, jsii.String(id), &awscdk.CfnParameterProps{Type: jsii.String("Number")}).ValueAsNumber()
}

func TestTableMonitoringValidation(t *testing.T) {
	stack := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("V"), nil)
	table := dynamotable.NewTable(stack, jsii.String("T"), &dynamotable.TableProps{Schema: &keysSchema})
	dash := awscloudwatch.NewDashboard(stack, jsii.String("D"), nil)
	topic := awssns.Topic_FromTopicArn(stack, jsii.String("Topic"), jsii.String(onDemandTopicArn))
	with := func(edit func(p *monitoring.TableMonitoringProps)) *monitoring.TableMonitoringProps {
		p := &monitoring.TableMonitoringProps{Table: table}
		edit(p)
		return p
	}
	tests := []struct {
		name  string
		props *monitoring.TableMonitoringProps
		want  []string
	}{
		{"nil props", nil, []string{"give props.Table"}},
		{"no table", &monitoring.TableMonitoringProps{}, []string{"give props.Table"}},
		{"negative threshold", with(func(p *monitoring.TableMonitoringProps) {
			p.Thresholds = &monitoring.TableThresholds{WriteThrottleEvents: -1}
		}), []string{"Thresholds.WriteThrottleEvents -1 is negative"}},
		// Found by review: a token was "-1.88e+289 is negative" while the
		// godoc said tokens were not checked.
		{"token thresholds", with(func(p *monitoring.TableMonitoringProps) {
			p.Thresholds = &monitoring.TableThresholds{ReadThrottleEvents: numberParam(stack, "ReadThrottles"), LatencyMs: map[string]float64{"GetItem": numberParam(stack, "GetItemMs")}}
		}), []string{
			"Thresholds.ReadThrottleEvents is a token: give a literal (thresholds are written into the alarms' descriptions and some are scaled at synth, so a deploy-time value cannot be used)",
			`Thresholds.LatencyMs["GetItem"] is a token: give a literal (thresholds are written into the alarms' descriptions`,
		}},
		{"percent above 100", with(func(p *monitoring.TableMonitoringProps) {
			p.Thresholds = &monitoring.TableThresholds{ConsumedCapacityPercent: 120}
		}), []string{"Thresholds.ConsumedCapacityPercent 120 is above 100"}},
		{"latency of an operation not monitored, and negative", with(func(p *monitoring.TableMonitoringProps) {
			p.Operations = []string{"GetItem"}
			p.Thresholds = &monitoring.TableThresholds{LatencyMs: map[string]float64{"Query": 10, "GetItem": -3}}
		}), []string{`Thresholds.LatencyMs has "Query", which is not monitored`, `Thresholds.LatencyMs["GetItem"] -3 is negative`}},
		{"unknown and repeated operations", with(func(p *monitoring.TableMonitoringProps) {
			p.Operations = []string{"Get", "Query", "Query"}
		}), []string{`Operations: "Get" is not a DynamoDB operation`, `Operations lists "Query" twice`}},
		{"empty operations", with(func(p *monitoring.TableMonitoringProps) { p.Operations = []string{} }), []string{"Operations is empty"}},
		{"seconds period", with(func(p *monitoring.TableMonitoringProps) { p.Period = awscdk.Duration_Seconds(jsii.Number(90)) }), []string{"Period 90 seconds is invalid"}},
		{"unknown billing", with(func(p *monitoring.TableMonitoringProps) { p.Billing = "cheap" }), []string{`Billing "cheap" is unknown`}},
		{"dashboard and name", with(func(p *monitoring.TableMonitoringProps) { p.Dashboard, p.DashboardName = dash, "x" }), []string{`DashboardName "x" is given with Dashboard`}},
		{"bad dashboard name", with(func(p *monitoring.TableMonitoringProps) { p.DashboardName = "my dashboard" }), []string{`DashboardName "my dashboard" is invalid`}},
		{"topic and action", with(func(p *monitoring.TableMonitoringProps) {
			p.AlarmTopic, p.AlarmAction = topic, awscloudwatchactions.NewSnsAction(topic)
		}), []string{"AlarmTopic and AlarmAction are both given"}},
		{"bad and repeated regions", with(func(p *monitoring.TableMonitoringProps) {
			p.ReplicaRegions = []string{"Frankfurt", "eu-west-1", "eu-west-1"}
		}), []string{`ReplicaRegions: "Frankfurt" is not a region name`, `ReplicaRegions lists "eu-west-1" twice`}},
		{"quoted rule name", with(func(p *monitoring.TableMonitoringProps) { p.ContributorInsightsRuleNames = []string{"it's"} }), []string{`ContributorInsightsRuleNames: "it's" is not a rule name`}},
		{"runbook with anchor", with(func(p *monitoring.TableMonitoringProps) { p.RunbookURL = "https://x/runbook.md#top" }), []string{"has a '#'"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := monitoring.ValidateTableMonitoringProps(tt.props)
			require.Error(t, err)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
			assert.Len(t, strings.Split(err.Error(), "\n"), len(tt.want), "one line per problem: %v", err)
			assert.PanicsWithError(t, `monitoring "Mon": invalid props:`+"\n"+err.Error(), func() {
				monitoring.NewTableMonitoring(stack, jsii.String("Mon"), tt.props)
			})
		})
	}
	assert.NoError(t, monitoring.ValidateTableMonitoringProps(&monitoring.TableMonitoringProps{
		Table: table, Operations: []string{"GetItem", "Scan"}, Period: awscdk.Duration_Minutes(jsii.Number(1)),
		Thresholds:     &monitoring.TableThresholds{ConsumedCapacityPercent: 100, LatencyMs: map[string]float64{"Scan": 200}},
		ReplicaRegions: []string{"us-east-1", "ap-southeast-2"}, DashboardName: "keys_table-1",
		ContributorInsightsRuleNames: []string{keysRule},
	}))
}
