package monitoring

import (
	"fmt"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/triggers-dev/triggers/constructs/dynamotable"
)

// window is when an alarm fires: datapoints breaching periods out of the
// last evals.
type window struct{ datapoints, evals float64 }

// in describes the window after a count ("... >= 1 in 3 of 5 periods").
func (w window) in() string {
	if w.evals == 1 {
		return "in a period"
	}
	return fmt.Sprintf("in %v of %v periods", w.datapoints, w.evals)
}

// sustained describes the window after a level ("... stayed above 80% for
// 5 of 5 periods").
func (w window) sustained() string {
	if w.evals == 1 {
		return "for a period"
	}
	return fmt.Sprintf("for %v of %v periods", w.datapoints, w.evals)
}

// tableWindows are the windows of a table's alarms. They are counted in
// periods, so each construct keeps the ones that suit its period.
type tableWindows struct {
	throttles, systemErrors, latency, capacity, replication window
}

var (
	// tableMonitoringWindows are TableMonitoring's (1-minute periods by
	// default): a few minutes of throttling or errors, five minutes of
	// slow requests or high capacity.
	tableMonitoringWindows = tableWindows{
		throttles: window{3, 5}, systemErrors: window{3, 5}, latency: window{5, 5}, capacity: window{5, 5}, replication: window{5, 5},
	}
	// eventsTableWindows are TriggersMonitoring's for the events table
	// (5-minute periods by default): seed 001 asks to be told of any
	// throttling (one period), latency and capacity for 15 minutes.
	eventsTableWindows = tableWindows{
		throttles: window{1, 1}, systemErrors: window{1, 1}, latency: window{3, 3}, capacity: window{3, 3}, replication: window{5, 5},
	}
)

// tableSection builds one table's dashboard section and alarms. It is the
// one implementation behind TableMonitoring and TriggersMonitoring's events
// table: the same widgets, alarm ids, metrics, descriptions and runbook
// anchors; the constructs differ only in the values they give it
// (thresholds, windows, latency statistic, period, where the alarms go).
type tableSection struct {
	// scope is where the alarms are created (their construct ids are
	// their alarm ids).
	scope     constructs.Construct
	dashboard awscloudwatch.Dashboard
	table     dynamotable.ITable
	// heading is the section's title ("## <heading>").
	heading string
	// titlePrefix starts each graph's title: "" for a dashboard with one
	// table section of this kind, else something that tells the tables'
	// graphs apart.
	titlePrefix string
	provisioned bool
	// ops are the operations graphed, alarmed on when th.LatencyMs has
	// them, and whose SystemErrors are summed.
	ops []string
	// th are resolved thresholds: LatencyMs holds exactly the operations
	// with a latency alarm.
	th TableThresholds
	// latencyStat is the statistic of the latency alarms ("Average",
	// "p99").
	latencyStat string
	windows     tableWindows
	period      awscdk.Duration
	runbook     string
	replicas    []string
	// insights adds the Contributor Insights section (ruleNames graphed).
	insights  bool
	ruleNames []string
	// add receives each alarm once it is made (actions, bookkeeping).
	add func(id string, a awscloudwatch.Alarm)
}

// build adds the widgets and the alarms.
func (s *tableSection) build() {
	s.capacityAndThrottles()
	s.latency()
	s.errorsAndTTL()
	s.replication()
	if s.insights || len(s.ruleNames) > 0 {
		s.dashboard.AddWidgets(ContributorInsightsWidgets(s.table, s.ruleNames, s.period)...)
	}
}

func (s *tableSection) name() string { return s.table.Schema().Name }

func (s *tableSection) opts(stat, label string) *awscloudwatch.MetricOptions {
	return &awscloudwatch.MetricOptions{Statistic: jsii.String(stat), Label: jsii.String(label), Period: s.period}
}

// rate turns a Sum metric into a per-second rate; id names the metric in
// the expression and must differ between expressions of one graph.
func (s *tableSection) rate(metric awscloudwatch.IMetric, id, label string) awscloudwatch.IMetric {
	return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression:   jsii.String(id + "/PERIOD(" + id + ")"),
		UsingMetrics: &map[string]awscloudwatch.IMetric{id: metric},
		Label:        jsii.String(label),
		Period:       s.period,
	})
}

// alarm creates an alarm whose description names the table, says what it
// means and links to the runbook section anchor, and hands it to add.
func (s *tableSection) alarm(id, meaning, anchor string, metric awscloudwatch.IMetric, threshold float64, w window, cmp awscloudwatch.ComparisonOperator, missing awscloudwatch.TreatMissingData) {
	a := newAlarm(s.scope, id, "DynamoDB table "+s.name()+": "+meaning+" Runbook: "+s.runbook+"#"+anchor, metric, threshold, w.evals, w.datapoints, cmp, missing)
	s.add(id, a)
}

func (s *tableSection) capacityAndThrottles() {
	t := s.table
	indexes := t.Schema().GlobalIndexes
	s.dashboard.AddWidgets(header("## " + s.heading))

	capacity := func(title string, consumedR, consumedW, provR, provW awscloudwatch.IMetric) awscloudwatch.IWidget {
		left := []awscloudwatch.IMetric{s.rate(consumedR, "r", "Consumed RCU/s"), s.rate(consumedW, "w", "Consumed WCU/s")}
		if s.provisioned {
			left = append(left, provR, provW)
		}
		return graph(s.titlePrefix+title, left, nil, 8)
	}
	widgets := []awscloudwatch.IWidget{capacity("Capacity (table)",
		t.MetricConsumedReadCapacityUnits(s.opts("Sum", "consumed")),
		t.MetricConsumedWriteCapacityUnits(s.opts("Sum", "consumed")),
		t.Metric("ProvisionedReadCapacityUnits", s.opts("Average", "Provisioned RCU")),
		t.Metric("ProvisionedWriteCapacityUnits", s.opts("Average", "Provisioned WCU")))}
	for _, ix := range indexes {
		widgets = append(widgets, capacity("Capacity (GSI "+ix.Name+")",
			t.MetricForIndex(ix.Name, "ConsumedReadCapacityUnits", s.opts("Sum", "consumed")),
			t.MetricForIndex(ix.Name, "ConsumedWriteCapacityUnits", s.opts("Sum", "consumed")),
			t.MetricForIndex(ix.Name, "ProvisionedReadCapacityUnits", s.opts("Average", "Provisioned RCU")),
			t.MetricForIndex(ix.Name, "ProvisionedWriteCapacityUnits", s.opts("Average", "Provisioned WCU"))))
	}
	throttles := []awscloudwatch.IMetric{
		t.MetricReadThrottleEvents(s.opts("Sum", "Table read")),
		t.MetricWriteThrottleEvents(s.opts("Sum", "Table write")),
	}
	for _, ix := range indexes {
		throttles = append(throttles,
			t.MetricForIndex(ix.Name, "ReadThrottleEvents", s.opts("Sum", ix.Name+" read")),
			t.MetricForIndex(ix.Name, "WriteThrottleEvents", s.opts("Sum", ix.Name+" write")))
	}
	widgets = append(widgets, graph(s.titlePrefix+"Throttle events (table and each GSI)", throttles, nil, 8))
	s.dashboard.AddWidgets(widgets...)

	// DynamoDB publishes throttle events only when a request is throttled:
	// no data means no throttling, so missing data is not breaching.
	w := s.windows.throttles
	s.alarm("ReadThrottleEvents", fmt.Sprintf("reads were throttled (ReadThrottleEvents >= %v %s).", s.th.ReadThrottleEvents, w.in()), RunbookTableReadThrottling,
		throttles[0], s.th.ReadThrottleEvents, w, gte, notBrch)
	s.alarm("WriteThrottleEvents", fmt.Sprintf("writes were throttled (WriteThrottleEvents >= %v %s).", s.th.WriteThrottleEvents, w.in()), RunbookTableWriteThrottling,
		throttles[1], s.th.WriteThrottleEvents, w, gte, notBrch)
	for i, ix := range indexes {
		// Same reason: published only when the index throttles.
		s.alarm(ix.Name+"ReadThrottleEvents", fmt.Sprintf("queries on GSI %s were throttled (ReadThrottleEvents >= %v %s).", ix.Name, s.th.ReadThrottleEvents, w.in()), RunbookIndexReadThrottling,
			throttles[2+2*i], s.th.ReadThrottleEvents, w, gte, notBrch)
		s.alarm(ix.Name+"WriteThrottleEvents", fmt.Sprintf("writes to GSI %s were throttled (WriteThrottleEvents >= %v %s); a throttled GSI throttles the table's writes too.", ix.Name, s.th.WriteThrottleEvents, w.in()), RunbookIndexWriteThrottling,
			throttles[3+2*i], s.th.WriteThrottleEvents, w, gte, notBrch)
	}

	if !s.provisioned {
		return
	}
	s.capacityAlarm("ReadCapacity", "read capacity of the table",
		t.MetricConsumedReadCapacityUnits(s.opts("Sum", "consumed")), t.Metric("ProvisionedReadCapacityUnits", s.opts("Average", "provisioned")))
	s.capacityAlarm("WriteCapacity", "write capacity of the table",
		t.MetricConsumedWriteCapacityUnits(s.opts("Sum", "consumed")), t.Metric("ProvisionedWriteCapacityUnits", s.opts("Average", "provisioned")))
	for _, ix := range indexes {
		s.capacityAlarm(ix.Name+"ReadCapacity", "read capacity of GSI "+ix.Name,
			t.MetricForIndex(ix.Name, "ConsumedReadCapacityUnits", s.opts("Sum", "consumed")),
			t.MetricForIndex(ix.Name, "ProvisionedReadCapacityUnits", s.opts("Average", "provisioned")))
		s.capacityAlarm(ix.Name+"WriteCapacity", "write capacity of GSI "+ix.Name,
			t.MetricForIndex(ix.Name, "ConsumedWriteCapacityUnits", s.opts("Sum", "consumed")),
			t.MetricForIndex(ix.Name, "ProvisionedWriteCapacityUnits", s.opts("Average", "provisioned")))
	}
}

func (s *tableSection) capacityAlarm(id, what string, consumed, provisioned awscloudwatch.IMetric) {
	// DynamoDB publishes the provisioned capacity every 5 minutes only: in
	// a shorter period p is missing 4 times out of 5, the expression then
	// has no datapoint, and the alarm's N of N could never breach (found
	// by review). FILL(p, REPEAT) carries the last value over.
	pct := awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression:   jsii.String("100 * (c / PERIOD(c)) / FILL(p, REPEAT)"),
		UsingMetrics: &map[string]awscloudwatch.IMetric{"c": consumed, "p": provisioned},
		Label:        jsii.String("Consumed " + what + ", % of provisioned"),
		Period:       s.period,
	})
	// Consumed capacity is published only while requests consume it: no
	// data is an idle table, far from its provisioned capacity.
	w := s.windows.capacity
	s.alarm(id, fmt.Sprintf("consumed %s stayed above %v%% of provisioned %s: auto scaling is at its maximum or too slow.", what, s.th.ConsumedCapacityPercent, w.sustained()), RunbookTableCapacity,
		pct, s.th.ConsumedCapacityPercent, w, gt, notBrch)
}

// latencyStatText is how a description names the latency statistic.
func latencyStatText(stat string) string {
	if stat == "Average" {
		return "average"
	}
	return stat
}

func (s *tableSection) latency() {
	t := s.table
	var widgets []awscloudwatch.IWidget
	for _, op := range s.ops {
		widgets = append(widgets, graph(s.titlePrefix+"SuccessfulRequestLatency "+op+" (ms)", []awscloudwatch.IMetric{
			t.MetricSuccessfulRequestLatency(op, s.opts("p50", "p50")),
			t.MetricSuccessfulRequestLatency(op, s.opts("p95", "p95")),
			t.MetricSuccessfulRequestLatency(op, s.opts("p99", "p99")),
			t.MetricSuccessfulRequestLatency(op, s.opts("Average", "Average")),
		}, nil, 8))
	}
	s.dashboard.AddWidgets(widgets...)
	stat, w := latencyStatText(s.latencyStat), s.windows.latency
	for _, op := range s.ops {
		th, ok := s.th.LatencyMs[op]
		if !ok {
			continue
		}
		// An operation the application does not call publishes nothing:
		// missing data is not breaching.
		s.alarm(op+"Latency", fmt.Sprintf("%s %s SuccessfulRequestLatency stayed above %v ms %s.", op, stat, th, w.sustained()), RunbookTableLatency,
			t.MetricSuccessfulRequestLatency(op, s.opts(s.latencyStat, op+" "+stat)), th, w, gt, notBrch)
	}
}

func (s *tableSection) errorsAndTTL() {
	t := s.table
	sysErr := sumOverOperations(t, "SystemErrors", s.ops, s.period, "SystemErrors (monitored operations)")
	widgets := []awscloudwatch.IWidget{
		graph(s.titlePrefix+"Errors", []awscloudwatch.IMetric{
			sysErr,
			t.Metric("ConditionalCheckFailedRequests", s.opts("Sum", "ConditionalCheckFailedRequests")),
			t.Metric("TransactionConflict", s.opts("Sum", "TransactionConflict")),
		}, []awscloudwatch.IMetric{
			// UserErrors has no TableName dimension: it is per account
			// and region.
			awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
				Namespace: jsii.String("AWS/DynamoDB"), MetricName: jsii.String("UserErrors"), Statistic: jsii.String("Sum"),
				Period: s.period, Label: jsii.String("UserErrors (account-level: every table in the region)"),
			}),
		}, 12),
	}
	if ttl := t.Schema().TTLAttribute; ttl != "" {
		widgets = append(widgets, graph(s.titlePrefix+"TTL deletions (attribute "+ttl+")", []awscloudwatch.IMetric{
			t.Metric("TimeToLiveDeletedItemCount", s.opts("Sum", "TimeToLiveDeletedItemCount")),
		}, nil, 12))
	}
	s.dashboard.AddWidgets(widgets...)
	// SystemErrors is published only when DynamoDB fails a request with
	// HTTP 500: no data means no errors.
	w := s.windows.systemErrors
	s.alarm("SystemErrors", fmt.Sprintf("DynamoDB failed requests with internal server errors (HTTP 500; SystemErrors >= %v %s).", s.th.SystemErrors, w.in()), RunbookTableSystemErrors,
		sysErr, s.th.SystemErrors, w, gte, notBrch)
}

func (s *tableSection) replication() {
	if len(s.replicas) == 0 {
		return
	}
	t := s.table
	w := s.windows.replication
	var lines []awscloudwatch.IMetric
	for _, r := range s.replicas {
		metric := t.Metric("ReplicationLatency", &awscloudwatch.MetricOptions{
			Statistic: jsii.String("Average"), Period: s.period, Label: jsii.String("to " + r),
			DimensionsMap: &map[string]*string{"TableName": t.TableName(), "ReceivingRegion": jsii.String(r)},
		})
		lines = append(lines, metric)
		// ReplicationLatency is published only while items replicate, so
		// a gap is either no writes or replication that stopped. Missing
		// data keeps the alarm's state: a stall that silences the metric
		// must not turn an alarm OK.
		s.alarm("ReplicationLatency-"+r, fmt.Sprintf("replication to %s took more than %v ms on average %s.", r, s.th.ReplicationLatencyMs, w.sustained()), RunbookTableReplicationLatency,
			metric, s.th.ReplicationLatencyMs, w, gt, ignore)
	}
	s.dashboard.AddWidgets(graph(s.titlePrefix+"ReplicationLatency (ms)", lines, nil, 24))
}

// sumOverOperations is the math expression summing t's per-operation
// metric name (dimensions TableName and Operation) over ops. Each term is
// FILL(e, 0): DynamoDB publishes a per-operation error metric only for an
// operation that failed, and metric math gives no datapoint for a period
// in which one term of a sum has none, so a sum of the bare metrics had a
// datapoint only when every operation failed in the same period (found by
// review: one operation's HTTP 500s never fired SystemErrors).
func sumOverOperations(t dynamotable.ITable, name string, ops []string, period awscdk.Duration, label string) awscloudwatch.IMetric {
	using := map[string]awscloudwatch.IMetric{}
	var ids []string
	for i, op := range ops {
		id := fmt.Sprintf("e%d", i)
		ids = append(ids, "FILL("+id+", 0)")
		using[id] = t.Metric(name, &awscloudwatch.MetricOptions{
			Statistic: jsii.String("Sum"), Period: period,
			DimensionsMap: &map[string]*string{"TableName": t.TableName(), "Operation": jsii.String(op)},
		})
	}
	return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String(strings.Join(ids, " + ")), UsingMetrics: &using,
		Label: jsii.String(label), Period: period,
	})
}
