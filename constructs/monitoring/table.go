package monitoring

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/interfaces/interfacesawscloudwatch"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/triggers-dev/triggers/constructs/dynamotable"
	"github.com/triggers-dev/triggers/constructs/internal/cdkutil"
)

// Runbook section anchors (in docs/runbook.md) that TableMonitoring's alarm
// descriptions link to.
const (
	// RunbookTableReadThrottling explains table read throttling.
	RunbookTableReadThrottling = "dynamodb-table-read-throttling"
	// RunbookTableWriteThrottling explains table write throttling.
	RunbookTableWriteThrottling = "dynamodb-table-write-throttling"
	// RunbookIndexReadThrottling explains GSI read throttling.
	RunbookIndexReadThrottling = "dynamodb-gsi-read-throttling"
	// RunbookIndexWriteThrottling explains GSI write throttling (which
	// throttles the table's writes too).
	RunbookIndexWriteThrottling = "dynamodb-gsi-write-throttling"
	// RunbookTableSystemErrors explains DynamoDB system errors.
	RunbookTableSystemErrors = "dynamodb-system-errors"
	// RunbookTableLatency explains high SuccessfulRequestLatency.
	RunbookTableLatency = "dynamodb-request-latency"
	// RunbookTableCapacity explains consumed capacity near provisioned
	// capacity (the anchor TriggersMonitoring's capacity alarms use too).
	RunbookTableCapacity = "consumed-capacity-above-provisioned"
	// RunbookTableReplicationLatency explains global table replication lag.
	RunbookTableReplicationLatency = "dynamodb-replication-latency"
)

// TableMonitoring is the dashboard section and the alarms of one DynamoDB
// table: capacity (consumed, and provisioned when the table is provisioned),
// throttle events of the table and of each GSI, SuccessfulRequestLatency per
// operation, system and user errors, TTL deletions, replication latency of
// replicas and Contributor Insights. It follows cdk-monitoring-constructs'
// DynamoDB facet (that library has no Go package) and adds throttle and
// capacity alarms per GSI, replication latency alarms, a runbook link in
// every alarm description and an explicit missing-data treatment on every
// alarm. The TTL deletions graph appears when the schema has a TTL
// attribute. TriggersMonitoring builds the events table's section and
// alarms with the same code (same ids, metrics and runbook sections), with
// its own thresholds and windows.
//
// Alarms, by id (see Alarm):
//
//	ReadThrottleEvents, WriteThrottleEvents           table throttling
//	<index>ReadThrottleEvents, <index>WriteThrottleEvents  each GSI
//	SystemErrors                                      over Operations
//	<operation>Latency                                each of Operations
//	ReadCapacity, WriteCapacity, <index>ReadCapacity, <index>WriteCapacity
//	                                                  provisioned billing only
//	ReplicationLatency-<region>                       each of ReplicaRegions
//
// The latency alarms use Average, a statistic DynamoDB documents for
// SuccessfulRequestLatency and the one AWS advises to watch for sustained
// increases (high percentiles spike normally); the dashboard also graphs
// p50, p95 and p99. UserErrors is graphed but not alarmed on: DynamoDB
// publishes it per account and region (no TableName dimension), so it
// counts every table's client errors, and client errors are the callers'
// to handle.
type TableMonitoring struct {
	constructs.Construct
	// Dashboard is the dashboard the widgets went to: the one given in
	// props, or the one created.
	Dashboard awscloudwatch.Dashboard
	// Alarms by id (see the type's documentation).
	Alarms map[string]awscloudwatch.Alarm

	name string
}

// Alarm returns the alarm with id, or nil.
func (m *TableMonitoring) Alarm(id string) awscloudwatch.Alarm { return m.Alarms[id] }

// NewTableMonitoring adds the table's widgets and alarms. It panics with an
// error naming every bad prop and its fix when props are invalid (see
// ValidateTableMonitoringProps).
func NewTableMonitoring(scope constructs.Construct, id *string, props *TableMonitoringProps) *TableMonitoring {
	if err := ValidateTableMonitoringProps(props); err != nil {
		panic(fmt.Errorf("monitoring %q: invalid props:\n%w", cdkutil.Deref(id), err))
	}
	m := &TableMonitoring{Alarms: map[string]awscloudwatch.Alarm{}, name: props.Table.Schema().Name}
	ops := props.Operations
	if ops == nil {
		ops = tableOperations
	}
	period := props.Period
	if period == nil {
		period = awscdk.Duration_Minutes(jsii.Number(1))
	}
	runbook := props.RunbookURL
	if runbook == "" {
		runbook = DefaultRunbookURL
	}
	action := props.AlarmAction
	if props.AlarmTopic != nil {
		action = awscloudwatchactions.NewSnsAction(props.AlarmTopic)
	}
	constructs.NewConstruct_Override(m, scope, id)

	m.Dashboard = props.Dashboard
	if m.Dashboard == nil {
		dp := &awscloudwatch.DashboardProps{DefaultInterval: awscdk.Duration_Hours(jsii.Number(3))}
		if props.DashboardName != "" {
			dp.DashboardName = jsii.String(props.DashboardName)
		}
		m.Dashboard = awscloudwatch.NewDashboard(m, jsii.String("Dashboard"), dp)
		// As in NewTriggersMonitoring: cfn-lint 1.51's schema predates the
		// dashboard's Tags (E3002); the ignore is scoped to this resource.
		m.Dashboard.Node().DefaultChild().(awscdk.CfnResource).AddMetadata(jsii.String("cfn-lint"), map[string]any{
			"config": map[string]any{"ignore_checks": []string{"E3002"}},
		})
	}

	s := &tableSection{
		scope: m, dashboard: m.Dashboard, table: props.Table,
		heading:     "DynamoDB table " + m.name,
		provisioned: billingOf(props.Table, props.Billing) == dynamotable.Provisioned,
		ops:         ops, th: props.Thresholds.withDefaults(ops), latencyStat: "Average",
		windows: tableMonitoringWindows, period: period, runbook: runbook,
		replicas: replicaRegionsOf(props.Table, props.ReplicaRegions), insights: props.ContributorInsights, ruleNames: props.ContributorInsightsRuleNames,
		add: func(id string, a awscloudwatch.Alarm) {
			// The action runs on ALARM and on OK.
			if action != nil {
				a.AddAlarmAction(action)
				a.AddOkAction(action)
			}
			m.Alarms[id] = a
		},
	}
	s.build()
	m.alarmStatus()
	return m
}

// billingOf is billing when given, else the table's own when it was made
// with dynamotable, else on demand.
func billingOf(t dynamotable.ITable, billing dynamotable.Billing) dynamotable.Billing {
	if billing != "" {
		return billing
	}
	if b, ok := t.(interface{ Billing() dynamotable.Billing }); ok {
		return b.Billing()
	}
	return dynamotable.OnDemand
}

// ContributorInsightsWidgets returns the Contributor Insights section of a
// table with Contributor Insights on, for any dashboard (TableMonitoring
// adds it when its ContributorInsights prop is set). DynamoDB creates and
// names the rules itself, DynamoDBContributorInsights-<kind>-<table>-<creation
// time in ms>, so their names are unknown at synth: without ruleNames the
// section is a text widget saying how to find them; with ruleNames (from
// `aws dynamodb describe-contributor-insights --table-name <table>`) it
// graphs each rule's top contributor and number of unique contributors.
// period defaults to 1 minute.
func ContributorInsightsWidgets(table dynamotable.ITable, ruleNames []string, period awscdk.Duration) []awscloudwatch.IWidget {
	if period == nil {
		period = awscdk.Duration_Minutes(jsii.Number(1))
	}
	name := table.Schema().Name
	if len(ruleNames) == 0 {
		sk := ""
		if table.Schema().SortKey != nil {
			sk = ", `SKC` (most accessed partition + sort keys) and `SKT` (most throttled partition + sort keys)"
		}
		return []awscloudwatch.IWidget{awscloudwatch.NewTextWidget(&awscloudwatch.TextWidgetProps{
			Markdown: jsii.String("### Contributor Insights (" + name + ")\n" +
				"DynamoDB names the rules `DynamoDBContributorInsights-<kind>-<table>-<creation time in ms>`: " +
				"`PKC` (most accessed partition keys), `PKT` (most throttled partition keys)" + sk + "; " +
				"in throttled-keys mode only the throttled ones. " +
				"Open them under CloudWatch > Insights > Contributor Insights; to graph them here, pass the names from " +
				"`aws dynamodb describe-contributor-insights --table-name <table>` in ContributorInsightsRuleNames."),
			Width: jsii.Number(24), Height: jsii.Number(3),
		})}
	}
	var widgets []awscloudwatch.IWidget
	for _, r := range ruleNames {
		widgets = append(widgets, graph("Contributor Insights: "+r, []awscloudwatch.IMetric{
			awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
				Expression: jsii.String("INSIGHT_RULE_METRIC('" + r + "', 'MaxContributorValue')"),
				Label:      jsii.String("Top contributor"), Period: period,
			}),
		}, []awscloudwatch.IMetric{
			awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
				Expression: jsii.String("INSIGHT_RULE_METRIC('" + r + "', 'UniqueContributors')"),
				Label:      jsii.String("Unique contributors"), Period: period,
			}),
		}, 12))
	}
	return widgets
}

func (m *TableMonitoring) alarmStatus() {
	ids := tableSortedKeys(m.Alarms)
	alarms := make([]interfacesawscloudwatch.IAlarmRef, 0, len(ids))
	for _, id := range ids {
		alarms = append(alarms, m.Alarms[id])
	}
	m.Dashboard.AddWidgets(awscloudwatch.NewAlarmStatusWidget(&awscloudwatch.AlarmStatusWidgetProps{
		Title: jsii.String("Alarms (" + m.name + ")"), Alarms: &alarms, Width: jsii.Number(24),
	}))
}
