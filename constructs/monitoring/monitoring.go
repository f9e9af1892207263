// Package monitoring provides TriggersMonitoring: one CloudWatch dashboard
// with clear sections (events table, functions, API Gateway, queues, the
// runtime's own metrics), alarms with configurable thresholds whose
// descriptions link to docs/runbook.md, and saved CloudWatch Logs Insights
// queries; and TableMonitoring: the dashboard section and alarms of any
// table made with dynamotable. Both build a table's widgets and alarms
// with the same code, so the events table and any other table have the
// same alarm ids, metrics and runbook sections. No Go library offers this
// (cdk-monitoring-constructs has no Go package); the metrics and alarm
// choices follow its TypeScript anchors.
package monitoring

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/aws-cdk-go/awscdk/v2/interfaces/interfacesawscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/interfaces/interfacesawslogs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/triggers-dev/triggers/constructs/archive"
	"github.com/triggers-dev/triggers/constructs/dynamotable"
	"github.com/triggers-dev/triggers/constructs/golambda"
	"github.com/triggers-dev/triggers/constructs/internal/cdkutil"
	"github.com/triggers-dev/triggers/constructs/triggersapi"
	"github.com/triggers-dev/triggers/contract"
)

// Services of TriggersMonitoring: each gets one composite alarm, the only
// alarms that notify the alarm topic (see NewTriggersMonitoring).
const (
	// ServiceTable is the events table (throttles, latency, system errors,
	// capacity).
	ServiceTable = "Table"
	// ServiceFunctions is the API, authorizer, stream consumer and webhook
	// functions (errors, throttles, duration, concurrency, iterator age).
	ServiceFunctions = "Functions"
	// ServiceApi is the API Gateway stage and the runtime's query latency.
	ServiceApi = "Api"
	// ServiceQueues is the delivery queue and the dead-letter queues
	// (webhook retries' included).
	ServiceQueues = "Queues"
)

// Services returns the services in the order their composite alarms are
// made. It returns a new slice each call.
func Services() []string { return slices.Clone(services) }

var services = []string{ServiceTable, ServiceFunctions, ServiceApi, ServiceQueues}

// MetricAuthFailures is the metric that the access-log metric filter
// publishes in the runtime's namespace: one per API Gateway response with
// status 401 or 403 (authorizer, WAF or function). The 4XX alarm leaves
// these out; the dashboard graphs them.
const MetricAuthFailures = "AuthFailures"

// Operations returns the operations the runtime calls on the events table
// (every method of the store's DynamoDB client, internal/store.API): the
// inbox page's BatchGetItem and an unparked attempt's DeleteItem among
// them. Each gets latency and error metrics. It returns a new slice each
// call.
func Operations() []string { return slices.Clone(operations) }

var operations = []string{"PutItem", "TransactWriteItems", "GetItem", "Query", "UpdateItem", "BatchGetItem", "DeleteItem"}

// TriggersMonitoring is the dashboard, alarms and saved queries of one
// Triggers environment.
//
// Alarms, by id (see Alarm; <fn> is ApiFunction, AuthorizerFunction,
// ConsumerFunction and, with webhook delivery, WebhookFunction; <GSI> each
// global secondary index):
//
//	Table:     ReadThrottleEvents, WriteThrottleEvents,
//	           <GSI>ReadThrottleEvents, <GSI>WriteThrottleEvents,
//	           PutItemLatency (<operation>Latency for each operation of
//	           EventsTableThresholds.LatencyMs), SystemErrors,
//	           ReadCapacity, WriteCapacity, <GSI>ReadCapacity,
//	           <GSI>WriteCapacity (the last four: provisioned billing only)
//	Functions: <fn>Errors, <fn>Throttles, <fn>Duration, <fn>Concurrency,
//	           IteratorAge
//	Api:       Api5xxRate, Api4xxRate, ApiLatency, InboxLatency,
//	           ApiTrafficDrop (anomaly detection: requests below the band
//	           expected for the hour and weekday), AuthorizerDenialRate
//	           (share of requests refused 401/403), and the API-keys
//	           table's: ApiKeysReadThrottleEvents, ApiKeysWriteThrottleEvents,
//	           ApiKeys<GSI>ReadThrottleEvents, ApiKeys<GSI>WriteThrottleEvents,
//	           ApiKeysSystemErrors (and capacity and latency as for the
//	           events table; construct ids without "ApiKeys", under the
//	           construct ApiKeysTable)
//	Queues:    DeliveryQueueAge, DeliveryDlqNotEmpty, StreamFailuresNotEmpty,
//	           WebhookRetryDlqNotEmpty (with webhook delivery)
//
// and one composite alarm per service (see Composite): TableComposite,
// FunctionsComposite, ApiComposite, QueuesComposite. All of these are of
// severity SeverityPage. The alarms of severity SeverityTicket notify
// TicketTopic themselves (see Severity):
//
//	BackupJobsFailed            the events table's AWS Backup vault (when
//	                            it has a plan); ApiKeysBackupJobsFailed for
//	                            the API-keys table's, when another vault
//	WafBlockedRequests          the API's rate-limit web ACL (when it has one)
//
// The events table's section and alarms are TableMonitoring's (the same
// code, ids, metrics, descriptions and runbook sections) with these
// differences: the period (5 minutes), the windows (throttling and system
// errors in one period, seed 001's "any throttling"; latency and capacity
// for 3 periods), the latency alarm (the p99 of PutItem, seed 001's
// target, rather than the average of every operation), no alarm actions
// (the composite alarm notifies) and the events table's operations
// (Operations()).
type TriggersMonitoring struct {
	constructs.Construct
	// Dashboard is the CloudWatch dashboard.
	Dashboard awscloudwatch.Dashboard
	// AlarmTopic receives the composite alarms' notifications.
	AlarmTopic awssns.ITopic
	// TicketTopic receives the notifications of the alarms of severity
	// SeverityTicket: the one given in props, or one made with the first
	// such alarm (nil when there is none).
	TicketTopic awssns.ITopic
	// Alarms by id (see the type's documentation). Those of severity
	// SeverityPage have no actions: their service's composite alarm
	// notifies. Those of severity SeverityTicket notify TicketTopic.
	Alarms map[string]awscloudwatch.Alarm
	// Severities are the alarms' severities, by id.
	Severities map[string]Severity
	// Composites are the composite alarms by service (ServiceTable, ...):
	// each is in ALARM while any alarm of its service is, and is the only
	// alarm that notifies AlarmTopic (on ALARM and on OK).
	Composites map[string]awscloudwatch.CompositeAlarm
	// Queries are the saved Logs Insights queries, by id.
	Queries map[string]awslogs.QueryDefinition

	props  TriggersMonitoringProps
	th     Thresholds
	period awscdk.Duration
	// webhookLogs is the webhook function's log group, with webhook
	// delivery (for the saved circuits query).
	webhookLogs []interfacesawslogs.ILogGroupRef
	runbook     string
	// service is the service of the alarms being made; members lists each
	// service's alarm ids in the order they were made.
	service string
	members map[string][]string
	// tickets lists the ticket alarms' ids in the order they were made.
	tickets []string
	// apiKeys holds the API-keys table's alarms (see apiKeysScope).
	apiKeys constructs.Construct
}

// Alarm returns the alarm with id, or nil.
func (m *TriggersMonitoring) Alarm(id string) awscloudwatch.Alarm { return m.Alarms[id] }

// Composite returns the composite alarm of service (ServiceTable, ...), or
// nil when nothing of that service is monitored.
func (m *TriggersMonitoring) Composite(service string) awscloudwatch.CompositeAlarm {
	return m.Composites[service]
}

// NewTriggersMonitoring creates the dashboard, alarms and queries.
//
// Paging: every alarm belongs to one service, and each service has one
// composite alarm (AlarmRule: any of its alarms in ALARM) that notifies
// AlarmTopic on ALARM and on OK. The member alarms have no actions, so an
// incident that trips five alarms of one service pages once; the
// notification's state reason names the members that triggered it, and
// the dashboard's alarm status widget shows them all.
func NewTriggersMonitoring(scope constructs.Construct, id *string, props *TriggersMonitoringProps) *TriggersMonitoring {
	if err := ValidateProps(props); err != nil {
		panic(fmt.Errorf("monitoring %q: invalid props:\n%w", cdkutil.Deref(id), err))
	}
	m := &TriggersMonitoring{
		props: *props, Alarms: map[string]awscloudwatch.Alarm{}, Composites: map[string]awscloudwatch.CompositeAlarm{},
		Queries: map[string]awslogs.QueryDefinition{}, members: map[string][]string{}, Severities: map[string]Severity{},
	}
	if m.props.EventsTable == nil {
		m.props.EventsTable = props.Api.EventsTable()
	}
	m.props.Billing = billingOf(m.props.EventsTable, m.props.Billing)
	m.th = props.Thresholds.withDefaults()
	m.period = props.Period
	if m.period == nil {
		m.period = awscdk.Duration_Minutes(jsii.Number(5))
	}
	m.runbook = props.RunbookURL
	if m.runbook == "" {
		m.runbook = DefaultRunbookURL
	}
	constructs.NewConstruct_Override(m, scope, id)

	m.AlarmTopic = props.AlarmTopic
	if m.AlarmTopic == nil {
		m.AlarmTopic = awssns.NewTopic(m, jsii.String("AlarmTopic"), &awssns.TopicProps{
			DisplayName: jsii.String("Triggers alarms"),
			EnforceSSL:  jsii.Bool(true),
			MasterKey:   awskms.Alias_FromAliasName(m, jsii.String("SnsKey"), jsii.String("alias/aws/sns")),
		})
	}
	m.TicketTopic = props.TicketTopic
	dp := &awscloudwatch.DashboardProps{DefaultInterval: awscdk.Duration_Hours(jsii.Number(24))}
	if props.DashboardName != "" {
		dp.DashboardName = jsii.String(props.DashboardName)
	}
	m.Dashboard = awscloudwatch.NewDashboard(m, jsii.String("Dashboard"), dp)
	// AWS::CloudWatch::Dashboard takes Tags (aws-cdk-lib's CfnDashboard
	// renders them from the CloudFormation registry), but cfn-lint 1.51's
	// bundled schema predates them and reports E3002. Scope the ignore to
	// this resource only.
	m.Dashboard.Node().DefaultChild().(awscdk.CfnResource).AddMetadata(jsii.String("cfn-lint"), map[string]any{
		"config": map[string]any{"ignore_checks": []string{"E3002"}},
	})

	m.service = ServiceTable
	m.tableSection()
	if props.Api != nil {
		m.service = ServiceFunctions
		m.functionsSection()
		m.service = ServiceApi
		m.apiSection()
		m.trafficSection()
		m.apiKeysTableSection()
		m.wafSection()
		m.service = ServiceQueues
		m.queuesSection()
		m.service = ServiceApi // the query-latency alarm
		m.runtimeSection()
		m.queries()
	}
	if props.Archive != nil {
		m.archiveSection(props.Archive, "")
	}
	for _, name := range slices.Sorted(maps.Keys(props.MoreArchives)) {
		m.archiveSection(props.MoreArchives[name], name)
	}
	m.backupSection()
	m.composites()
	return m
}

// archiveSection graphs the archive of expired events and alarms on its
// function's errors and iterator age (Functions) and on its failure queue
// (Queues). name ("" for Archive) names a MoreArchives one in the heading
// and starts its alarm ids.
func (m *TriggersMonitoring) archiveSection(a *archive.ExpiredEventsArchive, name string) {
	fn := a.ArchiverFunction().Function
	heading, which := "## Archive of expired events", ""
	if name != "" {
		heading, which = heading+" ("+name+")", " ("+name+")"
	}
	m.Dashboard.AddWidgets(header(heading))
	errs := fn.MetricErrors(m.opts("Sum", "Errors"))
	iterAge := fn.Metric(jsii.String("IteratorAge"), m.opts("Maximum", "Iterator age (ms)"))
	// Messages a replay holds (triggers-replay archive -from-queue) are in
	// flight, not visible: the alarm counts both, so that it does not
	// clear while a run holds them, or after one died holding them.
	q := a.FailureQueue()
	visible := q.MetricApproximateNumberOfMessagesVisible(m.opts("Maximum", "Visible"))
	inFlight := q.MetricApproximateNumberOfMessagesNotVisible(m.opts("Maximum", "In flight (held by a replay)"))
	failures := awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression:   jsii.String("visible + inflight"),
		UsingMetrics: &map[string]awscloudwatch.IMetric{"visible": visible, "inflight": inFlight},
		Label:        jsii.String("Archive failures (visible + in flight)"), Period: m.period,
	})
	m.Dashboard.AddWidgets(
		graph("Archiver"+which+": invocations, errors", []awscloudwatch.IMetric{fn.MetricInvocations(m.opts("Sum", "Invocations")), errs}, nil, 8),
		graph("Archiver"+which+": iterator age (ms)", []awscloudwatch.IMetric{iterAge}, nil, 8),
		graph("Archive failure queue"+which, []awscloudwatch.IMetric{visible, inFlight}, nil, 8),
	)
	retries := retryText(a.RetryAttempts(), a.MaxRecordAge())
	m.service = ServiceFunctions
	m.alarm(name+"ArchiverErrors", fmt.Sprintf("The archiver function"+which+" failed: expired events are not being written to the archive bucket (the stream mapping retries them %s).", retries), "archive-of-expired-events",
		errs, m.th.LambdaErrors, 1, 1, gte, notBrch)
	m.alarm(name+"ArchiverIteratorAge", fmt.Sprintf("The archiver's"+which+" oldest unprocessed stream record stayed older than %v s for 3 periods: it is failing or too slow. The mapping retries %s, then gives them up to the failure queue, to be replayed before the stream drops them at 24 h.", m.th.ArchiveIteratorAgeSeconds, retries), "archive-of-expired-events",
		iterAge, m.th.ArchiveIteratorAgeSeconds*1000, 3, 3, gt, notBrch)
	m.service = ServiceQueues
	// A gap must not turn it OK while messages wait (as the other DLQs).
	m.alarm(name+"ArchiveFailuresNotEmpty", "The archive's"+which+" failure queue has messages, visible or held by a replay: stream records given up on (replay them with triggers-replay archive before they are 24 h old, or they are lost to the archive) or records parked as never archivable.", "archive-failures-not-empty",
		failures, 1, 1, 1, gte, ignore)
}

// retryText says how long the archive's mapping retries a failing batch:
// until its records are the maximum age old, or a bounded number of times
// (archive.ExpiredEventsArchive.RetryAttempts).
func retryText(retries float64, maxAge awscdk.Duration) string {
	age := ageText(maxAge)
	switch {
	case *awscdk.Token_IsUnresolved(jsii.Number(retries)):
		// A token's number is negative: not the unlimited -1.
		return fmt.Sprintf("as many times as Stream.RetryAttempts says (a deploy-time value), or until they are %s old if sooner", age)
	case retries < 0:
		return fmt.Sprintf("until they are %s old", age)
	}
	return fmt.Sprintf("%v times at most (Stream.RetryAttempts), or until they are %s old if sooner", retries, age)
}

// ageText writes a duration as hours ("20 h"), or as given when it is a
// token.
func ageText(d awscdk.Duration) string {
	if d == nil || cdkutil.IsDurationToken(d) {
		return "the maximum record age"
	}
	h := *d.ToHours(&awscdk.TimeConversionOptions{Integral: jsii.Bool(false)})
	if h >= 1 {
		return fmt.Sprintf("%v h", h)
	}
	return fmt.Sprintf("%v s", *d.ToSeconds(&awscdk.TimeConversionOptions{Integral: jsii.Bool(false)}))
}

// composites makes one composite alarm per service that has alarms, the
// only alarms with actions, and adds the alarm status widget.
func (m *TriggersMonitoring) composites() {
	action := awscloudwatchactions.NewSnsAction(m.AlarmTopic)
	var status []interfacesawscloudwatch.IAlarmRef
	for _, svc := range services {
		ids := m.members[svc]
		if len(ids) == 0 {
			continue
		}
		rules := make([]awscloudwatch.IAlarmRule, 0, len(ids))
		for _, id := range ids {
			rules = append(rules, awscloudwatch.AlarmRule_FromAlarm(m.Alarms[id], awscloudwatch.AlarmState_ALARM))
		}
		c := awscloudwatch.NewCompositeAlarm(m, jsii.String(svc+"Composite"), &awscloudwatch.CompositeAlarmProps{
			AlarmRule: awscloudwatch.AlarmRule_AnyOf(rules...),
			AlarmDescription: jsii.String(fmt.Sprintf("%s: at least one of these alarms is in ALARM: %s. The state reason names the ones that triggered; each links to its own runbook section. Runbook: %s#%s",
				serviceTitles[svc], strings.Join(ids, ", "), m.runbook, RunbookComposite)),
		})
		c.AddAlarmAction(action)
		c.AddOkAction(action)
		m.Composites[svc] = c
		status = append(status, c)
	}
	for _, svc := range services {
		for _, id := range m.members[svc] {
			status = append(status, m.Alarms[id])
		}
	}
	m.Dashboard.AddWidgets(header("## Alarms"), awscloudwatch.NewAlarmStatusWidget(&awscloudwatch.AlarmStatusWidgetProps{
		Title: jsii.String("Composite alarms (these page) and their members"), Alarms: &status, Width: jsii.Number(24),
	}))
	if len(m.tickets) > 0 {
		m.Dashboard.AddWidgets(m.ticketStatus())
	}
}

// RunbookComposite is the runbook anchor of the composite alarms.
const RunbookComposite = "composite-alarms-one-page-per-service"

var serviceTitles = map[string]string{
	ServiceTable: "Triggers events table", ServiceFunctions: "Triggers Lambda functions",
	ServiceApi: "Triggers API", ServiceQueues: "Triggers delivery queues",
}

func (m *TriggersMonitoring) opts(stat, label string) *awscloudwatch.MetricOptions {
	return &awscloudwatch.MetricOptions{Statistic: jsii.String(stat), Label: jsii.String(label), Period: m.period}
}

func header(md string) awscloudwatch.IWidget {
	return awscloudwatch.NewTextWidget(&awscloudwatch.TextWidgetProps{Markdown: jsii.String(md), Width: jsii.Number(24), Height: jsii.Number(1)})
}

func graph(title string, left []awscloudwatch.IMetric, right []awscloudwatch.IMetric, width float64) awscloudwatch.IWidget {
	p := &awscloudwatch.GraphWidgetProps{
		Title: jsii.String(title), Left: &left, Width: jsii.Number(width), Height: jsii.Number(6),
		LeftYAxis: &awscloudwatch.YAxisProps{Min: jsii.Number(0)},
	}
	if len(right) > 0 {
		p.Right = &right
		p.RightYAxis = &awscloudwatch.YAxisProps{Min: jsii.Number(0)}
	}
	return awscloudwatch.NewGraphWidget(p)
}

// alarm creates an alarm of severity SeverityPage in the current service,
// with a description that links to the runbook section anchor. It has no
// actions: the service's composite alarm notifies.
func (m *TriggersMonitoring) alarm(id, meaning, anchor string, metric awscloudwatch.IMetric, threshold, evals, datapoints float64, cmp awscloudwatch.ComparisonOperator, missing awscloudwatch.TreatMissingData) awscloudwatch.Alarm {
	a := newAlarm(m, id, meaning+" Runbook: "+m.runbook+"#"+anchor, metric, threshold, evals, datapoints, cmp, missing)
	m.member(id, a)
	return a
}

// newAlarm is every alarm of this package (alarm, ticket,
// tableSection.alarm): description as given, and the settings that follow
// from the metric (lowSampleCount) in one place.
func newAlarm(scope constructs.Construct, id, description string, metric awscloudwatch.IMetric, threshold, evals, datapoints float64, cmp awscloudwatch.ComparisonOperator, missing awscloudwatch.TreatMissingData) awscloudwatch.Alarm {
	return awscloudwatch.NewAlarm(scope, jsii.String(id), &awscloudwatch.AlarmProps{
		Metric:                           metric,
		Threshold:                        jsii.Number(threshold),
		EvaluationPeriods:                jsii.Number(evals),
		DatapointsToAlarm:                jsii.Number(datapoints),
		ComparisonOperator:               cmp,
		TreatMissingData:                 missing,
		EvaluateLowSampleCountPercentile: lowSampleCount(metric),
		AlarmDescription:                 jsii.String(description),
	})
}

// lowSampleCount is an alarm's EvaluateLowSampleCountPercentile: "ignore"
// when metric is a percentile (p95, p99, ...), so a period with too few
// samples to be significant keeps the alarm's state; nil (CloudWatch's
// evaluate) otherwise. A quiet deployment (a staging API with a request
// every few minutes, each a cold start) otherwise paged on the p99 of a
// handful of slow first requests.
func lowSampleCount(metric awscloudwatch.IMetric) *string {
	m, ok := metric.(awscloudwatch.Metric)
	if !ok {
		return nil
	}
	stat := m.Statistic()
	if stat == nil || len(*stat) < 2 || (*stat)[0] != 'p' || (*stat)[1] < '0' || (*stat)[1] > '9' {
		return nil
	}
	return jsii.String("ignore")
}

const (
	gte     = awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD
	gt      = awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD
	notBrch = awscloudwatch.TreatMissingData_NOT_BREACHING
	// ignore keeps the alarm's state while data is missing.
	ignore = awscloudwatch.TreatMissingData_IGNORE
)

// tableSection adds the events table's section and alarms (service
// Table), built as TableMonitoring builds any table's: the same widgets,
// alarm ids, metrics and runbook sections, with TriggersMonitoring's
// period, thresholds (EventsTableThresholds) and windows, and a latency
// alarm on the p99 of the operations of EventsTableThresholds.LatencyMs
// (PutItem by default, seed 001's target).
func (m *TriggersMonitoring) tableSection() {
	s := &tableSection{
		scope: m, dashboard: m.Dashboard, table: m.props.EventsTable,
		heading:     "Events table (DynamoDB)",
		provisioned: m.props.Billing == dynamotable.Provisioned,
		ops:         operations, th: eventsTableThresholds(&m.props), latencyStat: "p99",
		windows: eventsTableWindows, period: m.period, runbook: m.runbook,
		insights: m.props.ContributorInsights, ruleNames: m.props.ContributorInsightsRuleNames,
		replicas: replicaRegionsOf(m.props.EventsTable, nil),
		add: func(id string, a awscloudwatch.Alarm) {
			m.member(id, a)
		},
	}
	s.build()
}

func (m *TriggersMonitoring) functionsSection() {
	api := m.props.Api
	m.Dashboard.AddWidgets(header("## Lambda functions"))
	fns := []struct {
		id, name string
		f        golambda.IGoFunction
	}{{"ApiFunction", "API", api.ApiFunction()}, {"AuthorizerFunction", "Authorizer", api.AuthorizerFunction()}, {"ConsumerFunction", "Stream consumer", api.ConsumerFunction()}}
	if w := api.Webhooks(); w != nil {
		fns = append(fns, struct {
			id, name string
			f        golambda.IGoFunction
		}{"WebhookFunction", "Webhook", w.WebhookFunction()})
	}
	for _, fn := range fns {
		f := fn.f.Lambda()
		right := []awscloudwatch.IMetric{f.Metric(jsii.String("ConcurrentExecutions"), m.opts("Maximum", "Concurrent executions"))}
		if fn.f == api.ConsumerFunction() {
			right = append(right, f.Metric(jsii.String("IteratorAge"), m.opts("Maximum", "Iterator age (ms)")))
		}
		m.Dashboard.AddWidgets(
			graph(fn.name+": invocations, errors, throttles", []awscloudwatch.IMetric{
				f.MetricInvocations(m.opts("Sum", "Invocations")),
				f.MetricErrors(m.opts("Sum", "Errors")),
				f.MetricThrottles(m.opts("Sum", "Throttles")),
			}, nil, 8),
			graph(fn.name+": duration (ms)", []awscloudwatch.IMetric{
				f.MetricDuration(m.opts("p50", "p50")),
				f.MetricDuration(m.opts("p95", "p95")),
				f.MetricDuration(m.opts("p99", "p99")),
			}, nil, 8),
			graph(fn.name+": concurrency"+map[bool]string{true: ", iterator age", false: ""}[fn.f == api.ConsumerFunction()], right, nil, 8),
		)
		name := strings.ToLower(fn.name)
		// Lambda publishes Errors, Throttles, Duration and
		// ConcurrentExecutions only while the function is invoked: no data
		// is no traffic, not a failure, so missing data is not breaching.
		m.alarm(fn.id+"Errors", fmt.Sprintf("The %s function failed invocations (errors, timeouts, crashes).", name), "lambda-errors",
			f.MetricErrors(m.opts("Sum", "Errors")), m.th.LambdaErrors, 1, 1, gte, notBrch)
		m.alarm(fn.id+"Throttles", fmt.Sprintf("The %s function was throttled (Throttles >= %v in 2 of 3 periods): invocations were refused for lack of concurrency.", name, m.th.LambdaThrottles), "lambda-throttles",
			f.MetricThrottles(m.opts("Sum", "Throttles")), m.th.LambdaThrottles, 3, 2, gte, notBrch)
		timeoutMs := lambdaDefaultTimeoutMs
		if to := fn.f.Timeout(); to != nil && !*to.IsUnresolved() {
			timeoutMs = *to.ToMilliseconds(nil)
		}
		limitMs := timeoutMs * m.th.DurationPercentOfTimeout / 100
		m.alarm(fn.id+"Duration", fmt.Sprintf("The %s function's p99 duration stayed above %v ms (%v%% of its %v s timeout) for 3 periods: invocations are close to timing out.", name, limitMs, m.th.DurationPercentOfTimeout, timeoutMs/1000), "lambda-duration-near-timeout",
			f.MetricDuration(m.opts("p99", "Duration p99")), limitMs, 3, 3, gt, notBrch)
		limit, what := m.concurrencyLimit(fn.f)
		m.alarm(fn.id+"Concurrency", fmt.Sprintf("The %s function's concurrent executions stayed above %v%% of %s (%v) for 3 periods: throttling is next.", name, m.th.ConcurrencyPercent, what, limit), "lambda-concurrency-near-limit",
			f.Metric(jsii.String("ConcurrentExecutions"), m.opts("Maximum", "Concurrent executions")), limit*m.th.ConcurrencyPercent/100, 3, 3, gt, notBrch)
	}
	// IteratorAge is published only while the event source mapping reads
	// records: no data is an idle stream, so missing data is not breaching.
	m.alarm("IteratorAge", fmt.Sprintf("The stream consumer fell behind: its oldest unprocessed stream record is older than %v s, so deliveries are late.", m.th.IteratorAgeSeconds), "stream-iterator-age",
		api.ConsumerFunction().Lambda().Metric(jsii.String("IteratorAge"), m.opts("Maximum", "Iterator age (ms)")), m.th.IteratorAgeSeconds*1000, 2, 2, gt, notBrch)
}

// lambdaDefaultTimeoutMs is Lambda's timeout for a function that sets
// none (golambda always sets one).
const lambdaDefaultTimeoutMs float64 = 3000

// concurrencyLimit is the function's reserved concurrency when it has one
// (read from the function), else Thresholds.AccountConcurrencyLimit.
func (m *TriggersMonitoring) concurrencyLimit(f golambda.IGoFunction) (float64, string) {
	if r := f.ReservedConcurrency(); r != nil && !*awscdk.Token_IsUnresolved(r) && *r > 0 {
		return *r, "its reserved concurrency"
	}
	return m.th.AccountConcurrencyLimit, "the account's concurrency limit"
}

func (m *TriggersMonitoring) apiSection() {
	api := m.props.Api
	m.Dashboard.AddWidgets(header("## API Gateway"))
	count := api.MetricCount(m.opts("Sum", "Requests"))
	e5 := api.MetricServerError(m.opts("Sum", "5XX"))
	e4 := api.MetricClientError(m.opts("Sum", "4XX"))
	// 401 and 403 responses, counted from the stage's access log: a flood
	// of them (a client with a revoked key, a scanner) is graphed but never
	// pages, so the 4XX alarm subtracts them.
	awslogs.NewMetricFilter(m, jsii.String("AuthFailuresFilter"), &awslogs.MetricFilterProps{
		LogGroup:        m.props.Api.AccessLogs(),
		FilterPattern:   awslogs.FilterPattern_Literal(jsii.String(`{ ($.status = "401") || ($.status = "403") }`)),
		MetricNamespace: jsii.String(m.namespace()),
		MetricName:      jsii.String(MetricAuthFailures),
		MetricValue:     jsii.String("1"),
		DefaultValue:    jsii.Number(0),
		Unit:            awscloudwatch.Unit_COUNT,
	})
	auth := awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace: jsii.String(m.namespace()), MetricName: jsii.String(MetricAuthFailures), Statistic: jsii.String("Sum"),
		Period: m.period, Label: jsii.String("401/403 (auth failures)"),
	})
	clientErrors := func(label string) awscloudwatch.IMetric {
		return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
			Expression:   jsii.String("e4 - FILL(auth, 0)"),
			UsingMetrics: &map[string]awscloudwatch.IMetric{"e4": e4, "auth": auth},
			Label:        jsii.String(label), Period: m.period,
		})
	}
	m.Dashboard.AddWidgets(
		graph("Requests and errors", []awscloudwatch.IMetric{count}, []awscloudwatch.IMetric{e4, e5}, 8),
		graph("4XX: client errors and auth failures", []awscloudwatch.IMetric{clientErrors("4XX without 401/403"), auth}, nil, 8),
		graph("Latency (ms)", []awscloudwatch.IMetric{
			m.props.Api.MetricLatency(m.opts("p95", "Latency p95")),
			m.props.Api.MetricLatency(m.opts("p99", "Latency p99")),
		}, nil, 8),
		graph("Integration latency (ms)", []awscloudwatch.IMetric{
			api.MetricIntegrationLatency(m.opts("p95", "Integration latency p95")),
			api.MetricIntegrationLatency(m.opts("p99", "Integration latency p99")),
		}, nil, 8),
	)
	rate := awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression:   jsii.String("IF(requests > 0, 100 * errors / requests, 0)"),
		UsingMetrics: &map[string]awscloudwatch.IMetric{"errors": e5, "requests": count},
		Label:        jsii.String("5XX rate (%)"), Period: m.period,
	})
	// API Gateway publishes Count, 4XXError, 5XXError and Latency only
	// while the stage serves requests, and the rates are 0 without
	// requests: no data is no traffic, so missing data is not breaching.
	m.alarm("Api5xxRate", fmt.Sprintf("More than %v%% of API requests failed with 5XX.", m.th.Api5xxPercent), "api-5xx-rate",
		rate, m.th.Api5xxPercent, 3, 2, gt, notBrch)
	rate4 := awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression:   jsii.String("IF(requests > 0, 100 * (e4 - FILL(auth, 0)) / requests, 0)"),
		UsingMetrics: &map[string]awscloudwatch.IMetric{"e4": e4, "auth": auth, "requests": count},
		Label:        jsii.String("4XX rate without 401/403 (%)"), Period: m.period,
	})
	m.alarm("Api4xxRate", fmt.Sprintf("More than %v%% of API requests failed with a 4XX other than 401/403 for 3 periods: a client release or an API change is breaking requests.", m.th.Api4xxPercent), "api-4xx-rate",
		rate4, m.th.Api4xxPercent, 3, 3, gt, notBrch)
	m.alarm("ApiLatency", fmt.Sprintf("The API's p99 latency stayed above %v ms.", m.th.ApiLatencyP99Ms), "api-p99-latency",
		m.props.Api.MetricLatency(m.opts("p99", "Latency p99")), m.th.ApiLatencyP99Ms, 3, 3, gt, notBrch)
}

func (m *TriggersMonitoring) queuesSection() {
	api := m.props.Api
	w := api.Webhooks()
	m.Dashboard.AddWidgets(header("## Delivery queues (SQS)"))
	depth := func(q awssqs.IQueue, label string) awscloudwatch.IMetric {
		return q.MetricApproximateNumberOfMessagesVisible(m.opts("Maximum", label))
	}
	dlqs := []awscloudwatch.IMetric{depth(api.DeliveryDeadLetterQueue(), "Delivery DLQ"), depth(api.StreamFailureQueue(), "Stream failures")}
	if w != nil {
		dlqs = append(dlqs, depth(w.RetryDeadLetterQueue(), "Webhook retry DLQ"))
	}
	m.Dashboard.AddWidgets(
		graph("Delivery queue depth", []awscloudwatch.IMetric{depth(api.DeliveryQueue(), "Messages visible")}, nil, 8),
		graph("Delivery queue: oldest message age (s)", []awscloudwatch.IMetric{
			api.DeliveryQueue().MetricApproximateAgeOfOldestMessage(m.opts("Maximum", "Oldest message age")),
		}, nil, 8),
		graph("Dead-letter queues", dlqs, nil, 8),
	)
	if w != nil {
		m.Dashboard.AddWidgets(graph("Webhook retry queue", []awscloudwatch.IMetric{
			depth(w.RetryQueue(), "Messages visible"),
			w.RetryQueue().MetricApproximateNumberOfMessagesDelayed(m.opts("Maximum", "Messages delayed (waiting for their retry)")),
		}, nil, 24))
	}
	// SQS may stop publishing the metrics of an idle queue: a gap must not
	// turn a queue alarm OK while messages wait, so missing data keeps the
	// state (for the delivery queue's age and both dead-letter queues).
	m.alarm("DeliveryQueueAge", fmt.Sprintf("The delivery queue's oldest message stayed older than %v s for 3 periods: its consumer is down or too slow, so deliveries are late.", m.th.DeliveryQueueAgeSeconds), "delivery-queue-age",
		api.DeliveryQueue().MetricApproximateAgeOfOldestMessage(m.opts("Maximum", "Oldest message age")), m.th.DeliveryQueueAgeSeconds, 3, 3, gt, ignore)
	m.alarm("DeliveryDlqNotEmpty", "Delivery messages were received too many times and moved to the dead-letter queue: a downstream consumer keeps failing on them.", "delivery-dlq-not-empty",
		depth(api.DeliveryDeadLetterQueue(), "Delivery DLQ"), 1, 1, 1, gte, ignore)
	m.alarm("StreamFailuresNotEmpty", "Stream records reached the stream-failures queue: malformed records the consumer parked, or batches Lambda discarded once their records passed the maximum record age (6 h by default). Those events were not delivered.", "stream-failures-not-empty",
		depth(api.StreamFailureQueue(), "Stream failures"), 1, 1, 1, gte, ignore)
	if w != nil {
		m.webhookAlarms(w)
		// Same reason: a gap must not turn it OK while messages wait.
		m.alarm("WebhookRetryDlqNotEmpty", "Webhook retry or redelivery tasks were received too many times and moved to the retry dead-letter queue: the webhook function keeps failing on them (not the targets: their failures are retried on the schedule).", "webhook-retry-dlq-not-empty",
			depth(w.RetryDeadLetterQueue(), "Webhook retry DLQ"), 1, 1, 1, gte, ignore)
	}
}

// webhookAlarms graphs webhook attempts by outcome and alarms on the
// failed share and on disabled subscriptions (the webhook function's EMF
// metrics). Both treat missing data as not breaching: the function
// publishes only when it attempts or disables something.
func (m *TriggersMonitoring) webhookAlarms(w triggersapi.IWebhookDelivery) {
	outcome := func(o string) awscloudwatch.IMetric {
		return w.MetricWebhookAttempts(o, m.opts("Sum", o))
	}
	delivered, failed, gone := outcome("delivered"), outcome("failed"), outcome("gone")
	disabled := w.MetricSubscriptionsDisabled(m.opts("Sum", "Subscriptions disabled"))
	m.Dashboard.AddWidgets(
		graph("Webhook attempts by outcome", []awscloudwatch.IMetric{delivered, failed, gone}, nil, 16),
		graph("Subscriptions disabled", []awscloudwatch.IMetric{disabled}, nil, 8),
	)
	// Judged only over WebhookFailureMinAttempts attempts or more (found by
	// review: one dead endpoint on a quiet deployment was 100%).
	share := awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String(fmt.Sprintf("IF(FILL(d, 0) + FILL(f, 0) + FILL(g, 0) >= %v, 100 * FILL(f, 0) / (FILL(d, 0) + FILL(f, 0) + FILL(g, 0)), 0)",
			m.th.WebhookFailureMinAttempts)),
		UsingMetrics: &map[string]awscloudwatch.IMetric{"d": delivered, "f": failed, "g": gone},
		Label:        jsii.String("Failed webhook attempts (%)"),
		Period:       m.period,
	})
	m.alarm("WebhookFailures", fmt.Sprintf("More than %v %% of webhook attempts failed for 3 periods (of %v attempts a period or more): every target failing at once points at our side (egress, DNS, TLS), not at one tenant's endpoint.", m.th.WebhookFailurePercent, m.th.WebhookFailureMinAttempts), "webhook-failures",
		share, m.th.WebhookFailurePercent, 3, 3, gt, notBrch)
	m.alarm("SubscriptionsDisabled", "A webhook subscription was disabled after failing without a success for the deployment's disable-after period: its tenant receives nothing until it is re-created.", "subscriptions-disabled",
		disabled, 1, 1, 1, gte, notBrch)

	// Isolation: attempts put off by the endpoints' circuit breaker and
	// rate cap, circuits opened, and which tenants' endpoints they are
	// (the function's "circuit opened" log lines, grouped by tenant: no
	// metric per tenant).
	ns := w.MetricsNamespace()
	deferred := awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String(search(ns, contract.DimensionReason, contract.MetricWebhookDeferred, "Sum", m.period)),
		Label:      jsii.String("Deferred:"), Period: m.period,
	})
	opened := w.MetricCircuitsOpened(m.opts("Sum", "Circuits opened"))
	logs := []interfacesawslogs.ILogGroupRef{w.WebhookFunction().Logs()}
	byTenant := fmt.Sprintf(`%s = %q`, contract.LogFieldMsg, contract.LogMsgCircuitOpened)
	m.Dashboard.AddWidgets(
		graph("Webhook attempts deferred by reason", []awscloudwatch.IMetric{deferred}, nil, 8),
		graph("Endpoint circuits opened", []awscloudwatch.IMetric{opened}, nil, 8),
		awscloudwatch.NewLogQueryWidget(&awscloudwatch.LogQueryWidgetProps{
			Title:         jsii.String("Circuits opened by tenant"),
			LogGroupNames: &[]*string{w.WebhookFunction().Logs().LogGroupName()},
			QueryLines: jsii.Strings("fields "+contract.LogFieldTenant+", "+contract.LogFieldSubscriptionID,
				"filter "+byTenant,
				fmt.Sprintf("stats count(*) as opened, count_distinct(%s) as endpoints by %s", contract.LogFieldSubscriptionID, contract.LogFieldTenant),
				"sort opened desc", "limit 20"),
			View:  awscloudwatch.LogQueryVisualizationType_TABLE,
			Width: jsii.Number(8), Height: jsii.Number(6),
		}),
	)
	m.webhookLogs = logs
}

// search is the SEARCH expression of metric name in namespace ns with the
// one dimension dim (every value of it), as stat over period. The
// namespace is in double quotes: a metric schema needs a name holding a
// space or another character that is not a letter or digit quoted, and
// contract.ValidMetricsNamespace allows a space (found by review: "Triggers
// prod" left the by-reason and by-route graphs empty).
func search(ns, dim, name, stat string, period awscdk.Duration) string {
	return fmt.Sprintf(`SEARCH('{"%s",%s} MetricName="%s"', '%s', %d)`, ns, dim, name, stat, int(*period.ToSeconds(nil)))
}

func (m *TriggersMonitoring) namespace() string {
	if m.props.MetricsNamespace != "" {
		return m.props.MetricsNamespace
	}
	return m.props.Api.MetricsNamespace()
}

func (m *TriggersMonitoring) runtimeSection() {
	ns := m.namespace()
	m.Dashboard.AddWidgets(header("## Runtime (embedded metric format)"))
	ingested := awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace: jsii.String(ns), MetricName: jsii.String(contract.MetricEventsIngested), Statistic: jsii.String("Sum"),
		Period: m.period, Label: jsii.String("Events ingested"),
	})
	rejected := awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String(search(ns, contract.DimensionReason, contract.MetricEventsRejected, "Sum", m.period)),
		Label:      jsii.String("Rejected:"), Period: m.period,
	})
	m.Dashboard.AddWidgets(
		graph("Events ingested", []awscloudwatch.IMetric{ingested}, nil, 12),
		graph("Events rejected by reason", []awscloudwatch.IMetric{rejected}, nil, 12),
	)

	// Query latency (seed 001 AC2: inbox p95 < 50 ms), measured by the API
	// function per route (contract.MetricRequestLatency).
	inbox := contract.Route{Method: contract.MethodGet, Path: contract.PathInbox}.String()
	latency := func(stat string) awscloudwatch.IMetric {
		return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
			Namespace: jsii.String(ns), MetricName: jsii.String(contract.MetricRequestLatency), Statistic: jsii.String(stat),
			DimensionsMap: &map[string]*string{contract.DimensionRoute: jsii.String(inbox)},
			Period:        m.period, Label: jsii.String("Inbox " + stat),
		})
	}
	byRoute := awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String(search(ns, contract.DimensionRoute, contract.MetricRequestLatency, "p95", m.period)),
		Label:      jsii.String("p95"), Period: m.period,
	})
	inboxWidget := awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{
		Title: jsii.String("Inbox query latency (ms), GET /v1/inbox"), Width: jsii.Number(12), Height: jsii.Number(6),
		Left:            &[]awscloudwatch.IMetric{latency("p50"), latency("p95"), latency("p99")},
		LeftYAxis:       &awscloudwatch.YAxisProps{Min: jsii.Number(0)},
		LeftAnnotations: &[]*awscloudwatch.HorizontalAnnotation{{Value: jsii.Number(m.th.InboxLatencyP95Ms), Label: jsii.String("p95 target")}},
	})
	m.Dashboard.AddWidgets(inboxWidget, graph("Request latency p95 by route (ms)", []awscloudwatch.IMetric{byRoute}, nil, 12))
	// The API function writes RequestLatency only when the route is
	// called: no data is no inbox traffic, so missing data is not
	// breaching.
	m.alarm("InboxLatency", fmt.Sprintf("The inbox query's p95 latency (RequestLatency, route %s, measured in the API function) stayed above %v ms for 3 periods (seed 001 AC2).", inbox, m.th.InboxLatencyP95Ms), "inbox-query-latency",
		latency("p95"), m.th.InboxLatencyP95Ms, 3, 3, gt, notBrch)
}

// queryNames are the saved Logs Insights queries' names by construct id,
// each under "<DashboardName>/" (ValidateProps keeps the whole name within
// CloudWatch Logs' 255 characters).
var queryNames = map[string]string{
	"IngestLatencyQuery":    "ingest-latency-percentiles",
	"RouteLatencyQuery":     "latency-by-route",
	"ErrorsByCodeQuery":     "errors-by-code",
	"BusiestTenantsQuery":   "busiest-tenants",
	"CircuitsByTenantQuery": "webhook-circuits-by-tenant",
	"CorrelationIdQuery":    "one-correlation-id",
}

// Saved Logs Insights queries: the ones seed 001 asks to document.
func (m *TriggersMonitoring) queries() {
	api := m.props.Api
	prefix := m.props.DashboardName
	if prefix == "" {
		prefix = "triggers"
	}
	apiLogs := []interfacesawslogs.ILogGroupRef{api.ApiFunction().Logs()}
	all := []interfacesawslogs.ILogGroupRef{api.ApiFunction().Logs(), api.AuthorizerFunction().Logs(), api.ConsumerFunction().Logs()}
	// The fields are the API function's request log line (contract).
	const (
		msg, method, path, status, tenant = contract.LogFieldMsg, contract.LogFieldMethod, contract.LogFieldPath, contract.LogFieldStatus, contract.LogFieldTenant
		duration, code, corr              = contract.LogFieldDurationMs, contract.LogFieldErrorCode, contract.LogFieldCorrelationID
	)
	request := fmt.Sprintf(`%s = %q`, msg, contract.LogMsgRequest)
	def := func(id string, groups []interfacesawslogs.ILogGroupRef, q *awslogs.QueryStringProps) {
		name, ok := queryNames[id]
		if !ok {
			panic(fmt.Sprintf("monitoring: query %s has no name in queryNames", id))
		}
		m.Queries[id] = awslogs.NewQueryDefinition(m, jsii.String(id), &awslogs.QueryDefinitionProps{
			QueryDefinitionName: jsii.String(prefix + "/" + name),
			QueryString:         awslogs.NewQueryString(q),
			LogGroups:           &groups,
		})
	}
	def("IngestLatencyQuery", apiLogs, &awslogs.QueryStringProps{
		FilterStatements: jsii.Strings(fmt.Sprintf(`%s and %s = %q and %s like /^%s/`, request, method, contract.MethodPost, path, strings.ReplaceAll(contract.PathEvents, "/", `\/`))),
		StatsStatements:  jsii.Strings(fmt.Sprintf("pct(%[1]s, 50) as p50, pct(%[1]s, 95) as p95, pct(%[1]s, 99) as p99, count(*) as requests by bin(5m)", duration)),
	})
	def("RouteLatencyQuery", apiLogs, &awslogs.QueryStringProps{
		FilterStatements: jsii.Strings(fmt.Sprintf(`%s and ispresent(%s)`, request, contract.LogFieldRoute)),
		StatsStatements:  jsii.Strings(fmt.Sprintf("pct(%[1]s, 50) as p50, pct(%[1]s, 95) as p95, pct(%[1]s, 99) as p99, count(*) as requests by %[2]s", duration, contract.LogFieldRoute)),
		Sort:             jsii.String("p95 desc"),
	})
	def("ErrorsByCodeQuery", apiLogs, &awslogs.QueryStringProps{
		FilterStatements: jsii.Strings(fmt.Sprintf(`%s and ispresent(%s)`, request, code)),
		StatsStatements:  jsii.Strings(fmt.Sprintf("count(*) as errors by %s, %s", code, status)),
		Sort:             jsii.String("errors desc"),
	})
	def("BusiestTenantsQuery", apiLogs, &awslogs.QueryStringProps{
		FilterStatements: jsii.Strings(fmt.Sprintf(`%s and ispresent(%s) and %s != ""`, request, tenant, tenant)),
		StatsStatements:  jsii.Strings("count(*) as requests by " + tenant),
		Sort:             jsii.String("requests desc"),
		Limit:            jsii.Number(20),
	})
	if m.webhookLogs != nil {
		def("CircuitsByTenantQuery", m.webhookLogs, &awslogs.QueryStringProps{
			FilterStatements: jsii.Strings(fmt.Sprintf(`%s = %q`, msg, contract.LogMsgCircuitOpened)),
			StatsStatements:  jsii.Strings(fmt.Sprintf("count(*) as opened, count_distinct(%s) as endpoints by %s, bin(1h)", contract.LogFieldSubscriptionID, tenant)),
			Sort:             jsii.String("opened desc"),
		})
	}
	def("CorrelationIdQuery", all, &awslogs.QueryStringProps{
		Fields:           jsii.Strings("@timestamp", "@log", contract.LogFieldLevel, msg, contract.LogFieldRequestID, tenant, method, path, status, code, contract.LogFieldError),
		FilterStatements: jsii.Strings(corr + ` = "REPLACE-WITH-CORRELATION-ID" or @message like "REPLACE-WITH-CORRELATION-ID"`),
		Sort:             jsii.String("@timestamp asc"),
	})
}
