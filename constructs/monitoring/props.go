package monitoring

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"

	"github.com/triggers-dev/triggers/constructs/archive"
	"github.com/triggers-dev/triggers/constructs/dynamotable"
	"github.com/triggers-dev/triggers/constructs/triggersapi"
)

// DefaultRunbookURL is where alarm descriptions point: docs/runbook.md.
const DefaultRunbookURL = "https://github.com/triggers-dev/triggers/blob/main/docs/runbook.md"

// Thresholds of the alarms of the functions, the API, the queues and the
// archive. A zero field takes its default. The events table's thresholds
// are TriggersMonitoringProps.EventsTableThresholds; the four deprecated
// table fields here still work (EventsTableThresholds, when it sets the
// same threshold, must agree with them).
type Thresholds struct {
	// PutItemLatencyP99Ms is the threshold of PutItemLatency, in ms.
	//
	// Deprecated: use EventsTableThresholds.LatencyMs["PutItem"] (the
	// events table's latency alarms are on the p99).
	//
	// Default: 20 (seed 001, IV1).
	PutItemLatencyP99Ms float64
	// ThrottleEvents is the threshold of the events table's throttle
	// alarms, read and write, table and each GSI.
	//
	// Deprecated: use EventsTableThresholds.ReadThrottleEvents and
	// WriteThrottleEvents (this sets both).
	//
	// Default: 1.
	ThrottleEvents float64
	// SystemErrors is the threshold of the events table's SystemErrors
	// alarm.
	//
	// Deprecated: use EventsTableThresholds.SystemErrors.
	//
	// Default: 1.
	SystemErrors float64
	// ConsumedCapacityPercent is the threshold of the events table's
	// capacity alarms (provisioned billing only).
	//
	// Deprecated: use EventsTableThresholds.ConsumedCapacityPercent.
	//
	// Default: 80.
	ConsumedCapacityPercent float64
	// LambdaErrors alarms when a function's errors reach it in a period.
	//
	// Default: 1.
	LambdaErrors float64
	// Api5xxPercent alarms when 5XX responses exceed this share of requests
	// in 2 of 3 periods.
	//
	// Default: 1.
	Api5xxPercent float64
	// ApiLatencyP99Ms alarms when the API's p99 latency exceeds it for 3 periods.
	//
	// Default: 1000.
	ApiLatencyP99Ms float64
	// IteratorAgeSeconds alarms when the stream consumer's maximum iterator
	// age exceeds it for 2 periods.
	//
	// Default: 60.
	IteratorAgeSeconds float64
	// LambdaThrottles alarms when a function's Throttles (Sum) reach it in
	// 2 of 3 periods. One alarm per function.
	//
	// Default: 1.
	LambdaThrottles float64
	// DurationPercentOfTimeout alarms when a function's p99 Duration stays
	// above this share of the function's timeout (read from the function)
	// for 3 periods. One alarm per function.
	//
	// Default: 80.
	DurationPercentOfTimeout float64
	// ConcurrencyPercent alarms when a function's maximum
	// ConcurrentExecutions stays above this share of its limit for 3
	// periods: its reserved concurrency when it has one (read from the
	// function), else AccountConcurrencyLimit. One alarm per function.
	//
	// Default: 90 (AWS's recommended alarm).
	ConcurrencyPercent float64
	// AccountConcurrencyLimit is the limit ConcurrencyPercent applies to
	// for functions without reserved concurrency: the account's concurrent
	// executions quota in the region.
	//
	// Default: 1000 (Lambda's default quota).
	AccountConcurrencyLimit float64
	// Api4xxPercent alarms when 4XX responses other than 401 and 403
	// exceed this share of requests for 3 periods. 401 and 403 (counted
	// from the access log) are graphed, never alarmed on.
	//
	// Default: 5 (AWS's recommended 4XXError alarm: 0.05 of requests).
	Api4xxPercent float64
	// DeliveryQueueAgeSeconds alarms when the delivery queue's
	// ApproximateAgeOfOldestMessage (Maximum) exceeds it for 3 periods.
	//
	// Default: 600.
	DeliveryQueueAgeSeconds float64
	// InboxLatencyP95Ms alarms when the p95 of the runtime's
	// RequestLatency for GET /v1/inbox exceeds it for 3 periods.
	//
	// Default: 50 (seed 001, story AC2).
	InboxLatencyP95Ms float64
	// WebhookFailurePercent alarms (with webhook delivery) when failed
	// attempts exceed this share of all webhook attempts for 3 periods.
	// One tenant's broken endpoint rarely gets there; every endpoint
	// failing at once points at our side (egress, DNS, certificates).
	//
	// Default: 50.
	WebhookFailurePercent float64
	// WebhookFailureMinAttempts is the fewest webhook attempts in a period
	// for WebhookFailures to judge it: on a quiet deployment one tenant's
	// dead endpoint (or its circuit's probes) is most of the attempts, and
	// that is not our side failing.
	//
	// Default: 20.
	WebhookFailureMinAttempts float64
	// ArchiveIteratorAgeSeconds alarms (with Archive) when the archiver's
	// IteratorAge (Maximum) exceeds it for 3 periods. Records older than
	// the archive's MaxRecordAge (20 h by default) are given up on, so it
	// must be at most half of that; the default leaves about 19 hours to
	// act.
	//
	// Default: 3600.
	ArchiveIteratorAgeSeconds float64
	// TrafficDropStdDevs is the width of the ApiTrafficDrop alarm's
	// anomaly detection band, in standard deviations: the alarm pages when
	// the API's request count falls below the band that CloudWatch's
	// model (daily and weekly seasonality: the same hour on the same
	// weekday) expects, for TrafficDropPeriods periods. Wider is quieter.
	// At most 10.
	//
	// Default: 3.
	TrafficDropStdDevs float64
	// TrafficDropPeriods is how many consecutive periods the request count
	// must stay below the band before ApiTrafficDrop pages: a whole
	// number, with TrafficDropPeriods times the period at most 1 day (7
	// days for a period of an hour or more: CloudWatch's limits).
	//
	// Default: 3 (15 minutes with the default period).
	TrafficDropPeriods float64
	// AuthorizerDenialPercent alarms (page) when requests answered 401 or
	// 403 exceed this share of all requests in 2 of 3 periods: every key
	// being refused (an API-keys table restored empty or from the wrong
	// backup, a broken authorizer release) is an outage that 4XX alarms
	// do not see.
	//
	// Default: 50.
	AuthorizerDenialPercent float64
	// AuthorizerDenialMinRequests is the fewest requests in a period for
	// AuthorizerDenialRate to judge it: a quiet API, where a handful of
	// clients with revoked keys are most of the traffic, does not page.
	//
	// Default: 100.
	AuthorizerDenialMinRequests float64
	// WafBlockedRequests alarms (ticket, when the API has the web ACL that
	// triggersapi's RateLimit makes) when the requests WAF blocked reach
	// it in 2 of 3 periods: a client is flooding, or the rate limits are
	// too low for real traffic.
	//
	// Default: 1000.
	WafBlockedRequests float64
	// BackupJobsFailed alarms (ticket, when the events or API-keys table
	// is in an AWS Backup plan) when backup jobs that failed or expired
	// (never started in their window) in the plan's vault reach it in a
	// period.
	//
	// Default: 1.
	BackupJobsFailed float64
}

func (t *Thresholds) withDefaults() Thresholds {
	out := Thresholds{
		LambdaErrors: 1, Api5xxPercent: 1, ApiLatencyP99Ms: 1000, IteratorAgeSeconds: 60,
		LambdaThrottles: 1, DurationPercentOfTimeout: 80, ConcurrencyPercent: 90, AccountConcurrencyLimit: 1000,
		Api4xxPercent: 5, DeliveryQueueAgeSeconds: 600, InboxLatencyP95Ms: 50, WebhookFailurePercent: 50, WebhookFailureMinAttempts: 20,
		ArchiveIteratorAgeSeconds: 3600, TrafficDropStdDevs: 3, TrafficDropPeriods: 3,
		AuthorizerDenialPercent: 50, AuthorizerDenialMinRequests: 100, WafBlockedRequests: 1000, BackupJobsFailed: 1,
	}
	if t == nil {
		return out
	}
	set := func(dst *float64, v float64) {
		if v != 0 {
			*dst = v
		}
	}
	set(&out.LambdaErrors, t.LambdaErrors)
	set(&out.Api5xxPercent, t.Api5xxPercent)
	set(&out.ApiLatencyP99Ms, t.ApiLatencyP99Ms)
	set(&out.IteratorAgeSeconds, t.IteratorAgeSeconds)
	set(&out.LambdaThrottles, t.LambdaThrottles)
	set(&out.DurationPercentOfTimeout, t.DurationPercentOfTimeout)
	set(&out.ConcurrencyPercent, t.ConcurrencyPercent)
	set(&out.AccountConcurrencyLimit, t.AccountConcurrencyLimit)
	set(&out.Api4xxPercent, t.Api4xxPercent)
	set(&out.DeliveryQueueAgeSeconds, t.DeliveryQueueAgeSeconds)
	set(&out.InboxLatencyP95Ms, t.InboxLatencyP95Ms)
	set(&out.WebhookFailurePercent, t.WebhookFailurePercent)
	set(&out.WebhookFailureMinAttempts, t.WebhookFailureMinAttempts)
	set(&out.ArchiveIteratorAgeSeconds, t.ArchiveIteratorAgeSeconds)
	set(&out.TrafficDropStdDevs, t.TrafficDropStdDevs)
	set(&out.TrafficDropPeriods, t.TrafficDropPeriods)
	set(&out.AuthorizerDenialPercent, t.AuthorizerDenialPercent)
	set(&out.AuthorizerDenialMinRequests, t.AuthorizerDenialMinRequests)
	set(&out.WafBlockedRequests, t.WafBlockedRequests)
	set(&out.BackupJobsFailed, t.BackupJobsFailed)
	return out
}

// TriggersMonitoringProps configures TriggersMonitoring.
type TriggersMonitoringProps struct {
	// EventsTable is the table to monitor. Required unless Api is given.
	//
	// Default: Api.EventsTable().
	EventsTable dynamotable.ITable
	// Api adds the functions, API Gateway, queues and the runtime's own
	// metrics to the dashboard and alarms.
	//
	// Default: the table only.
	Api triggersapi.ITriggersApi
	// Archive adds the archive of expired events (its archiver function
	// and failure queue) to the dashboard and alarms.
	//
	// Default: none.
	Archive *archive.ExpiredEventsArchive
	// MoreArchives adds more archives of expired events, each with
	// Archive's dashboard section and alarms, under its name: the
	// section's heading names it, and its alarm ids start with it
	// ("Data": DataArchiverErrors, DataArchiverIteratorAge,
	// DataArchiveFailuresNotEmpty). Such as the data stack's own archive
	// while a restored table is swapped in (stacks does so), which still
	// archives what TTL deletes from the replaced table. Names are
	// letters and digits, starting with a capital.
	//
	// Default: none.
	MoreArchives map[string]*archive.ExpiredEventsArchive
	// ContributorInsights adds the events table's Contributor Insights
	// section (its most accessed and throttled tenants) to the dashboard;
	// set it when the table has Contributor Insights on. The rules are
	// named by DynamoDB at creation: ContributorInsightsRuleNames graphs
	// them, without it the section says how to find them.
	//
	// Default: false.
	ContributorInsights bool
	// ContributorInsightsRuleNames are the table's rule names (aws
	// dynamodb describe-contributor-insights); each gets a graph of its top
	// contributor and its number of unique contributors. Giving them
	// implies ContributorInsights.
	//
	// Default: none.
	ContributorInsightsRuleNames []string
	// Billing decides whether provisioned-capacity lines and the consumed
	// capacity alarms are added.
	//
	// Default: the table's own billing when it was made with dynamotable,
	// else on demand.
	Billing dynamotable.Billing
	// DashboardName names the dashboard (one per environment, e.g.
	// "triggers-prod"): 1-255 characters of letters, digits, '-' and '_'.
	// With Api it also starts the saved Logs Insights queries' names
	// ("<DashboardName>/ingest-latency-percentiles"), so it is then at most
	// 228 characters. A token is not checked.
	//
	// Default: a name CloudFormation generates.
	DashboardName string
	// AlarmTopic receives the composite alarms' ALARM and OK
	// notifications (one composite alarm per service; the member alarms
	// have no actions).
	//
	// Default: a new SNS topic, encrypted with the AWS-managed key, TLS only.
	AlarmTopic awssns.ITopic
	// TicketTopic receives the ALARM and OK notifications of the alarms of
	// severity SeverityTicket (each alarm notifies it directly: no
	// composite). Subscribe a ticketing system or a team channel, not the
	// pager.
	//
	// Default: a new SNS topic, encrypted with the AWS-managed key, TLS
	// only, made when there is a ticket alarm.
	TicketTopic awssns.ITopic
	// ApiKeysTableThresholds are the thresholds of the API-keys table's
	// alarms (with Api): the events table's windows (throttling and system
	// errors in one period), no latency alarm unless LatencyMs names an
	// operation the runtime calls on it (ApiKeysOperations()).
	//
	// Default: ReadThrottleEvents and WriteThrottleEvents 1, SystemErrors
	// 1, ConsumedCapacityPercent 80 (provisioned billing only), no latency
	// alarm.
	ApiKeysTableThresholds *TableThresholds
	// Thresholds of the alarms of the functions, the API, the queues and
	// the archive.
	//
	// Default: see Thresholds.
	Thresholds *Thresholds
	// EventsTableThresholds are the thresholds of the events table's
	// alarms, the ones TableMonitoring makes for any table (see
	// TableThresholds), with two differences. LatencyMs: the events table's
	// latency alarms are on the p99 of SuccessfulRequestLatency (seed
	// 001's target), one for each operation given (from Operations()) and
	// PutItem (default 20 ms); not one per operation. Windows: throttling
	// and system errors alarm in a period, latency and capacity after 3
	// periods. ReplicationLatencyMs (default 10000, 5 of 5 periods) alarms
	// per replica region of an events table built with
	// dynamotable.TableOptions.Replicas, and is refused for one without.
	//
	// Default: ReadThrottleEvents and WriteThrottleEvents 1, SystemErrors
	// 1, ConsumedCapacityPercent 80, LatencyMs {"PutItem": 20}; or the
	// deprecated fields of Thresholds when they are set.
	EventsTableThresholds *TableThresholds
	// RunbookURL is the runbook each alarm description links to (with a
	// section anchor).
	//
	// Default: DefaultRunbookURL.
	RunbookURL string
	// MetricsNamespace is the namespace of the runtime's EMF metrics, a
	// literal (a token fails synth: it is written into the dashboard's
	// SEARCH expressions).
	//
	// Default: the API function's METRICS_NAMESPACE (Api.MetricsNamespace()).
	MetricsNamespace string
	// Period of every metric and alarm: whole minutes, from 1 minute to 1
	// day.
	//
	// Default: 5 minutes.
	Period awscdk.Duration
}

// eventsTableThresholds resolves the events table's thresholds: the
// defaults, then the deprecated fields of Thresholds, then
// EventsTableThresholds (ValidateProps refuses the two when they
// disagree). LatencyMs holds exactly the operations with a latency alarm.
func eventsTableThresholds(p *TriggersMonitoringProps) TableThresholds {
	out := TableThresholds{
		ReadThrottleEvents: 1, WriteThrottleEvents: 1, SystemErrors: 1, ConsumedCapacityPercent: 80,
		LatencyMs: map[string]float64{"PutItem": 20}, ReplicationLatencyMs: 10000,
	}
	set := func(dst *float64, v float64) {
		if v != 0 {
			*dst = v
		}
	}
	if t := p.Thresholds; t != nil {
		set(&out.ReadThrottleEvents, t.ThrottleEvents)
		set(&out.WriteThrottleEvents, t.ThrottleEvents)
		set(&out.SystemErrors, t.SystemErrors)
		set(&out.ConsumedCapacityPercent, t.ConsumedCapacityPercent)
		if t.PutItemLatencyP99Ms != 0 {
			out.LatencyMs["PutItem"] = t.PutItemLatencyP99Ms
		}
	}
	if t := p.EventsTableThresholds; t != nil {
		set(&out.ReadThrottleEvents, t.ReadThrottleEvents)
		set(&out.WriteThrottleEvents, t.WriteThrottleEvents)
		set(&out.SystemErrors, t.SystemErrors)
		set(&out.ConsumedCapacityPercent, t.ConsumedCapacityPercent)
		set(&out.ReplicationLatencyMs, t.ReplicationLatencyMs)
		for op, v := range t.LatencyMs {
			if v != 0 { // 0 is PutItem's default (ValidateProps refuses it for others)
				out.LatencyMs[op] = v
			}
		}
	}
	return out
}
