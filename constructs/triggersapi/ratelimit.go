package triggersapi

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awswafv2"
	"github.com/aws/jsii-runtime-go"
)

// Defaults of RateLimitOptions.
const (
	// DefaultRequestsPerKey is how many requests one API key may make per
	// window: 6,000 per 5 minutes, 20 per second on average.
	DefaultRequestsPerKey = 6000
	// DefaultRequestsPerIP is how many requests one client address may
	// make per window, with or without a key: 30,000 per 5 minutes, 100
	// per second, the stage-wide default rate.
	DefaultRequestsPerIP = 30000
	// DefaultRateWindowSeconds is the window WAF counts requests in.
	DefaultRateWindowSeconds = 300
)

// RateLimitOptions configures the per-tenant rate limits: an AWS WAF web ACL
// on the stage with two rate-based rules (after a rule answering 413 to a
// Content-Length of 1,000,000 bytes or more, a body the function could
// never receive), evaluated before API Gateway's
// stage-wide throttle, so one tenant, or one address sending floods of
// unauthenticated requests, cannot use up the throttle every tenant
// shares. Requests over a limit get 429 with Retry-After and the
// contract's JSON error body.
//
// The first rule counts requests per value of the Authorization header:
// the credential, so per API key, hence per tenant (a tenant with several
// keys gets the limit once per key). The second counts requests per
// client IP address, keyed or not.
//
// Cost (us-east-1 list prices, 2026): $5 per web ACL and $1 per rule per
// month, plus $0.60 per million requests: $8 a month (3 rules) plus
// $0.60 per million requests. See docs/rate-limits.md.
type RateLimitOptions struct {
	// Disabled creates no web ACL: every caller then shares the stage's
	// ThrottlingRateLimit.
	//
	// Default: false.
	Disabled bool
	// RequestsPerKey is the most requests one Authorization header value
	// may make per Window before WAF answers 429; 10-2,000,000,000.
	//
	// Default: DefaultRequestsPerKey (6,000 per 5 minutes).
	RequestsPerKey float64
	// RequestsPerIP is the most requests one client address may make per
	// Window; 10-2,000,000,000.
	//
	// Default: DefaultRequestsPerIP (30,000 per 5 minutes).
	RequestsPerIP float64
	// Window is the period WAF counts requests over: 1, 2, 5 or 10
	// minutes.
	//
	// Default: 5 minutes.
	Window awscdk.Duration
}

// RateLimitsMetricName starts the CloudWatch metric name of the rate-limit
// web ACL (its VisibilityConfig.MetricName, the value of the WebACL
// dimension of its AWS/WAFV2 metrics), followed by "-" and the API's
// path under its stack's name (TriggersApi.WafMetricName): each API's web
// ACL has metrics of its own.
const RateLimitsMetricName = "TriggersRateLimits"

// WafMetricName returns the metric name of the API's rate-limit web ACL
// (the WebACL dimension of its metrics): RateLimitsMetricName, "-", and
// the API's path made a name, its stack's part replaced by the stack's
// name (StackProps.StackName): "TriggersRateLimits-triggers-prod-api-Triggers".
func (a *TriggersApi) WafMetricName() string { return RateLimitsMetricName + "-" + a.name }

// MetricWafBlockedRequests returns the requests the API's rate-limit web
// ACL blocked (AWS/WAFV2 BlockedRequests, dimensions WebACL, Rule ALL and
// Region; Sum unless opts say otherwise), or nil when the API has no web
// ACL of its own (RateLimit.Disabled, or WebAclArn given).
func (a *TriggersApi) MetricWafBlockedRequests(opts *awscloudwatch.MetricOptions) awscloudwatch.Metric {
	if a.webAcl == nil {
		return nil
	}
	return a.wafMetric("BlockedRequests", opts)
}

// MetricWafAllowedRequests returns the requests the API's rate-limit web
// ACL let through (AWS/WAFV2 AllowedRequests, Rule ALL; Sum unless opts
// say otherwise), or nil when the API has no web ACL of its own.
func (a *TriggersApi) MetricWafAllowedRequests(opts *awscloudwatch.MetricOptions) awscloudwatch.Metric {
	if a.webAcl == nil {
		return nil
	}
	return a.wafMetric("AllowedRequests", opts)
}

// wafMetric is one of the web ACL's AWS/WAFV2 metrics over all its rules,
// in the stack's region.
func (a *TriggersApi) wafMetric(name string, opts *awscloudwatch.MetricOptions) awscloudwatch.Metric {
	props := &awscloudwatch.MetricProps{
		Namespace: jsii.String("AWS/WAFV2"), MetricName: jsii.String(name), Statistic: jsii.String("Sum"),
		DimensionsMap: &map[string]*string{"WebACL": jsii.String(a.WafMetricName()), "Rule": jsii.String("ALL"), "Region": awscdk.Stack_Of(a).Region()},
	}
	if opts != nil {
		if opts.Statistic != nil {
			props.Statistic = opts.Statistic
		}
		props.Period, props.Label = opts.Period, opts.Label
	}
	return awscloudwatch.NewMetric(props)
}

// WafRequestID is the request id of the web ACL's answers, in their
// X-Request-Id header and body: WAF answers before API Gateway, with no
// request id of its own to give, and the contract wants one on every
// answer. It names who answered.
const WafRequestID = "web-acl"

// throttledBody is the JSON body of WAF's 429: the contract's error shape.
const throttledBody = `{"error":{"code":"throttled","message":"rate limit exceeded for this API key or address; retry after the Retry-After delay","request_id":"` + WafRequestID + `"}}`

// tooLargeBody is the JSON body of WAF's 413 for a body the API function
// could never receive: the contract's error shape, as the function's own
// 413 (WAF has no request id to put in it).
const tooLargeBody = `{"error":{"code":"payload_too_large","message":"the request body is larger than the API accepts (256 KiB)","request_id":"` + WafRequestID + `"}}`

// maxContentLengthDigits is the most digits of a Content-Length the web
// ACL lets through: 6, bodies under 1,000,000 bytes (WAF compares the
// header's length, not its value). Larger ones never reach the function:
// above about 4.6 MB the base64 invocation passes Lambda's 6 MB limit and
// API Gateway answers 500; the function refuses anything over 256 KiB.
const maxContentLengthDigits = 6

func rateLimitValues(o *RateLimitOptions) (perKey, perIP, window float64) {
	perKey, perIP, window = DefaultRequestsPerKey, DefaultRequestsPerIP, DefaultRateWindowSeconds
	if o == nil {
		return
	}
	if o.RequestsPerKey != 0 {
		perKey = o.RequestsPerKey
	}
	if o.RequestsPerIP != 0 {
		perIP = o.RequestsPerIP
	}
	if o.Window != nil {
		window = *o.Window.ToSeconds(nil)
	}
	return
}

// newRateLimitAcl creates the REGIONAL web ACL of o (nil: the defaults).
func newRateLimitAcl(a *TriggersApi, o *RateLimitOptions) awswafv2.CfnWebACL {
	perKey, perIP, window := rateLimitValues(o)
	metric := func(name string) *awswafv2.CfnWebACL_VisibilityConfigProperty {
		return &awswafv2.CfnWebACL_VisibilityConfigProperty{
			CloudWatchMetricsEnabled: jsii.Bool(true),
			MetricName:               jsii.String(name),
			SampledRequestsEnabled:   jsii.Bool(true),
		}
	}
	block := &awswafv2.CfnWebACL_RuleActionProperty{Block: &awswafv2.CfnWebACL_BlockActionProperty{
		CustomResponse: &awswafv2.CfnWebACL_CustomResponseProperty{
			ResponseCode:          jsii.Number(429),
			CustomResponseBodyKey: jsii.String("throttled"),
			ResponseHeaders: &[]*awswafv2.CfnWebACL_CustomHTTPHeaderProperty{
				{Name: jsii.String("Retry-After"), Value: jsii.String("60")},
				{Name: jsii.String("X-Request-Id"), Value: jsii.String(WafRequestID)},
			},
		},
	}}
	return awswafv2.NewCfnWebACL(a, jsii.String("RateLimits"), &awswafv2.CfnWebACLProps{
		Description:   jsii.String("Triggers API: per-API-key and per-address rate limits"),
		Scope:         jsii.String("REGIONAL"),
		DefaultAction: &awswafv2.CfnWebACL_DefaultActionProperty{Allow: &awswafv2.CfnWebACL_AllowActionProperty{}},
		CustomResponseBodies: &map[string]*awswafv2.CfnWebACL_CustomResponseBodyProperty{
			"throttled": {ContentType: jsii.String("APPLICATION_JSON"), Content: jsii.String(throttledBody)},
			"tooLarge":  {ContentType: jsii.String("APPLICATION_JSON"), Content: jsii.String(tooLargeBody)},
		},
		VisibilityConfig: metric(a.WafMetricName()),
		Rules: &[]*awswafv2.CfnWebACL_RuleProperty{
			{
				// Bodies of 1,000,000 bytes or more: a 413 in the
				// contract's shape, not API Gateway's 500 for an
				// invocation over Lambda's limit (found by review).
				Name:     jsii.String("BodyTooLarge"),
				Priority: jsii.Number(0),
				Action: &awswafv2.CfnWebACL_RuleActionProperty{Block: &awswafv2.CfnWebACL_BlockActionProperty{
					CustomResponse: &awswafv2.CfnWebACL_CustomResponseProperty{
						ResponseCode:          jsii.Number(413),
						CustomResponseBodyKey: jsii.String("tooLarge"),
						ResponseHeaders: &[]*awswafv2.CfnWebACL_CustomHTTPHeaderProperty{
							{Name: jsii.String("X-Request-Id"), Value: jsii.String(WafRequestID)},
						},
					},
				}},
				Statement: &awswafv2.CfnWebACL_StatementProperty{SizeConstraintStatement: &awswafv2.CfnWebACL_SizeConstraintStatementProperty{
					FieldToMatch:        &awswafv2.CfnWebACL_FieldToMatchProperty{SingleHeader: map[string]any{"Name": "content-length"}},
					ComparisonOperator:  jsii.String("GT"),
					Size:                jsii.Number(maxContentLengthDigits),
					TextTransformations: &[]*awswafv2.CfnWebACL_TextTransformationProperty{{Priority: jsii.Number(0), Type: jsii.String("NONE")}},
				}},
				VisibilityConfig: metric("TriggersBodyTooLarge"),
			},
			{
				Name:     jsii.String("PerApiKey"),
				Priority: jsii.Number(1),
				Action:   block,
				Statement: &awswafv2.CfnWebACL_StatementProperty{RateBasedStatement: &awswafv2.CfnWebACL_RateBasedStatementProperty{
					Limit:               jsii.Number(perKey),
					EvaluationWindowSec: jsii.Number(window),
					AggregateKeyType:    jsii.String("CUSTOM_KEYS"),
					CustomKeys: &[]*awswafv2.CfnWebACL_RateBasedStatementCustomKeyProperty{{
						Header: &awswafv2.CfnWebACL_RateLimitHeaderProperty{
							Name:                jsii.String("authorization"),
							TextTransformations: &[]*awswafv2.CfnWebACL_TextTransformationProperty{{Priority: jsii.Number(0), Type: jsii.String("NONE")}},
						},
					}},
				}},
				VisibilityConfig: metric("TriggersPerApiKey"),
			},
			{
				Name:     jsii.String("PerAddress"),
				Priority: jsii.Number(2),
				Action:   block,
				Statement: &awswafv2.CfnWebACL_StatementProperty{RateBasedStatement: &awswafv2.CfnWebACL_RateBasedStatementProperty{
					Limit:               jsii.Number(perIP),
					EvaluationWindowSec: jsii.Number(window),
					AggregateKeyType:    jsii.String("IP"),
				}},
				VisibilityConfig: metric("TriggersPerAddress"),
			},
		},
	})
}
