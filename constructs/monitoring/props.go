package monitoring

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"

	"github.com/triggers-dev/triggers/constructs/dynamotable"
	"github.com/triggers-dev/triggers/constructs/triggersapi"
)

// DefaultRunbookURL is where alarm descriptions point: docs/runbook.md.
const DefaultRunbookURL = "https://github.com/triggers-dev/triggers/blob/main/docs/runbook.md"

// Thresholds of the alarms. A zero field takes its default.
type Thresholds struct {
	// PutItemLatencyP99Ms alarms when PutItem's p99 SuccessfulRequestLatency
	// exceeds it for 3 periods.
	//
	// Default: 20 (seed 001, IV1).
	PutItemLatencyP99Ms float64
	// ThrottleEvents alarms when read plus write throttle events of the table
	// or of one GSI reach it in a period.
	//
	// Default: 1.
	ThrottleEvents float64
	// SystemErrors alarms when DynamoDB system errors reach it in a period.
	//
	// Default: 1.
	SystemErrors float64
	// ConsumedCapacityPercent alarms (provisioned billing only) when consumed
	// capacity stays above this share of provisioned capacity for 3 periods.
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
}

func (t *Thresholds) withDefaults() Thresholds {
	out := Thresholds{
		PutItemLatencyP99Ms: 20, ThrottleEvents: 1, SystemErrors: 1, ConsumedCapacityPercent: 80,
		LambdaErrors: 1, Api5xxPercent: 1, ApiLatencyP99Ms: 1000, IteratorAgeSeconds: 60,
	}
	if t == nil {
		return out
	}
	set := func(dst *float64, v float64) {
		if v != 0 {
			*dst = v
		}
	}
	set(&out.PutItemLatencyP99Ms, t.PutItemLatencyP99Ms)
	set(&out.ThrottleEvents, t.ThrottleEvents)
	set(&out.SystemErrors, t.SystemErrors)
	set(&out.ConsumedCapacityPercent, t.ConsumedCapacityPercent)
	set(&out.LambdaErrors, t.LambdaErrors)
	set(&out.Api5xxPercent, t.Api5xxPercent)
	set(&out.ApiLatencyP99Ms, t.ApiLatencyP99Ms)
	set(&out.IteratorAgeSeconds, t.IteratorAgeSeconds)
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
	// Billing decides whether provisioned-capacity lines and the consumed
	// capacity alarms are added.
	//
	// Default: the table's own billing when it was made with dynamotable,
	// else on demand.
	Billing dynamotable.Billing
	// DashboardName names the dashboard (one per environment, e.g. "triggers-prod").
	//
	// Default: a name CloudFormation generates.
	DashboardName string
	// AlarmTopic receives every alarm's ALARM and OK notifications.
	//
	// Default: a new SNS topic, encrypted with the AWS-managed key, TLS only.
	AlarmTopic awssns.ITopic
	// Thresholds of the alarms.
	//
	// Default: see Thresholds.
	Thresholds *Thresholds
	// RunbookURL is the runbook each alarm description links to (with a
	// section anchor).
	//
	// Default: DefaultRunbookURL.
	RunbookURL string
	// MetricsNamespace is the namespace of the runtime's EMF metrics.
	//
	// Default: the API function's METRICS_NAMESPACE (Api.MetricsNamespace()).
	MetricsNamespace string
	// Period of every metric and alarm: whole minutes, from 1 minute to 1
	// day.
	//
	// Default: 5 minutes.
	Period awscdk.Duration
}
