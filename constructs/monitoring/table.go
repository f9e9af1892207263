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
// attribute.
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
// UserErrors is graphed but not alarmed on: DynamoDB publishes it per
// account and region (no TableName dimension), so it counts every table's
// client errors, and client errors are the callers' to handle.
type TableMonitoring struct {
	constructs.Construct
	// Dashboard is the dashboard the widgets went to: the one given in
	// props, or the one created.
	Dashboard awscloudwatch.Dashboard
	// Alarms by id (see the type's documentation).
	Alarms map[string]awscloudwatch.Alarm

	table   dynamotable.ITable
	props   TableMonitoringProps
	th      TableThresholds
	ops     []string
	period  awscdk.Duration
	runbook string
	action  awscloudwatch.IAlarmAction
}

// Alarm returns the alarm with id, or nil.
func (m *TableMonitoring) Alarm(id string) awscloudwatch.Alarm { return m.Alarms[id] }

// NewTableMonitoring adds the table's widgets and alarms. It panics with an
// error naming every bad prop and its fix when props are invalid (see
// ValidateTableMonitoringProps).
func NewTableMonitoring(scope constructs.Construct, id *string, props *TableMonitoringProps) *TableMonitoring {
	if err := ValidateTableMonitoringProps(props); err != nil {
		panic(fmt.Errorf("monitoring %q: invalid props:\n%w", deref(id), err))
	}
	m := &TableMonitoring{props: *props, table: props.Table, Alarms: map[string]awscloudwatch.Alarm{}}
	if m.props.Billing == "" {
		m.props.Billing = dynamotable.OnDemand
		if b, ok := m.table.(interface{ Billing() dynamotable.Billing }); ok {
			m.props.Billing = b.Billing()
		}
	}
	m.ops = props.Operations
	if m.ops == nil {
		m.ops = TableOperations
	}
	m.th = props.Thresholds.withDefaults(m.ops)
	m.period = props.Period
	if m.period == nil {
		m.period = awscdk.Duration_Minutes(jsii.Number(1))
	}
	m.runbook = props.RunbookURL
	if m.runbook == "" {
		m.runbook = DefaultRunbookURL
	}
	m.action = props.AlarmAction
	if props.AlarmTopic != nil {
		m.action = awscloudwatchactions.NewSnsAction(props.AlarmTopic)
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

	m.capacityAndThrottles()
	m.latency()
	m.errorsAndTTL()
	m.replication()
	m.contributorInsights()
	m.alarmStatus()
	return m
}

func (m *TableMonitoring) name() string { return m.table.Schema().Name }

func (m *TableMonitoring) opts(stat, label string) *awscloudwatch.MetricOptions {
	return &awscloudwatch.MetricOptions{Statistic: jsii.String(stat), Label: jsii.String(label), Period: m.period}
}

// rate turns a Sum metric into a per-second rate; id names the metric in
// the expression and must differ between expressions of one graph.
func (m *TableMonitoring) rate(metric awscloudwatch.IMetric, id, label string) awscloudwatch.IMetric {
	return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression:   jsii.String(id + "/PERIOD(" + id + ")"),
		UsingMetrics: &map[string]awscloudwatch.IMetric{id: metric},
		Label:        jsii.String(label),
		Period:       m.period,
	})
}

// alarm creates an alarm whose description says what it means and links to
// the runbook section anchor; the alarm action, if any, runs on ALARM and
// on OK.
func (m *TableMonitoring) alarm(id, meaning, anchor string, metric awscloudwatch.IMetric, threshold, evals, datapoints float64, cmp awscloudwatch.ComparisonOperator, missing awscloudwatch.TreatMissingData) {
	a := awscloudwatch.NewAlarm(m, jsii.String(id), &awscloudwatch.AlarmProps{
		Metric:             metric,
		Threshold:          jsii.Number(threshold),
		EvaluationPeriods:  jsii.Number(evals),
		DatapointsToAlarm:  jsii.Number(datapoints),
		ComparisonOperator: cmp,
		TreatMissingData:   missing,
		AlarmDescription:   jsii.String("DynamoDB table " + m.name() + ": " + meaning + " Runbook: " + m.runbook + "#" + anchor),
	})
	if m.action != nil {
		a.AddAlarmAction(m.action)
		a.AddOkAction(m.action)
	}
	m.Alarms[id] = a
}

func (m *TableMonitoring) capacityAndThrottles() {
	t := m.table
	indexes := t.Schema().GlobalIndexes
	provisioned := m.props.Billing == dynamotable.Provisioned
	m.Dashboard.AddWidgets(header("## DynamoDB table " + m.name()))

	capacity := func(title string, consumedR, consumedW, provR, provW awscloudwatch.IMetric) awscloudwatch.IWidget {
		left := []awscloudwatch.IMetric{m.rate(consumedR, "r", "Consumed RCU/s"), m.rate(consumedW, "w", "Consumed WCU/s")}
		if provisioned {
			left = append(left, provR, provW)
		}
		return graph(title, left, nil, 8)
	}
	widgets := []awscloudwatch.IWidget{capacity("Capacity (table)",
		t.MetricConsumedReadCapacityUnits(m.opts("Sum", "consumed")),
		t.MetricConsumedWriteCapacityUnits(m.opts("Sum", "consumed")),
		t.Metric("ProvisionedReadCapacityUnits", m.opts("Average", "Provisioned RCU")),
		t.Metric("ProvisionedWriteCapacityUnits", m.opts("Average", "Provisioned WCU")))}
	for _, ix := range indexes {
		widgets = append(widgets, capacity("Capacity (GSI "+ix.Name+")",
			t.MetricForIndex(ix.Name, "ConsumedReadCapacityUnits", m.opts("Sum", "consumed")),
			t.MetricForIndex(ix.Name, "ConsumedWriteCapacityUnits", m.opts("Sum", "consumed")),
			t.MetricForIndex(ix.Name, "ProvisionedReadCapacityUnits", m.opts("Average", "Provisioned RCU")),
			t.MetricForIndex(ix.Name, "ProvisionedWriteCapacityUnits", m.opts("Average", "Provisioned WCU"))))
	}
	throttles := []awscloudwatch.IMetric{
		t.MetricReadThrottleEvents(m.opts("Sum", "Table read")),
		t.MetricWriteThrottleEvents(m.opts("Sum", "Table write")),
	}
	for _, ix := range indexes {
		throttles = append(throttles,
			t.MetricForIndex(ix.Name, "ReadThrottleEvents", m.opts("Sum", ix.Name+" read")),
			t.MetricForIndex(ix.Name, "WriteThrottleEvents", m.opts("Sum", ix.Name+" write")))
	}
	widgets = append(widgets, graph("Throttle events (table and each GSI)", throttles, nil, 8))
	m.Dashboard.AddWidgets(widgets...)

	// DynamoDB publishes throttle events only when a request is throttled:
	// no data means no throttling, so missing data is not breaching.
	m.alarm("ReadThrottleEvents", fmt.Sprintf("reads were throttled (ReadThrottleEvents >= %v in 3 of 5 periods).", m.th.ReadThrottleEvents), RunbookTableReadThrottling,
		throttles[0], m.th.ReadThrottleEvents, 5, 3, gte, notBrch)
	m.alarm("WriteThrottleEvents", fmt.Sprintf("writes were throttled (WriteThrottleEvents >= %v in 3 of 5 periods).", m.th.WriteThrottleEvents), RunbookTableWriteThrottling,
		throttles[1], m.th.WriteThrottleEvents, 5, 3, gte, notBrch)
	for i, ix := range indexes {
		// Same reason: published only when the index throttles.
		m.alarm(ix.Name+"ReadThrottleEvents", fmt.Sprintf("queries on GSI %s were throttled (ReadThrottleEvents >= %v in 3 of 5 periods).", ix.Name, m.th.ReadThrottleEvents), RunbookIndexReadThrottling,
			throttles[2+2*i], m.th.ReadThrottleEvents, 5, 3, gte, notBrch)
		m.alarm(ix.Name+"WriteThrottleEvents", fmt.Sprintf("writes to GSI %s were throttled (WriteThrottleEvents >= %v in 3 of 5 periods); a throttled GSI throttles the table's writes too.", ix.Name, m.th.WriteThrottleEvents), RunbookIndexWriteThrottling,
			throttles[3+2*i], m.th.WriteThrottleEvents, 5, 3, gte, notBrch)
	}

	if !provisioned {
		return
	}
	m.capacityAlarm("ReadCapacity", "read capacity of the table",
		t.MetricConsumedReadCapacityUnits(m.opts("Sum", "consumed")), t.Metric("ProvisionedReadCapacityUnits", m.opts("Average", "provisioned")))
	m.capacityAlarm("WriteCapacity", "write capacity of the table",
		t.MetricConsumedWriteCapacityUnits(m.opts("Sum", "consumed")), t.Metric("ProvisionedWriteCapacityUnits", m.opts("Average", "provisioned")))
	for _, ix := range indexes {
		m.capacityAlarm(ix.Name+"ReadCapacity", "read capacity of GSI "+ix.Name,
			t.MetricForIndex(ix.Name, "ConsumedReadCapacityUnits", m.opts("Sum", "consumed")),
			t.MetricForIndex(ix.Name, "ProvisionedReadCapacityUnits", m.opts("Average", "provisioned")))
		m.capacityAlarm(ix.Name+"WriteCapacity", "write capacity of GSI "+ix.Name,
			t.MetricForIndex(ix.Name, "ConsumedWriteCapacityUnits", m.opts("Sum", "consumed")),
			t.MetricForIndex(ix.Name, "ProvisionedWriteCapacityUnits", m.opts("Average", "provisioned")))
	}
}

func (m *TableMonitoring) capacityAlarm(id, what string, consumed, provisioned awscloudwatch.IMetric) {
	pct := awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression:   jsii.String("100 * (c / PERIOD(c)) / p"),
		UsingMetrics: &map[string]awscloudwatch.IMetric{"c": consumed, "p": provisioned},
		Label:        jsii.String("Consumed " + what + ", % of provisioned"),
		Period:       m.period,
	})
	// Consumed capacity is published only while requests consume it: no
	// data is an idle table, far from its provisioned capacity.
	m.alarm(id, fmt.Sprintf("consumed %s stayed above %v%% of provisioned for 5 of 5 periods: auto scaling is at its maximum or too slow.", what, m.th.ConsumedCapacityPercent), RunbookTableCapacity,
		pct, m.th.ConsumedCapacityPercent, 5, 5, gt, notBrch)
}

func (m *TableMonitoring) latency() {
	t := m.table
	var widgets []awscloudwatch.IWidget
	for _, op := range m.ops {
		widgets = append(widgets, graph("SuccessfulRequestLatency "+op+" (ms)", []awscloudwatch.IMetric{
			t.MetricSuccessfulRequestLatency(op, m.opts("p50", "p50")),
			t.MetricSuccessfulRequestLatency(op, m.opts("p99", "p99")),
			t.MetricSuccessfulRequestLatency(op, m.opts("Average", "Average")),
		}, nil, 8))
	}
	m.Dashboard.AddWidgets(widgets...)
	for _, op := range m.ops {
		th := m.th.LatencyMs[op]
		// The alarm uses Average, a statistic DynamoDB documents for
		// SuccessfulRequestLatency (Minimum, Maximum, Sum, Average,
		// SampleCount); the percentiles are on the dashboard only. An
		// operation the application does not call publishes nothing:
		// missing data is not breaching.
		m.alarm(op+"Latency", fmt.Sprintf("%s average SuccessfulRequestLatency stayed above %v ms for 5 of 5 periods.", op, th), RunbookTableLatency,
			t.MetricSuccessfulRequestLatency(op, m.opts("Average", op+" average")), th, 5, 5, gt, notBrch)
	}
}

// sumOverOperations adds a per-operation metric (dimensions TableName and
// Operation) over the monitored operations.
func (m *TableMonitoring) sumOverOperations(name string) awscloudwatch.IMetric {
	return sumOverOperations(m.table, name, m.ops, m.period, name+" (monitored operations)")
}

func (m *TableMonitoring) errorsAndTTL() {
	t := m.table
	sysErr := m.sumOverOperations("SystemErrors")
	widgets := []awscloudwatch.IWidget{
		graph("Errors", []awscloudwatch.IMetric{
			sysErr,
			t.Metric("ConditionalCheckFailedRequests", m.opts("Sum", "ConditionalCheckFailedRequests")),
			t.Metric("TransactionConflict", m.opts("Sum", "TransactionConflict")),
		}, []awscloudwatch.IMetric{
			// UserErrors has no TableName dimension: it is per account
			// and region.
			awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
				Namespace: jsii.String("AWS/DynamoDB"), MetricName: jsii.String("UserErrors"), Statistic: jsii.String("Sum"),
				Period: m.period, Label: jsii.String("UserErrors (account-level: every table in the region)"),
			}),
		}, 12),
	}
	if ttl := t.Schema().TTLAttribute; ttl != "" {
		widgets = append(widgets, graph("TTL deletions (attribute "+ttl+")", []awscloudwatch.IMetric{
			t.Metric("TimeToLiveDeletedItemCount", m.opts("Sum", "TimeToLiveDeletedItemCount")),
		}, nil, 12))
	}
	m.Dashboard.AddWidgets(widgets...)
	// SystemErrors is published only when DynamoDB fails a request with
	// HTTP 500: no data means no errors.
	m.alarm("SystemErrors", fmt.Sprintf("DynamoDB failed requests with internal server errors (HTTP 500; SystemErrors >= %v in 3 of 5 periods).", m.th.SystemErrors), RunbookTableSystemErrors,
		sysErr, m.th.SystemErrors, 5, 3, gte, notBrch)
}

func (m *TableMonitoring) replication() {
	if len(m.props.ReplicaRegions) == 0 {
		return
	}
	t := m.table
	var lines []awscloudwatch.IMetric
	for _, r := range m.props.ReplicaRegions {
		metric := t.Metric("ReplicationLatency", &awscloudwatch.MetricOptions{
			Statistic: jsii.String("Average"), Period: m.period, Label: jsii.String("to " + r),
			DimensionsMap: &map[string]*string{"TableName": t.TableName(), "ReceivingRegion": jsii.String(r)},
		})
		lines = append(lines, metric)
		// ReplicationLatency is published only while items replicate, so
		// a gap is either no writes or replication that stopped. Missing
		// data keeps the alarm's state: a stall that silences the metric
		// must not turn an alarm OK.
		m.alarm("ReplicationLatency-"+r, fmt.Sprintf("replication to %s took more than %v ms on average for 5 of 5 periods.", r, m.th.ReplicationLatencyMs), RunbookTableReplicationLatency,
			metric, m.th.ReplicationLatencyMs, 5, 5, gt, ignore)
	}
	m.Dashboard.AddWidgets(graph("ReplicationLatency (ms)", lines, nil, 24))
}

func (m *TableMonitoring) contributorInsights() {
	if !m.props.ContributorInsights && len(m.props.ContributorInsightsRuleNames) == 0 {
		return
	}
	m.Dashboard.AddWidgets(ContributorInsightsWidgets(m.table, m.props.ContributorInsightsRuleNames, m.period)...)
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
		Title: jsii.String("Alarms (" + m.name() + ")"), Alarms: &alarms, Width: jsii.Number(24),
	}))
}
