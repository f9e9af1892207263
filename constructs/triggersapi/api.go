// Package triggersapi provides TriggersApi: the Triggers HTTP API v1 on API
// Gateway (REST) with a Lambda REQUEST authorizer, its Go Lambda functions
// bundled at synth, and stream delivery from the events table to an SQS
// queue. See the README's "TriggersApi" section for the defaults table and
// an architecture picture.
package triggersapi

import (
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigateway"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awswafv2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/triggers-dev/triggers/constructs/dynamotable"
	"github.com/triggers-dev/triggers/constructs/eventstore"
	"github.com/triggers-dev/triggers/constructs/golambda"
	"github.com/triggers-dev/triggers/internal/apikey"
	"github.com/triggers-dev/triggers/schema"
)

// Environment variables the functions read (see internal/appconfig).
const (
	EnvEventsTable      = "EVENTS_TABLE"
	EnvAPIKeysTable     = "API_KEYS_TABLE"
	EnvCursorSecretArn  = "CURSOR_SECRET_ARN"
	EnvRetentionDays    = "RETENTION_DAYS"
	EnvDeliveryQueueURL = "DELIVERY_QUEUE_URL"
	EnvMetricsNamespace = "METRICS_NAMESPACE"
	// EnvAPIKeySources tells both functions which headers may carry the
	// API key: apikey.SourceBearer with the authorizer cache on,
	// apikey.SourceBearerOrHeader with it off.
	EnvAPIKeySources = apikey.EnvSources
)

// Routes are the contract's routes (method, path), all served by the API
// function behind the authorizer.
var Routes = [][2]string{
	{"POST", "/v1/events"},
	{"POST", "/v1/events/batch"},
	{"GET", "/v1/events/{event_id}"},
	{"PATCH", "/v1/events/{event_id}"},
	{"GET", "/v1/inbox"},
	{"POST", "/v1/inbox/ack"},
}

// TriggersApi is the deployable Triggers service around an events table and
// an API-keys table.
type TriggersApi struct {
	constructs.Construct
	// RestApi is the API Gateway REST API.
	RestApi awsapigateway.RestApi
	// AccessLogs receives the stage's JSON access logs.
	AccessLogs awslogs.LogGroup
	// ApiFunction serves every route.
	ApiFunction *golambda.GoFunction
	// AuthorizerFunction is the REQUEST authorizer.
	AuthorizerFunction *golambda.GoFunction
	// ConsumerFunction reads the events stream and feeds DeliveryQueue.
	ConsumerFunction *golambda.GoFunction
	// DeliveryQueue receives one message per new event.
	DeliveryQueue awssqs.Queue
	// DeliveryDeadLetterQueue receives delivery messages received too often.
	DeliveryDeadLetterQueue awssqs.Queue
	// StreamFailureQueue receives stream records the consumer gave up on.
	StreamFailureQueue awssqs.IQueue
	// EventsTable and ApiKeysTable are the tables in use (given or created).
	EventsTable  eventstore.IEventsTable
	ApiKeysTable dynamotable.ITable
	// CursorSecret signs inbox cursors.
	CursorSecret awssecretsmanager.ISecret
	// WebAcl is the web ACL holding the per-tenant and per-IP rate limits
	// (nil when RateLimit.Disabled or WebAclArn is set).
	WebAcl awswafv2.CfnWebACL

	metricsNamespace string
	keySources       apikey.Sources
}

// KeySources returns which headers may carry the API key in this
// deployment: only Authorization: Bearer with the authorizer cache on (the
// cache keys on that header), Authorization or X-Api-Key with it off.
func (a *TriggersApi) KeySources() apikey.Sources { return a.keySources }

// MetricsNamespace returns the CloudWatch namespace of the API function's
// own metrics (embedded metric format): EventsIngested, EventsRejected.
func (a *TriggersApi) MetricsNamespace() string { return a.metricsNamespace }

// Url returns the stage's base URL (ending in "/").
func (a *TriggersApi) Url() *string { return a.RestApi.Url() }

// NewTriggersApi creates the API. Invalid props panic with an error naming
// the value and the fix.
func NewTriggersApi(scope constructs.Construct, id *string, props *TriggersApiProps) *TriggersApi {
	if props == nil {
		props = &TriggersApiProps{}
	}
	if err := ValidateProps(props); err != nil {
		panic(fmt.Errorf("triggersapi %q: invalid props:\n%w", deref(id), err))
	}
	a := &TriggersApi{}
	constructs.NewConstruct_Override(a, scope, id)

	a.EventsTable = props.EventsTable
	if a.EventsTable == nil {
		a.EventsTable = eventstore.NewEventsTable(a, jsii.String("Events"), nil)
	}
	a.ApiKeysTable = props.ApiKeysTable
	if a.ApiKeysTable == nil {
		keys := schema.APIKeys()
		a.ApiKeysTable = dynamotable.NewTable(a, jsii.String("ApiKeys"), &dynamotable.TableProps{Schema: &keys})
	}
	a.CursorSecret = props.CursorSecret
	if a.CursorSecret == nil {
		secret := awssecretsmanager.NewSecret(a, jsii.String("CursorSecret"), &awssecretsmanager.SecretProps{
			Description: jsii.String("HMAC key that signs Triggers inbox cursors"),
			GenerateSecretString: &awssecretsmanager.SecretStringGenerator{
				PasswordLength: jsii.Number(64), ExcludePunctuation: jsii.Bool(true),
			},
		})
		suppress(secret, "AwsSolutions-SMG4", "the cursor HMAC key has no rotation Lambda: rotating it invalidates every outstanding inbox cursor (clients get 400 and restart from the first page), so it is rotated by hand (docs/runbook.md), not on a schedule")
		a.CursorSecret = secret
	}
	retention := props.LogRetention
	if retention == "" {
		retention = awslogs.RetentionDays_ONE_MONTH
	}
	days := props.RetentionDays
	if days == 0 {
		days = DefaultRetentionDays
	}
	// The credential the functions accept must be exactly what the
	// authorizer cache keys on: with a cache, the Authorization header.
	a.keySources = apikey.SourceBearer
	if ttl := props.AuthorizerCacheTtl; ttl != nil && *ttl.ToSeconds(nil) == 0 {
		a.keySources = apikey.SourceBearerOrHeader
	}

	// fn creates one of the functions: from its prebuilt code when given,
	// else built at synth from its package by import path, in the CDK
	// app's module (this module, or another that depends on it).
	fn := func(id, pkg, desc string, o *FunctionOptions, defTimeout float64, env map[string]*string) *golambda.GoFunction {
		p := &golambda.GoFunctionProps{
			Description: jsii.String(desc), Environment: env,
			LogRetention: retention, Tracing: props.Tracing,
			Timeout: awscdk.Duration_Seconds(jsii.Number(defTimeout)),
		}
		if o != nil {
			p.MemoryMiB, p.ReservedConcurrency, p.Code = o.MemoryMiB, o.ReservedConcurrency, o.Code
			if o.Timeout != nil {
				p.Timeout = o.Timeout
			}
		}
		switch {
		case p.Code != nil:
		case props.PrebuiltDir != "":
			p.PrebuiltDir = filepath.Join(props.PrebuiltDir, PrebuiltDirs[pkg])
		default:
			p.Entry = pkg
		}
		return golambda.NewGoFunction(a, jsii.String(id), p)
	}
	a.metricsNamespace = props.MetricsNamespace
	if a.metricsNamespace == "" {
		a.metricsNamespace = "Triggers/" + *awscdk.Stack_Of(a).StackName()
	}
	a.ApiFunction = fn("ApiFunction", ApiPackage, "Triggers HTTP API v1", props.ApiFunction, 10, map[string]*string{
		EnvMetricsNamespace: jsii.String(a.metricsNamespace),
		EnvEventsTable:      a.EventsTable.TableName(),
		EnvCursorSecretArn:  a.CursorSecret.SecretArn(),
		EnvRetentionDays:    jsii.String(strconv.Itoa(int(days))),
		EnvAPIKeySources:    jsii.String(string(a.keySources)),
	})
	a.EventsTable.GrantAppendEvents(a.ApiFunction)
	a.EventsTable.GrantReadInbox(a.ApiFunction)
	a.EventsTable.GrantUpdateStatus(a.ApiFunction)
	a.CursorSecret.GrantRead(a.ApiFunction, nil)

	a.AuthorizerFunction = fn("AuthorizerFunction", AuthorizerPackage, "Triggers API-key authorizer", props.AuthorizerFunction, 5, map[string]*string{
		EnvAPIKeysTable:  a.ApiKeysTable.TableName(),
		EnvAPIKeySources: jsii.String(string(a.keySources)),
	})
	a.ApiKeysTable.Grant(a.AuthorizerFunction, nil, false, "dynamodb:GetItem")

	a.buildDelivery(props, fn)
	a.buildRestApi(props, retention)
	return a
}

func (a *TriggersApi) buildDelivery(props *TriggersApiProps, fn func(string, string, string, *FunctionOptions, float64, map[string]*string) *golambda.GoFunction) {
	d := DeliveryOptions{}
	if props.Delivery != nil {
		d = *props.Delivery
	}
	a.DeliveryDeadLetterQueue = dynamotable.NewTLSOnlyQueue(a, "DeliveryDLQ", &awssqs.QueueProps{
		MaxMessageSizeBytes: jsii.Number(1048576),
		RetentionPeriod:     awscdk.Duration_Days(jsii.Number(14)),
	})
	receives := d.MaxReceiveCount
	if receives == 0 {
		receives = DefaultDLQMaxReceiveCount
	}
	qp := &awssqs.QueueProps{
		// An event's JSON can exceed 256 KiB (a 256 KiB payload plus its
		// envelope); SQS accepts messages up to 1 MiB.
		MaxMessageSizeBytes: jsii.Number(1048576),
		VisibilityTimeout:   d.QueueVisibilityTimeout,
		RetentionPeriod:     d.QueueRetention,
		DeadLetterQueue:     &awssqs.DeadLetterQueue{Queue: a.DeliveryDeadLetterQueue, MaxReceiveCount: jsii.Number(receives)},
	}
	a.DeliveryQueue = dynamotable.NewTLSOnlyQueue(a, "DeliveryQueue", qp)

	a.ConsumerFunction = fn("ConsumerFunction", StreamConsumerPackage, "Triggers stream consumer: new events to the delivery queue", d.Function, 30, map[string]*string{
		EnvDeliveryQueueURL: a.DeliveryQueue.QueueUrl(),
	})
	a.DeliveryQueue.GrantSendMessages(a.ConsumerFunction)
	so := dynamotable.StreamConsumerOptions{}
	if d.Stream != nil {
		so = *d.Stream
	}
	ownFailureQueue := so.FailureQueue == nil
	if ownFailureQueue {
		q := dynamotable.NewTLSOnlyQueue(a, "StreamFailures", &awssqs.QueueProps{
			RetentionPeriod: awscdk.Duration_Days(jsii.Number(dynamotable.DefaultFailureQueueRetentionDay)),
		})
		suppress(q, "AwsSolutions-SQS3", "this queue is the stream consumer's on-failure destination: it already is the dead-letter queue of the event source mapping")
		so.FailureQueue = q
	}
	if len(so.Filters) == 0 {
		so.Filters = []*map[string]any{awslambda.FilterCriteria_Filter(&map[string]any{
			"eventName": awslambda.FilterRule_IsEqual(jsii.String("INSERT")),
		})}
	}
	c := a.EventsTable.AddStreamConsumer(a.ConsumerFunction.Function, &so)
	a.StreamFailureQueue = c.FailureQueue
	suppress(a.ConsumerFunction.Role, "AwsSolutions-IAM5", "dynamodb:ListStreams supports no resource-level permissions; the stream read grant (GetRecords, GetShardIterator, DescribeStream) is scoped to the events table's stream ARN", "Resource::*")
}

// suppress records a cdk-nag suppression on one resource (and its
// children), for one rule, optionally for specific findings only.
func suppress(c constructs.IConstruct, rule, reason string, appliesTo ...any) {
	s := &cdknag.NagPackSuppression{Id: jsii.String(rule), Reason: jsii.String(reason)}
	if len(appliesTo) > 0 {
		s.AppliesTo = &appliesTo
	}
	cdknag.NagSuppressions_AddResourceSuppressions(c, &[]*cdknag.NagPackSuppression{s}, jsii.Bool(true))
}

type gatewayError struct {
	id         string
	typ        func() awsapigateway.ResponseType
	status     string
	code       string
	msg        string
	retryAfter bool
}

// gatewayErrors shape API Gateway's own responses like the contract's
// errors: {"error":{"code","message","request_id"}}. The 401's message
// states the key sources of the deployment.
func gatewayErrors(sources apikey.Sources) []gatewayError {
	return append([]gatewayError{{"Unauthorized", awsapigateway.ResponseType_UNAUTHORIZED, "401", "unauthorized", sources.Hint(), false}}, fixedGatewayErrors...)
}

var fixedGatewayErrors = []gatewayError{
	{"AccessDenied", awsapigateway.ResponseType_ACCESS_DENIED, "403", "forbidden", "this API key was revoked", false},
	{"NotFound", awsapigateway.ResponseType_MISSING_AUTHENTICATION_TOKEN, "404", "not_found", "no such resource", false},
	{"Throttled", awsapigateway.ResponseType_THROTTLED, "429", "throttled", "too many requests; slow down and retry", true},
	{"TooLarge", awsapigateway.ResponseType_REQUEST_TOO_LARGE, "413", "payload_too_large", "the body is larger than the API accepts", false},
	{"BadParameters", awsapigateway.ResponseType_BAD_REQUEST_PARAMETERS, "400", "invalid_parameter", "$context.error.validationErrorString", false},
	// A failing authorizer function (DynamoDB down or slow, a timeout)
	// is answered with AUTHORIZER_CONFIGURATION_ERROR, a 500 by default:
	// to the client it is a passing outage, like any other 503.
	{"AuthorizerConfigurationError", awsapigateway.ResponseType_AUTHORIZER_CONFIGURATION_ERROR, "503", "unavailable", "authentication is briefly unavailable; retry after the Retry-After delay", true},
	{"AuthorizerFailure", awsapigateway.ResponseType_AUTHORIZER_FAILURE, "503", "unavailable", "authentication is briefly unavailable; retry after the Retry-After delay", true},
	{"Default4xx", awsapigateway.ResponseType_DEFAULT_4XX, "", "bad_request", "$context.error.message", false},
	{"Default5xx", awsapigateway.ResponseType_DEFAULT_5XX, "", "internal", "internal error; quote the request id when reporting it", false},
}

// accessLogFormat is the stage's JSON access log line.
const accessLogFormat = `{"requestId":"$context.requestId","extendedRequestId":"$context.extendedRequestId",` +
	`"ip":"$context.identity.sourceIp","userAgent":"$context.identity.userAgent","requestTime":"$context.requestTime",` +
	`"httpMethod":"$context.httpMethod","resourcePath":"$context.resourcePath","path":"$context.path",` +
	`"status":"$context.status","protocol":"$context.protocol","responseLength":"$context.responseLength",` +
	`"tenant":"$context.authorizer.tenantId","authorizerError":"$context.authorizer.error",` +
	`"latency":"$context.responseLatency","integrationLatency":"$context.integration.latency",` +
	`"errorMessage":"$context.error.message","wafStatus":"$context.waf.status"}`

func (a *TriggersApi) buildRestApi(props *TriggersApiProps, retention awslogs.RetentionDays) {
	a.AccessLogs = awslogs.NewLogGroup(a, jsii.String("AccessLogs"), &awslogs.LogGroupProps{
		Retention: retention, RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
	})
	stage := props.StageName
	if stage == "" {
		stage = DefaultStageName
	}
	level := props.ExecutionLogging
	if level == "" {
		level = awsapigateway.MethodLoggingLevel_ERROR
	}
	num := func(v, d float64) *float64 {
		if v == 0 {
			return jsii.Number(d)
		}
		return jsii.Number(v)
	}
	api := awsapigateway.NewRestApi(a, jsii.String("Api"), &awsapigateway.RestApiProps{
		Description:                 jsii.String("Triggers HTTP API v1"),
		EndpointConfiguration:       &awsapigateway.EndpointConfiguration{Types: &[]awsapigateway.EndpointType{awsapigateway.EndpointType_REGIONAL}},
		CloudWatchRole:              jsii.Bool(props.CloudWatchRole == nil || *props.CloudWatchRole),
		DomainName:                  props.DomainName,
		DefaultCorsPreflightOptions: props.Cors,
		// Request bodies reach the function base64-encoded, byte for byte:
		// as text, API Gateway would have to turn invalid UTF-8 into
		// U+FFFD before the function's I-JSON check could refuse it.
		// Responses are unaffected (the function never sets
		// isBase64Encoded for JSON).
		BinaryMediaTypes: jsii.Strings("application/json"),
		DeployOptions: &awsapigateway.StageOptions{
			StageName:            jsii.String(stage),
			ThrottlingRateLimit:  num(props.ThrottlingRateLimit, DefaultThrottlingRateLimit),
			ThrottlingBurstLimit: num(props.ThrottlingBurstLimit, DefaultThrottlingBurstLimit),
			AccessLogDestination: awsapigateway.NewLogGroupLogDestination(a.AccessLogs),
			AccessLogFormat:      awsapigateway.AccessLogFormat_Custom(jsii.String(accessLogFormat)),
			LoggingLevel:         level,
			DataTraceEnabled:     jsii.Bool(false),
			MetricsEnabled:       jsii.Bool(true),
			TracingEnabled:       jsii.Bool(props.Tracing),
		},
	})
	a.RestApi = api

	ttl := props.AuthorizerCacheTtl
	if ttl == nil {
		ttl = awscdk.Duration_Seconds(jsii.Number(DefaultAuthorizerCacheSeconds))
	}
	sources := []*string{}
	if *ttl.ToSeconds(nil) > 0 {
		sources = append(sources, awsapigateway.IdentitySource_Header(jsii.String("Authorization")))
	}
	auth := awsapigateway.NewRequestAuthorizer(a, jsii.String("Authorizer"), &awsapigateway.RequestAuthorizerProps{
		Handler:         a.AuthorizerFunction.Function,
		IdentitySources: &sources,
		ResultsCacheTtl: ttl,
	})
	if len(sources) == 0 {
		// CDK writes IdentitySource "" for an empty list; without caching
		// the property is optional, so leave it out altogether.
		auth.Node().DefaultChild().(awsapigateway.CfnAuthorizer).AddPropertyDeletionOverride(jsii.String("IdentitySource"))
	}
	validator := api.AddRequestValidator(jsii.String("Params"), &awsapigateway.RequestValidatorOptions{
		ValidateRequestParameters: jsii.Bool(true),
		ValidateRequestBody:       jsii.Bool(false),
	})
	// One invoke permission for the whole API (any method, this API only)
	// instead of two per method: eleven methods would otherwise put 22
	// statements in the function's resource policy, whose size is capped.
	integration := awsapigateway.NewLambdaIntegration(a.ApiFunction.Function, &awsapigateway.LambdaIntegrationOptions{
		Proxy: jsii.Bool(true), ScopePermissionToMethod: jsii.Bool(false),
	})

	v1 := api.Root().AddResource(jsii.String("v1"), nil)
	events := v1.AddResource(jsii.String("events"), nil)
	batch := events.AddResource(jsii.String("batch"), nil)
	event := events.AddResource(jsii.String("{event_id}"), nil)
	inbox := v1.AddResource(jsii.String("inbox"), nil)
	ack := inbox.AddResource(jsii.String("ack"), nil)
	resources := map[string]awsapigateway.Resource{
		"/v1/events": events, "/v1/events/batch": batch, "/v1/events/{event_id}": event,
		"/v1/inbox": inbox, "/v1/inbox/ack": ack,
	}
	for _, r := range Routes {
		opts := &awsapigateway.MethodOptions{
			Authorizer:        auth,
			AuthorizationType: awsapigateway.AuthorizationType_CUSTOM,
			RequestValidator:  validator,
		}
		if r[1] == "/v1/events/{event_id}" {
			opts.RequestParameters = &map[string]*bool{"method.request.path.event_id": jsii.Bool(true)}
		}
		resources[r[1]].AddMethod(jsii.String(r[0]), integration, opts)
	}
	// Another method on a known resource goes to the function too, which
	// answers 405 with the Allow header after authentication, exactly as
	// the local server does. Without it API Gateway would answer
	// MISSING_AUTHENTICATION_TOKEN (our 404), unlike the contract.
	for _, path := range []string{"/v1/events", "/v1/events/batch", "/v1/events/{event_id}", "/v1/inbox", "/v1/inbox/ack"} {
		res := resources[path]
		opts := &awsapigateway.MethodOptions{
			Authorizer:        auth,
			AuthorizationType: awsapigateway.AuthorizationType_CUSTOM,
			RequestValidator:  validator,
		}
		if path == "/v1/events/{event_id}" {
			opts.RequestParameters = &map[string]*bool{"method.request.path.event_id": jsii.Bool(true)}
		}
		res.AddMethod(jsii.String("ANY"), integration, opts)
	}

	for _, g := range gatewayErrors(a.keySources) {
		o := &awsapigateway.GatewayResponseOptions{
			Type: g.typ(),
			ResponseHeaders: &map[string]*string{
				"Content-Type": jsii.String("'application/json'"),
				// Every response carries X-Request-Id, API Gateway's
				// own answers included (the body's request_id).
				"X-Request-Id": jsii.String("context.requestId"),
			},
			Templates: &map[string]*string{
				"application/json": jsii.String(fmt.Sprintf(`{"error":{"code":"%s","message":"%s","request_id":"$context.requestId"}}`, g.code, g.msg)),
			},
		}
		if g.status != "" {
			o.StatusCode = jsii.String(g.status)
		}
		if g.retryAfter {
			(*o.ResponseHeaders)["Retry-After"] = jsii.String("'1'")
		}
		api.AddGatewayResponse(jsii.String(g.id), o)
	}

	switch {
	case props.WebAclArn != nil:
		awswafv2.NewCfnWebACLAssociation(a, jsii.String("WebAcl"), &awswafv2.CfnWebACLAssociationProps{
			ResourceArn: api.DeploymentStage().StageArn(),
			WebAclArn:   props.WebAclArn,
		})
	case props.RateLimit != nil && props.RateLimit.Disabled:
		suppress(api.DeploymentStage(), "AwsSolutions-APIG3", "RateLimit.Disabled and no WebAclArn: the deployer chose no web ACL (every tenant then shares the stage-wide throttle)")
	default:
		a.WebAcl = newRateLimitAcl(a, props.RateLimit)
		awswafv2.NewCfnWebACLAssociation(a, jsii.String("RateLimitAssociation"), &awswafv2.CfnWebACLAssociationProps{
			ResourceArn: api.DeploymentStage().StageArn(),
			WebAclArn:   a.WebAcl.AttrArn(),
		})
	}
	suppress(api, "AwsSolutions-APIG2", "request bodies are validated by the API function against the HTTP contract (JSON errors with specific codes, identical locally and on AWS); a second, coarser JSON-schema check at the edge would answer the same input with different errors. The request validator checks required parameters")
	suppress(api, "AwsSolutions-COG4", "tenants authenticate with API keys (stored as SHA-256 hashes) through a Lambda REQUEST authorizer; there are no Cognito users in this design")
	if props.CloudWatchRole == nil || *props.CloudWatchRole {
		if role := api.Node().TryFindChild(jsii.String("CloudWatchRole")); role != nil {
			suppress(role, "AwsSolutions-IAM4", "AmazonAPIGatewayPushToCloudWatchLogs is the policy AWS documents for API Gateway's account-level logging role; API Gateway writes to log groups it names itself at runtime", "Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs")
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
