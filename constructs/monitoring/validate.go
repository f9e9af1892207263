package monitoring

import (
	"errors"
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/triggers-dev/triggers/constructs/dynamotable"
	"github.com/triggers-dev/triggers/contract"
)

// ValidateProps reports every problem with props, each naming the bad value
// and the fix. NewTriggersMonitoring panics with this error.
func ValidateProps(p *TriggersMonitoringProps) error {
	if p == nil || (p.EventsTable == nil && p.Api == nil) {
		return errors.New("give props.EventsTable or props.Api: there is nothing to monitor")
	}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if t := p.Thresholds; t != nil {
		for _, f := range []struct {
			name string
			v    float64
			max  float64
		}{
			{"PutItemLatencyP99Ms", t.PutItemLatencyP99Ms, 0},
			{"ThrottleEvents", t.ThrottleEvents, 0},
			{"SystemErrors", t.SystemErrors, 0},
			{"ConsumedCapacityPercent", t.ConsumedCapacityPercent, 100},
			{"LambdaErrors", t.LambdaErrors, 0},
			{"Api5xxPercent", t.Api5xxPercent, 100},
			{"ApiLatencyP99Ms", t.ApiLatencyP99Ms, 0},
			{"IteratorAgeSeconds", t.IteratorAgeSeconds, 0},
			{"LambdaThrottles", t.LambdaThrottles, 0},
			{"DurationPercentOfTimeout", t.DurationPercentOfTimeout, 100},
			{"ConcurrencyPercent", t.ConcurrencyPercent, 100},
			{"AccountConcurrencyLimit", t.AccountConcurrencyLimit, 0},
			{"Api4xxPercent", t.Api4xxPercent, 100},
			{"DeliveryQueueAgeSeconds", t.DeliveryQueueAgeSeconds, 0},
			{"InboxLatencyP95Ms", t.InboxLatencyP95Ms, 0},
			{"WebhookFailurePercent", t.WebhookFailurePercent, 100},
			{"ArchiveIteratorAgeSeconds", t.ArchiveIteratorAgeSeconds, 0},
		} {
			switch {
			case f.v < 0:
				bad("Thresholds.%s %v is negative: give a positive threshold, or 0 for the default", f.name, f.v)
			case f.max > 0 && f.v > f.max:
				bad("Thresholds.%s %v is above %v: it is a percentage", f.name, f.v, f.max)
			}
		}
	}
	if p.Period != nil && !*awscdk.Token_IsUnresolved(p.Period) {
		s := *p.Period.ToSeconds(&awscdk.TimeConversionOptions{Integral: jsii.Bool(false)})
		if s < 60 || s > 86400 || int64(s)%60 != 0 || s != float64(int64(s)) {
			bad("Period %v seconds is invalid: use whole minutes from 1 minute to 1 day (DynamoDB and API Gateway publish per minute)", s)
		}
	}
	if p.MetricsNamespace != "" {
		if err := contract.ValidMetricsNamespace(p.MetricsNamespace); err != nil {
			bad("MetricsNamespace: %v", err)
		}
	}
	if a := p.Archive; a != nil && a.MaxRecordAge() != nil && !*awscdk.Token_IsUnresolved(a.MaxRecordAge()) {
		th := p.Thresholds.withDefaults().ArchiveIteratorAgeSeconds
		age := *a.MaxRecordAge().ToSeconds(&awscdk.TimeConversionOptions{Integral: jsii.Bool(false)})
		if th > age/2 {
			bad("Thresholds.ArchiveIteratorAgeSeconds %v is not well below the archive's maximum record age (%v s): the alarm would page with less than half of the mapping's retry window left; use at most %v (default 3600)", th, age, age/2)
		}
	}
	if p.Billing != "" && p.Billing != dynamotable.OnDemand && p.Billing != dynamotable.Provisioned {
		bad("Billing %q is unknown: use dynamotable.OnDemand or dynamotable.Provisioned", p.Billing)
	}
	return errors.Join(errs...)
}
