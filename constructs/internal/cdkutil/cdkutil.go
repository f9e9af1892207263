// Package cdkutil holds the constructs' shared internal helpers: the
// TLS-only queue every construct creates, cdk-nag suppressions, and the
// checks of literal props (tokens, whole seconds).
package cdkutil

import (
	"fmt"
	"math"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// NewTLSOnlyQueue creates a queue with SQS-managed encryption (unless
// props choose a key) that refuses requests without TLS.
func NewTLSOnlyQueue(scope constructs.Construct, id string, props *awssqs.QueueProps) awssqs.Queue {
	p := awssqs.QueueProps{}
	if props != nil {
		p = *props
	}
	if p.Encryption == "" {
		p.Encryption = awssqs.QueueEncryption_SQS_MANAGED
	}
	p.EnforceSSL = jsii.Bool(true)
	return awssqs.NewQueue(scope, jsii.String(id), &p)
}

// Suppress records a cdk-nag suppression on one resource (and its
// children), for one rule, optionally for specific findings only.
func Suppress(c constructs.IConstruct, rule, reason string, appliesTo ...any) {
	s := &cdknag.NagPackSuppression{Id: jsii.String(rule), Reason: jsii.String(reason)}
	if len(appliesTo) > 0 {
		s.AppliesTo = &appliesTo
	}
	cdknag.NagSuppressions_AddResourceSuppressions(c, &[]*cdknag.NagPackSuppression{s}, jsii.Bool(true))
}

// Deref returns *s, or "" for nil: construct ids and names in messages.
func Deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// numberTokenMarker is the top 16 bits of every number token aws-cdk-lib
// encodes (DOUBLE_TOKEN_MARKER_BITS in core/lib/private/encoding.js: 0xFBFF
// above a 48-bit token index, a huge negative float64). The float64
// crosses jsii unchanged, so Go can recognize it without a round trip.
const numberTokenMarker = 0xFBFF

// IsNumberToken reports whether v is an unresolved CDK number token (a value
// known only at deploy time), as awscdk.Token_IsUnresolved(jsii.Number(v))
// does in the Node process, without a jsii round trip: prop validation
// checks many numbers.
func IsNumberToken(v float64) bool {
	return math.Float64bits(v)>>48 == numberTokenMarker
}

// IsStringToken reports whether s holds an unresolved CDK token (a
// CfnParameter's ValueAsString, an attribute of another resource).
func IsStringToken(s string) bool {
	return *awscdk.Token_IsUnresolved(jsii.String(s))
}

// IsDurationToken reports whether d holds a value known only at deploy
// time (awscdk.Duration_Seconds of a parameter, say).
// awscdk.Token_IsUnresolved does not tell: a Duration is an object, never
// a token itself, so it answers false for every Duration.
func IsDurationToken(d awscdk.Duration) bool {
	return d != nil && *d.IsUnresolved()
}

// WholeSeconds checks a literal duration given as prop name (nil or a
// token passes): CloudFormation takes it as whole seconds from lo to hi,
// and the CDK refuses a fraction in words of its own that name neither
// the prop nor the fix. The error gives fix and a value that would do.
func WholeSeconds(name string, d awscdk.Duration, lo, hi time.Duration, fix string) error {
	if d == nil || IsDurationToken(d) {
		return nil
	}
	ms := *d.ToMilliseconds(&awscdk.TimeConversionOptions{Integral: jsii.Bool(false)})
	v := time.Duration(ms * float64(time.Millisecond))
	if v < lo || v > hi || ms != math.Trunc(ms/1000)*1000 {
		return fmt.Errorf("%s %s is not whole seconds from %s to %s: %s; give one such as %s", name, v, lo, hi, fix, min(max(lo, v.Round(time.Second)), hi))
	}
	return nil
}
