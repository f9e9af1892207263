package monitoring

import (
	"fmt"
	"slices"

	"github.com/aws/aws-cdk-go/awscdk/v2/awsbackup"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/interfaces/interfacesawscloudwatch"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/triggers-dev/triggers/constructs/dynamotable"
)

// Severity says whom an alarm of TriggersMonitoring wakes.
type Severity string

const (
	// SeverityPage alarms need someone now: clients are failing or about
	// to. They are members of their service's composite alarm, which
	// notifies AlarmTopic (the pager); they have no actions of their own.
	SeverityPage Severity = "page"
	// SeverityTicket alarms need someone within a working day: nothing
	// fails for clients yet (a backup missed, a client rate-limited). Each
	// notifies TicketTopic itself, on ALARM and on OK, and belongs to no
	// composite alarm; its description starts with "Ticket:".
	SeverityTicket Severity = "ticket"
)

// Runbook section anchors of the alarms on silent outages.
const (
	// RunbookTrafficDrop explains ApiTrafficDrop.
	RunbookTrafficDrop = "api-traffic-drop"
	// RunbookAuthorizerDenials explains AuthorizerDenialRate.
	RunbookAuthorizerDenials = "authorizer-denial-rate"
	// RunbookBackupJobsFailed explains BackupJobsFailed.
	RunbookBackupJobsFailed = "aws-backup-job-failures"
	// RunbookWafBlockedRequests explains WafBlockedRequests.
	RunbookWafBlockedRequests = "waf-blocked-requests"
)

// ApiKeysOperations returns the operations the runtime calls on the
// API-keys table (every method of internal/apikey.DB: the authorizer's
// GetItem; the key tool's PutItem, UpdateItem, Query, Scan and the
// TransactWriteItems that creates a key or reshards a tenant): their
// SystemErrors are summed, their latency graphed. It returns a new slice
// each call.
func ApiKeysOperations() []string { return slices.Clone(apiKeysOperations) }

var apiKeysOperations = []string{"GetItem", "PutItem", "UpdateItem", "Query", "Scan", "TransactWriteItems"}

// apiKeysScopeID is the construct under TriggersMonitoring holding the
// API-keys table's alarms, which have the same construct ids as the
// events table's (and so the same runbook sections).
const apiKeysScopeID = "ApiKeysTable"

// apiKeysPrefix starts the ids (in Alarms) of the API-keys table's alarms.
const apiKeysPrefix = "ApiKeys"

// Severity returns the severity of the alarm with id, or "" when there is
// no such alarm.
func (m *TriggersMonitoring) Severity(id string) Severity { return m.Severities[id] }

// ticket creates an alarm of severity SeverityTicket in scope (m when
// nil), with id as construct id and key as its id in Alarms: it notifies
// TicketTopic on ALARM and OK and belongs to no composite alarm.
func (m *TriggersMonitoring) ticket(scope constructs.Construct, id, key, meaning, anchor string, metric awscloudwatch.IMetric, threshold, evals, datapoints float64, cmp awscloudwatch.ComparisonOperator, missing awscloudwatch.TreatMissingData) awscloudwatch.Alarm {
	if scope == nil {
		scope = m
	}
	a := newAlarm(scope, id, "Ticket: "+meaning+" Runbook: "+m.runbook+"#"+anchor, metric, threshold, evals, datapoints, cmp, missing)
	if m.TicketTopic == nil {
		m.TicketTopic = awssns.NewTopic(m, jsii.String("TicketTopic"), &awssns.TopicProps{
			DisplayName: jsii.String("Triggers tickets"),
			EnforceSSL:  jsii.Bool(true),
			MasterKey:   awskms.Alias_FromAliasName(m, jsii.String("TicketSnsKey"), jsii.String("alias/aws/sns")),
		})
	}
	action := awscloudwatchactions.NewSnsAction(m.TicketTopic)
	a.AddAlarmAction(action)
	a.AddOkAction(action)
	m.Alarms[key] = a
	m.Severities[key] = SeverityTicket
	m.tickets = append(m.tickets, key)
	return a
}

// trafficSection graphs the API's traffic against its expected band and
// the share of requests refused 401/403, and adds the two page alarms
// that catch an outage no error alarm sees (service Api): ApiTrafficDrop
// and AuthorizerDenialRate.
func (m *TriggersMonitoring) trafficSection() {
	api := m.props.Api
	m.Dashboard.AddWidgets(header("## Traffic and authorization (silent outages)"))

	// API Gateway publishes Count only for periods with requests: a drop
	// to zero (clients cut off before the gateway: DNS, certificates, a
	// network) would be missing data, not a low value. FILL turns those
	// periods into zeros, which the band judges: at an hour the model
	// knows to be quiet its lower edge is at zero and zero does not
	// breach; at a busy hour it does. So missing data (left after FILL
	// only when CloudWatch has no Count at all) is not breaching: an API
	// that has never served has nothing to drop from.
	requests := awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression:   jsii.String("FILL(requests, 0)"),
		UsingMetrics: &map[string]awscloudwatch.IMetric{"requests": api.MetricCount(m.opts("Sum", "Requests"))},
		Label:        jsii.String("Requests (no data = 0)"), Period: m.period,
	})
	drop := awscloudwatch.NewAnomalyDetectionAlarm(m, jsii.String("ApiTrafficDrop"), &awscloudwatch.AnomalyDetectionAlarmProps{
		Metric:             requests,
		StdDevs:            jsii.Number(m.th.TrafficDropStdDevs),
		EvaluationPeriods:  jsii.Number(m.th.TrafficDropPeriods),
		DatapointsToAlarm:  jsii.Number(m.th.TrafficDropPeriods),
		ComparisonOperator: awscloudwatch.ComparisonOperator_LESS_THAN_LOWER_THRESHOLD,
		TreatMissingData:   notBrch,
		AlarmDescription: jsii.String(fmt.Sprintf("API requests stayed below the band CloudWatch expects for this hour and weekday (%v standard deviations) for %v periods: clients cannot reach the API, or stopped sending. Runbook: %s#%s",
			m.th.TrafficDropStdDevs, m.th.TrafficDropPeriods, m.runbook, RunbookTrafficDrop)),
	})
	m.member("ApiTrafficDrop", drop)

	// AuthFailures (the access-log metric filter of apiSection) counts
	// every 401 and 403 the stage answered: the authorizer's refusals,
	// API Gateway's own 401 for a request without the credential, and
	// 403s of a web ACL given with WebAclArn (the rate-limit ACL answers
	// 429). The guard leaves periods with fewer requests than the minimum
	// at 0; without traffic there is no data, which is not breaching.
	auth := awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace: jsii.String(m.namespace()), MetricName: jsii.String(MetricAuthFailures), Statistic: jsii.String("Sum"),
		Period: m.period, Label: jsii.String("401/403"),
	})
	denials := awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression:   jsii.String(fmt.Sprintf("IF(requests >= %v, 100 * FILL(auth, 0) / requests, 0)", m.th.AuthorizerDenialMinRequests)),
		UsingMetrics: &map[string]awscloudwatch.IMetric{"auth": auth, "requests": api.MetricCount(m.opts("Sum", "Requests"))},
		Label:        jsii.String("Requests refused 401/403 (%)"), Period: m.period,
	})
	m.alarm("AuthorizerDenialRate", fmt.Sprintf("More than %v%% of API requests were refused with 401/403 in 2 of 3 periods (periods with at least %v requests): valid keys are being refused (an API-keys table restored empty or from the wrong backup, a broken authorizer release), an outage that no 4XX or 5XX alarm sees.", m.th.AuthorizerDenialPercent, m.th.AuthorizerDenialMinRequests), RunbookAuthorizerDenials,
		denials, m.th.AuthorizerDenialPercent, 3, 2, gt, notBrch)

	m.Dashboard.AddWidgets(
		awscloudwatch.NewAlarmWidget(&awscloudwatch.AlarmWidgetProps{
			Title: jsii.String("Requests and the band expected for this hour and weekday"), Alarm: drop,
			Width: jsii.Number(12), Height: jsii.Number(6), LeftYAxis: &awscloudwatch.YAxisProps{Min: jsii.Number(0)},
		}),
		awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{
			Title: jsii.String("Requests refused 401/403 (%)"), Width: jsii.Number(12), Height: jsii.Number(6),
			Left:            &[]awscloudwatch.IMetric{denials},
			LeftYAxis:       &awscloudwatch.YAxisProps{Min: jsii.Number(0), Max: jsii.Number(100)},
			LeftAnnotations: &[]*awscloudwatch.HorizontalAnnotation{{Value: jsii.Number(m.th.AuthorizerDenialPercent), Label: jsii.String("alarm")}},
		}),
	)
}

// member records a page alarm made elsewhere than alarm (the anomaly
// detection alarm) as a member of the current service.
func (m *TriggersMonitoring) member(id string, a awscloudwatch.Alarm) {
	m.Alarms[id] = a
	m.Severities[id] = SeverityPage
	m.members[m.service] = append(m.members[m.service], id)
}

// apiKeysScope returns the construct holding the API-keys table's
// alarms, made on first use.
func (m *TriggersMonitoring) apiKeysScope() constructs.Construct {
	if m.apiKeys == nil {
		m.apiKeys = constructs.NewConstruct(m, jsii.String(apiKeysScopeID))
	}
	return m.apiKeys
}

// apiKeysTableSection adds the API-keys table's section and alarms, built
// as the events table's (the same code, construct ids, metrics and
// runbook sections) under the construct ApiKeysTable, with ids
// "ApiKeys<id>" in Alarms. They page with the API (service Api): every
// request the authorizer cache does not answer reads the table.
func (m *TriggersMonitoring) apiKeysTableSection() {
	t := m.props.Api.ApiKeysTable()
	s := &tableSection{
		scope: m.apiKeysScope(), dashboard: m.Dashboard, table: t,
		heading: "API-keys table (DynamoDB)", titlePrefix: "API keys: ",
		provisioned: billingOf(t, "") == dynamotable.Provisioned,
		ops:         apiKeysOperations, th: apiKeysTableThresholds(&m.props), latencyStat: "p99",
		windows: eventsTableWindows, period: m.period, runbook: m.runbook,
		add: func(id string, a awscloudwatch.Alarm) {
			m.member(apiKeysPrefix+id, a)
		},
	}
	s.build()
}

// apiKeysTableThresholds resolves ApiKeysTableThresholds: the table
// defaults without a latency alarm (no operation has a default latency;
// the replication default goes unused: the section has no replicas).
func apiKeysTableThresholds(p *TriggersMonitoringProps) TableThresholds {
	return p.ApiKeysTableThresholds.withDefaults(nil)
}

// backupSection alarms (ticket) on the failed and expired jobs of the
// vault of each monitored table's AWS Backup plan (dynamotable.BackupOf):
// BackupJobsFailed for the events table's, ApiKeysTable/BackupJobsFailed
// for the API-keys table's when it is another vault.
func (m *TriggersMonitoring) backupSection() {
	type plan struct {
		table string
		scope constructs.Construct // nil: m
		key   string
		vault awsbackup.IBackupVault
	}
	var plans []plan
	if b := dynamotable.BackupOf(m.props.EventsTable); b != nil {
		plans = append(plans, plan{"events", nil, "BackupJobsFailed", b.Vault})
	}
	if m.props.Api != nil {
		if b := dynamotable.BackupOf(m.props.Api.ApiKeysTable()); b != nil && (len(plans) == 0 || plans[0].vault != b.Vault) {
			plans = append(plans, plan{"API-keys", m.apiKeysScope(), apiKeysPrefix + "BackupJobsFailed", b.Vault})
		}
	}
	if len(plans) == 0 {
		return
	}
	m.Dashboard.AddWidgets(header("## Backups (AWS Backup)"))
	var widgets []awscloudwatch.IWidget
	for _, p := range plans {
		// AWS Backup publishes its job counts per vault only when jobs
		// end: no data is no job, not a failure.
		job := func(name, label string) awscloudwatch.IMetric {
			return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
				Namespace: jsii.String("AWS/Backup"), MetricName: jsii.String(name), Statistic: jsii.String("Sum"),
				DimensionsMap: &map[string]*string{"BackupVaultName": p.vault.BackupVaultName()},
				Period:        m.period, Label: jsii.String(label),
			})
		}
		completed, failed, expired := job("NumberOfBackupJobsCompleted", "Completed"), job("NumberOfBackupJobsFailed", "Failed"), job("NumberOfBackupJobsExpired", "Expired")
		widgets = append(widgets, graph("Backup jobs of the "+p.table+" table's vault", []awscloudwatch.IMetric{completed, failed, expired}, nil, 12))
		bad := awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
			Expression:   jsii.String("FILL(failed, 0) + FILL(expired, 0)"),
			UsingMetrics: &map[string]awscloudwatch.IMetric{"failed": failed, "expired": expired},
			Label:        jsii.String("Backup jobs failed or expired"), Period: m.period,
		})
		m.ticket(p.scope, "BackupJobsFailed", p.key, fmt.Sprintf("AWS Backup jobs of the %s table's plan failed or expired (%v or more in a period): a scheduled backup is missing. Point-in-time recovery still covers the last 35 days; the backups kept longer do not have this one.", p.table, m.th.BackupJobsFailed), RunbookBackupJobsFailed,
			bad, m.th.BackupJobsFailed, 1, 1, gte, notBrch)
	}
	m.Dashboard.AddWidgets(widgets...)
}

// wafMetrics is what an API with its own web ACL offers
// (triggersapi.TriggersApi).
type wafMetrics interface {
	MetricWafBlockedRequests(opts *awscloudwatch.MetricOptions) awscloudwatch.Metric
	MetricWafAllowedRequests(opts *awscloudwatch.MetricOptions) awscloudwatch.Metric
}

// wafSection graphs the rate-limit web ACL's allowed and blocked requests
// and alarms (ticket) on blocked-request spikes, when the API has its own
// web ACL.
func (m *TriggersMonitoring) wafSection() {
	w, ok := m.props.Api.(wafMetrics)
	if !ok {
		return
	}
	blocked := w.MetricWafBlockedRequests(m.opts("Sum", "Blocked (429, 413)"))
	if blocked == nil {
		return
	}
	m.Dashboard.AddWidgets(header("## Rate limits (AWS WAF)"), graph("WAF: allowed and blocked requests", []awscloudwatch.IMetric{
		w.MetricWafAllowedRequests(m.opts("Sum", "Allowed")), blocked,
	}, nil, 24))
	// WAF publishes BlockedRequests only for periods in which it blocked:
	// no data is nothing blocked.
	m.ticket(nil, "WafBlockedRequests", "WafBlockedRequests", fmt.Sprintf("The rate-limit web ACL blocked %v or more requests (answered 429, or 413 for a body of 1,000,000 bytes or more) in 2 of 3 periods: a client is flooding the API or sending bodies too large, or the per-key or per-address limits are too low for real traffic.", m.th.WafBlockedRequests), RunbookWafBlockedRequests,
		blocked, m.th.WafBlockedRequests, 3, 2, gte, notBrch)
}

// ticketStatus is the alarm status widget of the ticket alarms.
func (m *TriggersMonitoring) ticketStatus() awscloudwatch.IWidget {
	alarms := make([]interfacesawscloudwatch.IAlarmRef, 0, len(m.tickets))
	for _, id := range m.tickets {
		alarms = append(alarms, m.Alarms[id])
	}
	return awscloudwatch.NewAlarmStatusWidget(&awscloudwatch.AlarmStatusWidgetProps{
		Title: jsii.String("Ticket alarms (each notifies the ticket topic)"), Alarms: &alarms, Width: jsii.Number(24),
	})
}
