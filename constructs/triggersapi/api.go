// Package triggersapi provides the Triggers service's constructs:
//
//   - TriggersApi (ITriggersApi): the Triggers HTTP API v1 on API Gateway
//     (REST) with a Lambda REQUEST authorizer, its Go Lambda functions
//     bundled at synth (or prebuilt), and a StreamDelivery. Accessors
//     (Url, RestApi, ApiFunction, DeliveryQueue, ...), metrics
//     (MetricEventsIngested, MetricEventsRejected, MetricLatency) and
//     GrantConsumeDeliveries.
//   - StreamDelivery: the events table's stream -> consumer function ->
//     delivery queue with its dead-letter queue, and the stream's
//     on-failure destination queue. Usable alone.
//   - WebhookDelivery: the delivery queue -> webhook function -> each
//     tenant's webhook subscriptions, with a retry queue (and its DLQ)
//     for retries and redeliveries. TriggersApi composes one when
//     TriggersApiProps.Webhooks is set. Usable alone.
//   - ApiKeysTable (IApiKeysTable, FromApiKeysTableAttributes): the API-keys
//     table (schema.APIKeys()) with GrantAuthorize. Usable alone.
//
// The names the functions read (environment variables, routes, metric
// names, log fields) come from package contract, which the runtime imports
// too. See docs/constructs.md for the defaults tables and an
// architecture picture.
package triggersapi

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/triggers-dev/triggers/schema"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigateway"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awswafv2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/triggers-dev/triggers/constructs/dynamotable"
	"github.com/triggers-dev/triggers/constructs/eventstore"
	"github.com/triggers-dev/triggers/constructs/golambda"
	"github.com/triggers-dev/triggers/constructs/internal/cdkutil"
	"github.com/triggers-dev/triggers/constructs/internal/tablegrant"
	"github.com/triggers-dev/triggers/contract"
)

// FlagDisableCloudWatchRole is the CDK feature flag that, when true, keeps
// RestApi (and TriggersApi with CloudWatchRole nil) from creating API
// Gateway's account-level CloudWatch role.
const FlagDisableCloudWatchRole = "@aws-cdk/aws-apigateway:disableCloudWatchRole"

// WarningNoCloudWatchRole is the id of the synth warning a TriggersApi
// gives when FlagDisableCloudWatchRole leaves the CloudWatch role out
// (acknowledge it with awscdk.Annotations_Of(api).AcknowledgeWarning, or
// set CloudWatchRole).
const WarningNoCloudWatchRole = "triggers:no-cloudwatch-role"

// ITriggersApi is a Triggers service: its API, functions, tables, queues,
// metrics and grants. Other constructs (monitoring.TriggersMonitoring)
// take an ITriggersApi.
type ITriggersApi interface {
	constructs.IConstruct
	// Url returns the stage's base URL (ending in "/").
	Url() *string
	// RestApi returns the API Gateway REST API.
	RestApi() awsapigateway.IRestApi
	// StageName returns the name of the stage the API is served from.
	StageName() *string
	// AccessLogs returns the log group of the stage's JSON access logs.
	AccessLogs() awslogs.ILogGroup
	// ApiFunction returns the function serving every route.
	ApiFunction() golambda.IGoFunction
	// AuthorizerFunction returns the REQUEST authorizer.
	AuthorizerFunction() golambda.IGoFunction
	// ConsumerFunction returns the function reading the events stream.
	ConsumerFunction() golambda.IGoFunction
	// DeliveryQueue returns the queue receiving one message per new event.
	DeliveryQueue() awssqs.IQueue
	// DeliveryDeadLetterQueue returns the delivery queue's dead-letter queue.
	DeliveryDeadLetterQueue() awssqs.IQueue
	// StreamFailureQueue returns the queue of stream records the consumer
	// gave up on.
	StreamFailureQueue() awssqs.IQueue
	// EventsTable returns the events table in use (given or created).
	EventsTable() eventstore.IEventsTable
	// ApiKeysTable returns the API-keys table in use (given or created).
	ApiKeysTable() dynamotable.ITable
	// CursorSecret returns the secret that signs inbox cursors.
	CursorSecret() awssecretsmanager.ISecret
	// KeySources returns which headers may carry the API key.
	KeySources() contract.KeySources
	// MetricsNamespace returns the namespace of the runtime's own metrics.
	MetricsNamespace() string
	// MetricEventsIngested returns the events stored (contract.MetricEventsIngested, Sum).
	MetricEventsIngested(opts *awscloudwatch.MetricOptions) awscloudwatch.Metric
	// MetricEventsRejected returns the events refused for one reason (an
	// error code such as "invalid_event"; contract.MetricEventsRejected, Sum).
	MetricEventsRejected(reason string, opts *awscloudwatch.MetricOptions) awscloudwatch.Metric
	// MetricLatency returns API Gateway's Latency of the stage (Average
	// unless opts say otherwise), in milliseconds.
	MetricLatency(opts *awscloudwatch.MetricOptions) awscloudwatch.Metric
	// MetricIntegrationLatency returns API Gateway's IntegrationLatency of
	// the stage (Average unless opts say otherwise), in milliseconds.
	MetricIntegrationLatency(opts *awscloudwatch.MetricOptions) awscloudwatch.Metric
	// MetricCount returns API Gateway's Count of the stage: the requests
	// (SampleCount unless opts say otherwise, as the CDK's Stage gives it;
	// for Count, Sum is the same figure).
	MetricCount(opts *awscloudwatch.MetricOptions) awscloudwatch.Metric
	// MetricClientError returns API Gateway's 4XXError of the stage (Sum
	// unless opts say otherwise).
	MetricClientError(opts *awscloudwatch.MetricOptions) awscloudwatch.Metric
	// MetricServerError returns API Gateway's 5XXError of the stage (Sum
	// unless opts say otherwise).
	MetricServerError(opts *awscloudwatch.MetricOptions) awscloudwatch.Metric
	// GrantConsumeDeliveries lets grantee consume the delivery queue
	// (receive, delete, change visibility). With Webhooks on, the
	// webhook function consumes it: another consumer would take messages
	// from it.
	GrantConsumeDeliveries(grantee awsiam.IGrantable) awsiam.Grant
	// Webhooks returns the webhook delivery, or nil when
	// TriggersApiProps.Webhooks is not set.
	Webhooks() IWebhookDelivery
}

// TriggersApi is the deployable Triggers service around an events table and
// an API-keys table: the REST API with its authorizer and API function, and
// a StreamDelivery (consumer, delivery queue, DLQ, failure queue).
type TriggersApi struct {
	constructs.Construct

	restApi      awsapigateway.RestApi
	stage        awsapigateway.Stage // restApi's deployment stage, read once
	accessLogs   awslogs.LogGroup
	apiFn        *golambda.GoFunction
	authorizerFn *golambda.GoFunction
	delivery     *StreamDelivery
	webhooks     *WebhookDelivery
	eventsTable  eventstore.IEventsTable
	apiKeysTable dynamotable.ITable
	cursorSecret awssecretsmanager.ISecret
	// cors is the props' Cors as the runtime applies it (nil: none),
	// read once: the function's environment and every gateway response
	// take it.
	cors   *contract.CORS
	webAcl awswafv2.CfnWebACL
	// name is uniqueName of the construct's deployed path (deployedPath).
	name string

	metricsNamespace string
	keySources       contract.KeySources
}

var _ ITriggersApi = (*TriggersApi)(nil)

// KeySources returns which headers may carry the API key in this
// deployment: only Authorization: Bearer with the authorizer cache on (the
// cache keys on that header), Authorization or X-Api-Key with it off.
func (a *TriggersApi) KeySources() contract.KeySources { return a.keySources }

// MetricsNamespace returns the CloudWatch namespace of the API function's
// own metrics (embedded metric format): EventsIngested, EventsRejected.
func (a *TriggersApi) MetricsNamespace() string { return a.metricsNamespace }

// Url returns the stage's base URL (ending in "/").
func (a *TriggersApi) Url() *string { return a.restApi.Url() }

// RestApi returns the API Gateway REST API (an awsapigateway.RestApi).
func (a *TriggersApi) RestApi() awsapigateway.IRestApi { return a.restApi }

// StageName returns the name of the deployment stage.
func (a *TriggersApi) StageName() *string { return a.stage.StageName() }

// AccessLogs returns the log group of the stage's JSON access logs.
func (a *TriggersApi) AccessLogs() awslogs.ILogGroup { return a.accessLogs }

// ApiFunction returns the function serving every route.
func (a *TriggersApi) ApiFunction() golambda.IGoFunction { return a.apiFn }

// AuthorizerFunction returns the REQUEST authorizer.
func (a *TriggersApi) AuthorizerFunction() golambda.IGoFunction { return a.authorizerFn }

// ConsumerFunction returns the stream consumer feeding DeliveryQueue.
func (a *TriggersApi) ConsumerFunction() golambda.IGoFunction { return a.delivery.ConsumerFunction() }

// DeliveryQueue returns the queue receiving one message per new event.
func (a *TriggersApi) DeliveryQueue() awssqs.IQueue { return a.delivery.DeliveryQueue() }

// DeliveryDeadLetterQueue returns the queue receiving delivery messages
// received too often.
func (a *TriggersApi) DeliveryDeadLetterQueue() awssqs.IQueue {
	return a.delivery.DeliveryDeadLetterQueue()
}

// StreamFailureQueue returns the queue receiving stream records the
// consumer gave up on.
func (a *TriggersApi) StreamFailureQueue() awssqs.IQueue { return a.delivery.StreamFailureQueue() }

// Delivery returns the StreamDelivery the construct composes.
func (a *TriggersApi) Delivery() *StreamDelivery { return a.delivery }

// Webhooks returns the WebhookDelivery the construct composes, or nil when
// TriggersApiProps.Webhooks is not set.
func (a *TriggersApi) Webhooks() IWebhookDelivery {
	if a.webhooks == nil {
		return nil // not a non-nil interface holding a nil pointer
	}
	return a.webhooks
}

// EventsTable returns the events table in use (given or created).
func (a *TriggersApi) EventsTable() eventstore.IEventsTable { return a.eventsTable }

// ApiKeysTable returns the API-keys table in use (given or created).
func (a *TriggersApi) ApiKeysTable() dynamotable.ITable { return a.apiKeysTable }

// CursorSecret returns the secret that signs inbox cursors.
func (a *TriggersApi) CursorSecret() awssecretsmanager.ISecret { return a.cursorSecret }

// WebAcl returns the web ACL holding the per-tenant and per-IP rate limits,
// or nil when RateLimit.Disabled or WebAclArn is set.
func (a *TriggersApi) WebAcl() awswafv2.CfnWebACL { return a.webAcl }

// GrantConsumeDeliveries lets grantee consume the delivery queue.
func (a *TriggersApi) GrantConsumeDeliveries(grantee awsiam.IGrantable) awsiam.Grant {
	return a.delivery.GrantConsumeDeliveries(grantee)
}

func (a *TriggersApi) runtimeMetric(name string, dims map[string]*string, opts *awscloudwatch.MetricOptions) awscloudwatch.Metric {
	return runtimeMetric(a.metricsNamespace, name, dims, opts)
}

// runtimeMetric is one of the runtime's own metrics (embedded metric
// format) in namespace ns: Sum unless opts say otherwise.
func runtimeMetric(ns, name string, dims map[string]*string, opts *awscloudwatch.MetricOptions) awscloudwatch.Metric {
	o := awscloudwatch.MetricOptions{}
	if opts != nil {
		o = *opts
	}
	if o.Statistic == nil {
		o.Statistic = jsii.String("Sum")
	}
	if dims != nil {
		o.DimensionsMap = &dims
	}
	return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace: jsii.String(ns), MetricName: jsii.String(name),
		DimensionsMap: o.DimensionsMap, Statistic: o.Statistic, Period: o.Period, Label: o.Label,
		Color: o.Color, Unit: o.Unit, Region: o.Region, Account: o.Account,
	})
}

// MetricEventsIngested returns the events the API function stored
// (contract.MetricEventsIngested in MetricsNamespace; Sum unless opts say
// otherwise).
func (a *TriggersApi) MetricEventsIngested(opts *awscloudwatch.MetricOptions) awscloudwatch.Metric {
	return a.runtimeMetric(contract.MetricEventsIngested, nil, opts)
}

// MetricEventsRejected returns the events refused for reason, an error code
// such as "invalid_event" (contract.MetricEventsRejected with dimension
// contract.DimensionReason; Sum unless opts say otherwise). It panics on an
// empty reason: the dashboard's SEARCH expression shows every reason.
func (a *TriggersApi) MetricEventsRejected(reason string, opts *awscloudwatch.MetricOptions) awscloudwatch.Metric {
	return eventsRejected(a.metricsNamespace, reason, opts)
}

// eventsRejected is contract.MetricEventsRejected for reason in namespace
// ns; an empty reason panics.
func eventsRejected(ns, reason string, opts *awscloudwatch.MetricOptions) awscloudwatch.Metric {
	if reason == "" {
		panic(fmt.Errorf("MetricEventsRejected: give a reason (an error code such as \"invalid_event\")"))
	}
	return runtimeMetric(ns, contract.MetricEventsRejected, map[string]*string{contract.DimensionReason: jsii.String(reason)}, opts)
}

// MetricLatency returns API Gateway's Latency of the deployment stage, in
// milliseconds (Average unless opts say otherwise).
func (a *TriggersApi) MetricLatency(opts *awscloudwatch.MetricOptions) awscloudwatch.Metric {
	return a.stage.MetricLatency(opts)
}

// MetricIntegrationLatency returns API Gateway's IntegrationLatency of the
// deployment stage, in milliseconds (Average unless opts say otherwise).
func (a *TriggersApi) MetricIntegrationLatency(opts *awscloudwatch.MetricOptions) awscloudwatch.Metric {
	return a.stage.MetricIntegrationLatency(opts)
}

// MetricCount returns API Gateway's Count of the deployment stage
// (SampleCount unless opts say otherwise, as the CDK's Stage gives it).
func (a *TriggersApi) MetricCount(opts *awscloudwatch.MetricOptions) awscloudwatch.Metric {
	return a.stage.MetricCount(opts)
}

// MetricClientError returns API Gateway's 4XXError of the deployment stage
// (Sum unless opts say otherwise).
func (a *TriggersApi) MetricClientError(opts *awscloudwatch.MetricOptions) awscloudwatch.Metric {
	return a.stage.MetricClientError(opts)
}

// MetricServerError returns API Gateway's 5XXError of the deployment stage
// (Sum unless opts say otherwise).
func (a *TriggersApi) MetricServerError(opts *awscloudwatch.MetricOptions) awscloudwatch.Metric {
	return a.stage.MetricServerError(opts)
}

// NewTriggersApi creates the API. Invalid props panic with an error naming
// the value and the fix.
func NewTriggersApi(scope constructs.Construct, id *string, props *TriggersApiProps) *TriggersApi {
	if props == nil {
		props = &TriggersApiProps{}
	}
	if err := ValidateProps(props); err != nil {
		panic(fmt.Errorf("triggersapi %q: invalid props:\n%w", cdkutil.Deref(id), err))
	}
	a := &TriggersApi{}
	constructs.NewConstruct_Override(a, scope, id)
	a.name = uniqueName(deployedPath(a))
	a.metricsNamespace = props.MetricsNamespace
	if a.metricsNamespace == "" {
		a.metricsNamespace = contract.MetricsNamespacePrefix + *awscdk.Stack_Of(a).StackName()
	}
	if other := sameNamespace(a); other != nil {
		how := "give this one its own MetricsNamespace, such as \"" + contract.MetricsNamespacePrefix + *awscdk.Stack_Of(a).StackName() + "/" + *a.Node().Id() + "\""
		panic(fmt.Errorf("triggersapi %q: its metrics namespace %q is that of TriggersApi %q in the same stack: their runtime metrics and alarms would mix; %s (Triggers/<stack name> is the default of one API per stack)",
			cdkutil.Deref(id), a.metricsNamespace, *other.Node().Path(), how))
	}

	a.eventsTable = props.EventsTable
	if a.eventsTable == nil {
		a.eventsTable = eventstore.NewEventsTable(a, jsii.String("Events"), nil)
	}
	a.apiKeysTable = props.ApiKeysTable
	if a.apiKeysTable == nil {
		a.apiKeysTable = NewApiKeysTable(a, jsii.String("ApiKeys"), nil)
	}
	a.cursorSecret = props.CursorSecret
	if a.cursorSecret == nil {
		secret := awssecretsmanager.NewSecret(a, jsii.String("CursorSecret"), &awssecretsmanager.SecretProps{
			Description: jsii.String("HMAC key that signs Triggers inbox cursors"),
			GenerateSecretString: &awssecretsmanager.SecretStringGenerator{
				PasswordLength: jsii.Number(64), ExcludePunctuation: jsii.Bool(true),
			},
		})
		cdkutil.Suppress(secret, "AwsSolutions-SMG4", "the cursor HMAC key has no rotation Lambda: rotating it invalidates every outstanding inbox cursor (clients get 400 and restart from the first page), so it is rotated by hand (docs/runbook.md), not on a schedule")
		a.cursorSecret = secret
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
	a.keySources = contract.KeySourcesBearer
	if ttl := props.AuthorizerCacheTtl; ttl != nil && *ttl.ToSeconds(nil) == 0 {
		a.keySources = contract.KeySourcesBearerOrHeader
	}

	fd := functionDefaults{retention: retention, tracing: props.Tracing, prebuiltDir: props.PrebuiltDir}
	fd.invokedBy = syncInvocation // the API and the authorizer
	a.apiFn = newFunction(a, "ApiFunction", ApiPackage, "Triggers HTTP API v1", fd, props.ApiFunction, 10, map[string]*string{
		contract.EnvMetricsNamespace: jsii.String(a.metricsNamespace),
		contract.EnvEventsTable:      a.eventsTable.TableName(),
		contract.EnvCursorSecretARN:  a.cursorSecret.SecretArn(),
		contract.EnvRetentionDays:    jsii.String(strconv.Itoa(int(days))),
		contract.EnvAPIKeySources:    jsii.String(string(a.keySources)),
	})
	setEventsProfile(a.apiFn, a.eventsTable)
	if props.Cors != nil {
		c, _ := corsOf(props.Cors)
		a.cors = &c
		for k, v := range corsEnvironment(c) {
			a.apiFn.Function.AddEnvironment(jsii.String(k), v, nil)
		}
	}
	if props.WriterRegion != "" {
		a.apiFn.Function.AddEnvironment(jsii.String(contract.EnvWriterRegion), jsii.String(props.WriterRegion), nil)
	}
	a.eventsTable.GrantAppendEvents(a.apiFn)
	a.eventsTable.GrantReadInbox(a.apiFn)
	a.eventsTable.GrantUpdateStatus(a.apiFn)
	a.cursorSecret.GrantRead(a.apiFn, nil)

	a.authorizerFn = newFunction(a, "AuthorizerFunction", AuthorizerPackage, "Triggers API-key authorizer", fd, props.AuthorizerFunction, 5, map[string]*string{
		contract.EnvAPIKeysTable:  a.apiKeysTable.TableName(),
		contract.EnvAPIKeySources: jsii.String(string(a.keySources)),
	})
	grantAuthorize(a.apiKeysTable, a.authorizerFn)

	// The delivery's id is "Default", which CDK leaves out of logical
	// ids: its queues and function keep the logical ids they had as
	// direct children of this construct (pinned in assertions).
	dp := &StreamDeliveryProps{EventsTable: a.eventsTable, LogRetention: retention, Tracing: props.Tracing, PrebuiltDir: props.PrebuiltDir}
	if props.WriterRegion != "" {
		// Each region delivers the events it accepted: a global table
		// built here filters by origin itself, an imported replica here
		// (in an environment-agnostic stack, only at run time).
		if r := awscdk.Stack_Of(a).Region(); !*awscdk.Token_IsUnresolved(r) {
			dp.OriginRegion = *r
		}
	}
	if props.Delivery != nil {
		dp.DeliveryOptions = *props.Delivery
	}
	if props.Webhooks != nil && dp.QueueVisibilityTimeout == nil {
		// The webhook function consumes the delivery queue.
		dp.QueueVisibilityTimeout = awscdk.Duration_Seconds(jsii.Number((VisibilityTimeoutFactor * webhookFunctionTimeout(props.Webhooks)).Seconds()))
	}
	a.delivery = NewStreamDelivery(a, jsii.String("Default"), dp)
	if props.Webhooks != nil {
		a.webhooks = NewWebhookDelivery(a, jsii.String("Webhooks"), &WebhookDeliveryProps{
			EventsTable: a.eventsTable, DeliveryQueue: a.delivery.DeliveryQueue(), WebhookOptions: *props.Webhooks,
			LogRetention: retention, Tracing: props.Tracing, PrebuiltDir: props.PrebuiltDir, MetricsNamespace: a.metricsNamespace,
		})
		// The API function queues redeliveries; WEBHOOK_QUEUE_URL also
		// turns on its subscription routes.
		a.apiFn.Function.AddEnvironment(jsii.String(contract.EnvWebhookQueueURL), a.webhooks.RetryQueue().QueueUrl(), nil)
		a.webhooks.GrantRedeliver(a.apiFn)
		// It makes the signing secrets: it seals them, and cannot open one.
		a.apiFn.Function.AddEnvironment(jsii.String(contract.EnvWebhookSecretsKey), a.webhooks.SecretsKey().KeyArn(), nil)
		// Rounds the API starts hold their events as long as the
		// webhook function's do: the retry queue's task lifetime.
		a.apiFn.Function.AddEnvironment(jsii.String(contract.EnvWebhookRoundHold), jsii.String(a.webhooks.roundHold), nil)
		a.webhooks.GrantSealSecrets(a.apiFn)
		tablegrant.Grant(a.eventsTable, a.apiFn, tablegrant.On{Table: true, Write: true}, apiWebhookActions...)
	}
	a.buildRestApi(props, retention)
	return a
}

// messageFromGateway puts API Gateway's own error message in the body, as
// $context.error.messageString: a JSON string already quoted and escaped.
// ($context.error.message is raw text: a quote in it, which can come from
// a client's header, would break the JSON.)
const messageFromGateway = "$context.error.messageString"

// gatewayErrorBody is the contract's error JSON for g.
func gatewayErrorBody(g gatewayError) string {
	msg := `"` + g.msg + `"`
	if g.msg == messageFromGateway {
		msg = messageFromGateway
	}
	return fmt.Sprintf(`{"error":{"code":"%s","message":%s,"request_id":"$context.requestId"}}`, g.code, msg)
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
func gatewayErrors(sources contract.KeySources) []gatewayError {
	return append([]gatewayError{{"Unauthorized", awsapigateway.ResponseType_UNAUTHORIZED, "401", "unauthorized", sources.Hint(), false}}, fixedGatewayErrors...)
}

var fixedGatewayErrors = []gatewayError{
	{"AccessDenied", awsapigateway.ResponseType_ACCESS_DENIED, "403", "forbidden", "this API key was revoked", false},
	{"NotFound", awsapigateway.ResponseType_MISSING_AUTHENTICATION_TOKEN, "404", "not_found", "no such resource", false},
	{"Throttled", awsapigateway.ResponseType_THROTTLED, "429", "throttled", "too many requests; slow down and retry", true},
	{"TooLarge", awsapigateway.ResponseType_REQUEST_TOO_LARGE, "413", "payload_too_large", "the body is larger than the API accepts", false},
	{"BadParameters", awsapigateway.ResponseType_BAD_REQUEST_PARAMETERS, "400", "invalid_parameter", messageFromGateway, false},
	// A failing authorizer function (DynamoDB down or slow, a timeout)
	// is answered with AUTHORIZER_CONFIGURATION_ERROR, a 500 by default:
	// to the client it is a passing outage, like any other 503.
	{"AuthorizerConfigurationError", awsapigateway.ResponseType_AUTHORIZER_CONFIGURATION_ERROR, "503", "unavailable", "authentication is briefly unavailable; retry after the Retry-After delay", true},
	{"AuthorizerFailure", awsapigateway.ResponseType_AUTHORIZER_FAILURE, "503", "unavailable", "authentication is briefly unavailable; retry after the Retry-After delay", true},
	{"Default4xx", awsapigateway.ResponseType_DEFAULT_4XX, "", "bad_request", messageFromGateway, false},
	{"Default5xx", awsapigateway.ResponseType_DEFAULT_5XX, "", "internal", "internal error; quote the request id when reporting it", false},
}

// syncInvocation is how the API and the authorizer are invoked.
const syncInvocation = "invoked synchronously by API Gateway, which answers the client itself when the function fails (AUTHORIZER_CONFIGURATION_ERROR, 502): there is no asynchronous invocation to send to a dead-letter queue"

// accessLogFormat is the stage's JSON access log line.
const accessLogFormat = `{"requestId":"$context.requestId","extendedRequestId":"$context.extendedRequestId",` +
	`"ip":"$context.identity.sourceIp","userAgent":"$context.identity.userAgent","requestTime":"$context.requestTime",` +
	`"httpMethod":"$context.httpMethod","resourcePath":"$context.resourcePath","path":"$context.path",` +
	`"status":"$context.status","protocol":"$context.protocol","responseLength":"$context.responseLength",` +
	`"tenant":"$context.authorizer.` + contract.AuthorizerTenantKey + `","authorizerError":"$context.authorizer.error",` +
	`"latency":"$context.responseLatency","integrationLatency":"$context.integration.latency",` +
	`"errorMessage":$context.error.messageString,"wafStatus":"$context.waf.status"}`

func (a *TriggersApi) buildRestApi(props *TriggersApiProps, retention awslogs.RetentionDays) {
	a.accessLogs = awslogs.NewLogGroup(a, jsii.String("AccessLogs"), &awslogs.LogGroupProps{
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
		// Its metrics' ApiName: one per API in the account and region (the
		// default, the construct id "Api", made every Triggers API of an
		// account share them: dev's errors in prod's alarms).
		RestApiName:                 jsii.String(a.name),
		Description:                 jsii.String("Triggers HTTP API v1"),
		EndpointConfiguration:       &awsapigateway.EndpointConfiguration{Types: &[]awsapigateway.EndpointType{awsapigateway.EndpointType_REGIONAL}},
		CloudWatchRole:              props.CloudWatchRole, // nil: the CDK's feature flag decides
		DomainName:                  props.DomainName,
		DefaultCorsPreflightOptions: preflightOptions(props.Cors),
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
			AccessLogDestination: awsapigateway.NewLogGroupLogDestination(a.accessLogs),
			AccessLogFormat:      awsapigateway.AccessLogFormat_Custom(jsii.String(accessLogFormat)),
			LoggingLevel:         level,
			DataTraceEnabled:     jsii.Bool(false),
			MetricsEnabled:       jsii.Bool(true),
			TracingEnabled:       jsii.Bool(props.Tracing),
		},
	})
	// The access log line is JSON once API Gateway substitutes
	// $context.error.messageString, which it writes quoted and escaped;
	// cdk-nag parses the format before substitution and fails on that
	// unquoted variable.
	a.stage = api.DeploymentStage()
	cdkutil.Suppress(a.stage, "Serverless-APIGWStructuredLogging", "the access log format is a JSON object (accessLogFormat); it contains $context.error.messageString unquoted because API Gateway writes that variable already quoted and escaped, so the format parses as JSON only after substitution")
	if !props.Tracing {
		cdkutil.Suppress(a.stage, "Serverless-APIGWXrayEnabled", tracingOff)
	}
	a.restApi = api

	ttl := props.AuthorizerCacheTtl
	if ttl == nil {
		ttl = awscdk.Duration_Seconds(jsii.Number(DefaultAuthorizerCacheSeconds))
	}
	sources := []*string{}
	if *ttl.ToSeconds(nil) > 0 {
		sources = append(sources, awsapigateway.IdentitySource_Header(jsii.String("Authorization")))
	}
	auth := awsapigateway.NewRequestAuthorizer(a, jsii.String("Authorizer"), &awsapigateway.RequestAuthorizerProps{
		Handler:         a.authorizerFn.Invocable(),
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
	// instead of two per method: 24 methods would otherwise put 48
	// statements in the function's resource policy, whose size is capped.
	integration := awsapigateway.NewLambdaIntegration(a.apiFn.Invocable(), &awsapigateway.LambdaIntegrationOptions{
		Proxy: jsii.Bool(true), ScopePermissionToMethod: jsii.Bool(false),
	})

	resources := addResources(api.Root(), contract.Paths())
	// Every path parameter is required ({event_id}, {subscription_id}).
	pathParams := func(path string) *map[string]*bool {
		params := contract.PathParams(path)
		if len(params) == 0 {
			return nil
		}
		m := map[string]*bool{}
		for _, p := range params {
			m["method.request.path."+p] = jsii.Bool(true)
		}
		return &m
	}
	for _, r := range contract.Routes() {
		opts := &awsapigateway.MethodOptions{
			Authorizer:        auth,
			AuthorizationType: awsapigateway.AuthorizationType_CUSTOM,
			RequestValidator:  validator,
			RequestParameters: pathParams(r.Path),
		}
		if r.Public() {
			// No authorizer: it would refuse the request without a key,
			// and a cached allow or deny must not depend on it. The
			// function reads no credential on this route.
			opts.Authorizer = nil
			opts.AuthorizationType = awsapigateway.AuthorizationType_NONE
		}
		m := resources[r.Path].AddMethod(jsii.String(r.Method), integration, opts)
		if r.Public() {
			cdkutil.Suppress(m, "AwsSolutions-APIG4", r.String()+" serves the API's OpenAPI document, which holds nothing of any tenant's, to clients without an API key; every other method of every path, this one's included (ANY), keeps the authorizer")
		}
	}
	// Another method on a known resource goes to the function too, which
	// answers 405 with the Allow header after authentication, exactly as
	// the local server does. Without it API Gateway would answer
	// MISSING_AUTHENTICATION_TOKEN (our 404), unlike the contract.
	for _, path := range contract.Paths() {
		res := resources[path]
		opts := &awsapigateway.MethodOptions{
			Authorizer:        auth,
			AuthorizationType: awsapigateway.AuthorizationType_CUSTOM,
			RequestValidator:  validator,
			RequestParameters: pathParams(path),
		}
		res.AddMethod(jsii.String("ANY"), integration, opts)
	}

	for _, g := range gatewayErrors(a.keySources) {
		o := &awsapigateway.GatewayResponseOptions{
			Type: g.typ(),
			ResponseHeaders: &map[string]*string{
				"Content-Type": jsii.String("'application/json'"),
				// Every response carries X-Request-Id, API Gateway's
				// own answers included (the body's request_id), and echoes
				// the client's X-Correlation-Id as the function does
				// (none sent: none answered).
				"X-Request-Id":     jsii.String("context.requestId"),
				"X-Correlation-Id": jsii.String("method.request.header.X-Correlation-Id"),
			},
			Templates: &map[string]*string{
				"application/json": jsii.String(gatewayErrorBody(g)),
			},
		}
		if g.status != "" {
			o.StatusCode = jsii.String(g.status)
		}
		if g.retryAfter {
			(*o.ResponseHeaders)["Retry-After"] = jsii.String("'1'")
		}
		if a.cors != nil {
			for k, v := range corsGatewayHeaders(*a.cors) {
				(*o.ResponseHeaders)[k] = v
			}
		}
		api.AddGatewayResponse(jsii.String(g.id), o)
	}

	switch {
	case props.WebAclArn != nil:
		awswafv2.NewCfnWebACLAssociation(a, jsii.String("WebAcl"), &awswafv2.CfnWebACLAssociationProps{
			ResourceArn: a.stage.StageArn(),
			WebAclArn:   props.WebAclArn,
		})
	case props.RateLimit != nil && props.RateLimit.Disabled:
		cdkutil.Suppress(a.stage, "AwsSolutions-APIG3", "RateLimit.Disabled and no WebAclArn: the deployer chose no web ACL (every tenant then shares the stage-wide throttle)")
	default:
		a.webAcl = newRateLimitAcl(a, props.RateLimit)
		awswafv2.NewCfnWebACLAssociation(a, jsii.String("RateLimitAssociation"), &awswafv2.CfnWebACLAssociationProps{
			ResourceArn: a.stage.StageArn(),
			WebAclArn:   a.webAcl.AttrArn(),
		})
	}
	cdkutil.Suppress(api, "AwsSolutions-APIG2", "request bodies are validated by the API function against the HTTP contract (JSON errors with specific codes, identical locally and on AWS); a second, coarser JSON-schema check at the edge would answer the same input with different errors. The request validator checks required parameters")
	cdkutil.Suppress(api, "AwsSolutions-COG4", "tenants authenticate with API keys (stored as SHA-256 hashes) through a Lambda REQUEST authorizer; there are no Cognito users in this design")
	if role := api.Node().TryFindChild(jsii.String("CloudWatchRole")); role != nil {
		cdkutil.Suppress(role, "AwsSolutions-IAM4", "AmazonAPIGatewayPushToCloudWatchLogs is the policy AWS documents for API Gateway's account-level logging role; API Gateway writes to log groups it names itself at runtime", "Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs")
	} else if props.CloudWatchRole == nil {
		awscdk.Annotations_Of(a).AddWarningV2(jsii.String(WarningNoCloudWatchRole), jsii.String(
			"no API Gateway CloudWatch role is created: cdk.json's "+FlagDisableCloudWatchRole+" is true. The stage's access and execution logs need the account's role "+
				"(AWS::ApiGateway::Account) in this region, or the stage fails to deploy: set it once per account and region (another stack, or the console), "+
				"or set TriggersApiProps.CloudWatchRole to true to create it here, or to false to say the account has one (and silence this warning)"))
	}
}

// addResources adds the resources of paths under root, parents first (in
// the order paths give them), and returns them by path.
func addResources(root awsapigateway.IResource, paths []string) map[string]awsapigateway.Resource {
	out := map[string]awsapigateway.Resource{}
	var add func(path string) awsapigateway.IResource
	add = func(path string) awsapigateway.IResource {
		if path == "" {
			return root
		}
		if r, ok := out[path]; ok {
			return r
		}
		i := strings.LastIndex(path, "/")
		r := add(path[:i]).AddResource(jsii.String(path[i+1:]), nil)
		out[path] = r
		return r
	}
	for _, p := range paths {
		add(p)
	}
	return out
}

// setEventsProfile tells fn the events table's profile when it is not the
// default (EVENTS_PROFILE unset is the seed profile), and that its tenants
// may be sharded when the table says so (eventstore.Sharded), so the
// templates of unsharded seed-profile stacks stay as they were.
func setEventsProfile(fn *golambda.GoFunction, t eventstore.IEventsTable) {
	if p := t.Profile(); p != schema.ProfileSeed {
		fn.Function.AddEnvironment(jsii.String(contract.EnvEventsProfile), jsii.String(string(p)), nil)
	}
	if s, ok := t.(eventstore.Sharded); ok && s.Sharded() {
		fn.Function.AddEnvironment(jsii.String(contract.EnvEventsSharding), jsii.String("on"), nil)
	}
}

// sameNamespace returns another TriggersApi of a's stack whose metrics
// namespace is a's, or nil.
func sameNamespace(a *TriggersApi) *TriggersApi {
	for _, c := range *awscdk.Stack_Of(a).Node().FindAll(constructs.ConstructOrder_PREORDER) {
		if o, ok := c.(*TriggersApi); ok && o != a && o.metricsNamespace == a.metricsNamespace {
			return o
		}
	}
	return nil
}

// deployedPath is c's path with its stack's part replaced by the stack's
// name (StackProps.StackName): "triggers-prod-api/Triggers" for a stack
// "TriggersApi" deployed as triggers-prod-api. Two deployments of one
// stack id under different stack names (dev and prod from one app) get
// different paths; a stack whose name is its id (the default) keeps its
// construct path. A nested stack's name is known at deploy time only: its
// construct path then.
func deployedPath(c constructs.IConstruct) string {
	path := *c.Node().Path()
	stack := awscdk.Stack_Of(c)
	name := stack.StackName()
	if name == nil || *awscdk.Token_IsUnresolved(name) {
		return path
	}
	rel, ok := strings.CutPrefix(path, *stack.Node().Path()+"/")
	if !ok {
		return path
	}
	return *name + "/" + rel
}

// uniqueName names what the API's CloudWatch metrics are keyed by (the
// RestApi's name, the ApiName dimension; the web ACL's metric name, the
// WebACL dimension) after the construct's deployed path (deployedPath), so
// two Triggers APIs in one account and region (dev and prod, say, even
// from one stack id with different stack names) never share metrics or
// alarms: characters other than letters, digits, '-', '_' and '.' become
// '-', and a path over 100 characters keeps its last 83 and a hash of the
// whole.
func uniqueName(path string) string {
	b := []byte(path)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '-'
		}
	}
	s := string(b)
	if len(s) > 100 {
		h := fnv.New64a()
		h.Write([]byte(path))
		s = fmt.Sprintf("%s-%016x", s[len(s)-83:], h.Sum64())
	}
	return s
}
