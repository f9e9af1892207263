package dynamotable

import (
	"errors"
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/jsii-runtime-go"
)

// Limits on props that AWS enforces.
const (
	minTargetUtilization = 20
	maxTargetUtilization = 90
	minRecoveryDays      = 1
	maxRecoveryDays      = 35
)

// isToken reports whether v is an unresolved CDK token (a value known only at
// deploy time); such values are not validated at synth.
func isToken(v float64) bool {
	return *awscdk.Token_IsUnresolved(jsii.Number(v))
}

// ValidateProps reports every problem with props, each naming the bad value
// and the fix. NewTable panics with this error; call it yourself to check
// props without building anything.
func ValidateProps(props *TableProps) error {
	if props == nil || props.Schema == nil {
		return errors.New("props.Schema is required: pass a table description such as schema.Events()")
	}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if err := props.Schema.Validate(); err != nil {
		errs = append(errs, err)
	}
	switch props.Billing {
	case "", OnDemand, Provisioned:
	default:
		bad("billing %q is unknown: use dynamotable.OnDemand or dynamotable.Provisioned", props.Billing)
	}
	for _, dim := range []struct {
		name string
		s    *Scaling
	}{{"ReadScaling", props.ReadScaling}, {"WriteScaling", props.WriteScaling}} {
		if dim.s == nil {
			continue
		}
		if props.Billing != Provisioned {
			bad("%s is set but billing is on-demand: set Billing: dynamotable.Provisioned, or remove %s", dim.name, dim.name)
			continue
		}
		s := dim.s.withDefaults()
		if !isToken(s.MinCapacity) && s.MinCapacity < 1 {
			bad("%s.MinCapacity %v is below 1: provisioned capacity is at least 1 unit", dim.name, s.MinCapacity)
		}
		if !isToken(s.MinCapacity) && !isToken(s.MaxCapacity) && s.MinCapacity > s.MaxCapacity {
			bad("%s.MinCapacity %v is greater than MaxCapacity %v: raise MaxCapacity or lower MinCapacity", dim.name, s.MinCapacity, s.MaxCapacity)
		}
		for _, c := range []struct {
			name string
			v    float64
		}{{"MinCapacity", s.MinCapacity}, {"MaxCapacity", s.MaxCapacity}} {
			if !isToken(c.v) && c.v != float64(int64(c.v)) {
				bad("%s.%s %v is not a whole number: capacity units are whole", dim.name, c.name, c.v)
			}
		}
		if t := s.TargetUtilizationPercent; !isToken(t) && (t < minTargetUtilization || t > maxTargetUtilization) {
			bad("%s.TargetUtilizationPercent %v is outside %d-%d: DynamoDB auto scaling accepts targets from %d to %d percent", dim.name, t, minTargetUtilization, maxTargetUtilization, minTargetUtilization, maxTargetUtilization)
		}
	}
	pitr := props.PointInTimeRecovery == nil || *props.PointInTimeRecovery
	if d := props.RecoveryPeriodDays; d != 0 && !isToken(d) {
		switch {
		case !pitr:
			bad("RecoveryPeriodDays %v is set but PointInTimeRecovery is off: turn PITR on or remove RecoveryPeriodDays", d)
		case d < minRecoveryDays || d > maxRecoveryDays || d != float64(int(d)):
			bad("RecoveryPeriodDays %v is outside %d-%d: PITR keeps whole days from %d to %d", d, minRecoveryDays, maxRecoveryDays, minRecoveryDays, maxRecoveryDays)
		}
	}
	ci := props.ContributorInsights != nil && *props.ContributorInsights
	switch props.ContributorInsightsMode {
	case "", awsdynamodb.ContributorInsightsMode_ACCESSED_AND_THROTTLED_KEYS, awsdynamodb.ContributorInsightsMode_THROTTLED_KEYS:
		if props.ContributorInsightsMode != "" && !ci {
			bad("ContributorInsightsMode %q is set but ContributorInsights is off: set ContributorInsights: jsii.Bool(true), or remove ContributorInsightsMode", props.ContributorInsightsMode)
		}
	default:
		bad("ContributorInsightsMode %q is unknown: use awsdynamodb.ContributorInsightsMode_ACCESSED_AND_THROTTLED_KEYS or awsdynamodb.ContributorInsightsMode_THROTTLED_KEYS", props.ContributorInsightsMode)
	}
	if props.ContributorInsightsOnIndexes != nil && *props.ContributorInsightsOnIndexes && !ci {
		bad("ContributorInsightsOnIndexes is set but ContributorInsights is off: set ContributorInsights: jsii.Bool(true), or remove ContributorInsightsOnIndexes")
	}
	if props.Backup != nil {
		errs = append(errs, validateBackup(props.Backup)...)
	}
	return errors.Join(errs...)
}

func (s *Scaling) withDefaults() Scaling {
	out := Scaling{MinCapacity: DefaultMinCapacity, MaxCapacity: DefaultMaxCapacity, TargetUtilizationPercent: DefaultTargetUtilizationPercent}
	if s == nil {
		return out
	}
	if s.MinCapacity != 0 {
		out.MinCapacity = s.MinCapacity
	}
	if s.MaxCapacity != 0 {
		out.MaxCapacity = s.MaxCapacity
	}
	if s.TargetUtilizationPercent != 0 {
		out.TargetUtilizationPercent = s.TargetUtilizationPercent
	}
	return out
}
