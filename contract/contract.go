// Package contract declares, once, the names the infrastructure (the
// constructs under constructs/) and the runtime (the Lambda handlers under
// lambda/ and internal/) must agree on: environment variable names, the HTTP
// routes, the runtime's metric names and dimension, and the log fields the
// saved Logs Insights queries read.
//
// It is a leaf package: it imports nothing but the standard library (no
// jsii, no AWS SDK), so every Lambda binary can import it without growing.
// Tests on both sides tie them to it: assertions checks that the
// synthesized template uses exactly these values, and the runtime's tests
// check that the handlers serve every route and log every field.
package contract

import (
	"slices"
	"strings"
	"time"
)

// AuthorizerTenantKey is the key of the tenant id in the context the
// authorizer returns to API Gateway: the API function reads it from the
// proxy event (requestContext.authorizer.tenantId), the stage's access log
// from $context.authorizer.tenantId.
const AuthorizerTenantKey = "tenantId"

// AuthorizerShardsKey and AuthorizerReadShardsKey are the keys of a
// sharded tenant's write and read shard counts in the authorizer's
// context (absent for an unsharded tenant). API Gateway hands context
// values to the integration as strings.
const (
	AuthorizerShardsKey     = "shards"
	AuthorizerReadShardsKey = "readShards"
)

// DefaultAuthorizerCacheSeconds is how long API Gateway caches the
// authorizer's answer for a key when the construct is not told otherwise
// (triggersapi.TriggersApiProps.AuthorizerCacheTtl); MaxAuthorizerCacheSeconds
// is the most API Gateway allows. The answer carries the tenant's shard
// counts, so a growth of a sharded tenant's write count waits that long
// before it takes effect (internal/apikey, docs/sharding.md).
const (
	DefaultAuthorizerCacheSeconds = 300
	MaxAuthorizerCacheSeconds     = 3600
)

// Environment variables the functions read. The constructs set them, the
// runtime (lambda/fnconfig) reads them.
const (
	// EnvWriterRegion names the one region whose API accepts writes when
	// the events table is a global table (docs/multi-region.md): the API
	// function in any other region answers writes 503 unavailable, and
	// every new event records the region that accepted it
	// (schema.AttrOriginRegion). Unset: a single-region service.
	EnvWriterRegion = "WRITER_REGION"
	// EnvEventsTable is the events table's name (API function).
	EnvEventsTable = "EVENTS_TABLE"
	// EnvEventsProfile is the events table's profile, "seed" (the
	// default, also when unset) or "lean" (schema.EventsProfile): the API
	// and webhook functions write and read the table's indexes by it.
	EnvEventsProfile = "EVENTS_PROFILE"
	// EnvEventsSharding turns write sharding of tenants on for the events
	// table: "on" or "off" (the default, also when unset). The API and
	// webhook functions then place a sharded tenant's events in its shards
	// (docs/sharding.md).
	EnvEventsSharding = "EVENTS_SHARDING"
	// EnvAPIKeysTable is the API-keys table's name (authorizer).
	EnvAPIKeysTable = "API_KEYS_TABLE"
	// EnvCursorSecretARN names the Secrets Manager secret that signs inbox
	// cursors (API function on AWS).
	EnvCursorSecretARN = "CURSOR_SECRET_ARN"
	// EnvCursorSecret holds the cursor HMAC key itself (local development
	// only; the constructs never set it).
	EnvCursorSecret = "CURSOR_SECRET"
	// EnvRetentionDays is how many days events live before TTL (API function).
	EnvRetentionDays = "RETENTION_DAYS"
	// EnvMetricsNamespace is the CloudWatch namespace of the API function's
	// embedded-metric-format lines.
	EnvMetricsNamespace = "METRICS_NAMESPACE"
	// EnvAPIKeySources selects the headers that may carry the API key (API
	// function and authorizer).
	EnvAPIKeySources = "API_KEY_SOURCES"
	// EnvDeliveryQueueURL is the delivery queue's URL (stream consumer).
	EnvDeliveryQueueURL = "DELIVERY_QUEUE_URL"
	// EnvDeadLetterQueueURL is where the stream consumer parks malformed
	// records with their content (the stream's failure queue), so the
	// shard moves past them.
	EnvDeadLetterQueueURL = "DEAD_LETTER_QUEUE_URL"
	// EnvLogLevel sets the functions' log level (debug, info, warn, error).
	EnvLogLevel = "LOG_LEVEL"
	// EnvDynamoDBEndpoint overrides the DynamoDB endpoint (local only).
	EnvDynamoDBEndpoint = "DYNAMODB_ENDPOINT"
	// EnvSQSEndpoint overrides the SQS endpoint (local only).
	EnvSQSEndpoint = "SQS_ENDPOINT"

	// EnvWebhookQueueURL is the webhook retry queue's URL: the API
	// function sends redeliveries there, the webhook function its
	// retries. Unset on the API function: webhook delivery is off and
	// the subscription routes answer 404 webhooks_disabled.
	EnvWebhookQueueURL = "WEBHOOK_QUEUE_URL"
	// EnvWebhookSchedule is the retry schedule of the webhook function
	// (ParseRetrySchedule: "5s,5m,30m,2h,5h,10h,10h").
	EnvWebhookSchedule = "WEBHOOK_SCHEDULE"
	// EnvWebhookTimeout bounds one webhook request (a Go duration).
	EnvWebhookTimeout = "WEBHOOK_TIMEOUT"
	// EnvWebhookDisableAfter is how long a subscription may fail without
	// a success before it is disabled (a Go duration).
	EnvWebhookDisableAfter = "WEBHOOK_DISABLE_AFTER"
	// EnvWebhookAllowPrivate lets webhook targets resolve to private and
	// loopback addresses (local development only; the constructs never
	// set it).
	EnvWebhookAllowPrivate = "WEBHOOK_ALLOW_PRIVATE"
	// EnvWebhookSecretsKey is the KMS key (its ARN) that seals webhook
	// signing secrets: the API function encrypts each new secret with it
	// and stores only the ciphertext; the webhook function decrypts to
	// sign. Set on both wherever webhook delivery is on.
	EnvWebhookSecretsKey = "WEBHOOK_SECRETS_KEY"
	// EnvWebhookParallel bounds the attempts of one message (a round to a
	// tenant's subscriptions) made at once (a whole number).
	EnvWebhookParallel = "WEBHOOK_PARALLEL"
	// EnvWebhookBreakerThreshold is how many failures in a row open an
	// endpoint's circuit (a whole number).
	EnvWebhookBreakerThreshold = "WEBHOOK_BREAKER_THRESHOLD"
	// EnvWebhookBreakerCooldown is how long a circuit first stays open (a
	// Go duration; it doubles with each failed probe).
	EnvWebhookBreakerCooldown = "WEBHOOK_BREAKER_COOLDOWN"
	// EnvWebhookSlowAfter opens an endpoint's circuit when a request to
	// it is still unanswered after it (a Go duration; "off" turns it off).
	EnvWebhookSlowAfter = "WEBHOOK_SLOW_AFTER"
	// EnvWebhookEndpointRate caps the requests per second to one
	// subscription's endpoint (a whole number; 0 or unset: no cap).
	EnvWebhookEndpointRate = "WEBHOOK_ENDPOINT_RATE"
	// EnvWebhookSlowLaneAfter marks an endpoint slow for a while when a
	// request to it was answered after at least this long (a Go duration;
	// "off" turns the slow lane off): each attempt to a slow endpoint
	// first takes one of its tenant's slow-lane slots.
	EnvWebhookSlowLaneAfter = "WEBHOOK_SLOW_LANE_AFTER"
	// EnvWebhookTenantSlowConcurrency bounds the requests to one tenant's
	// slow endpoints in flight at once, across every instance (a whole
	// number).
	EnvWebhookTenantSlowConcurrency = "WEBHOOK_TENANT_SLOW_CONCURRENCY"
	// DefaultWebhookTimeoutSeconds bounds one webhook request when
	// WEBHOOK_TIMEOUT is not set, and is what the construct sets by
	// default (one constant for the construct, the function and make dev).
	DefaultWebhookTimeoutSeconds = 10
	// WebhookStoreMargin is the time the webhook function keeps, beyond
	// one request's timeout, for an attempt's store writes: it starts an
	// attempt only with WEBHOOK_TIMEOUT plus this much left before its
	// deadline, so its timeout must be at least that long.
	WebhookStoreMargin = 3 * time.Second
)

// The encryption context of a sealed webhook signing secret (KMS): the
// runtime (internal/webhook/secretbox) encrypts and decrypts with these
// keys, and the constructs' IAM grants allow the key only for a context
// made of exactly them, with SecretPurpose as the purpose. A ciphertext
// decrypts only under the tenant and subscription it was sealed for.
const (
	SecretContextPurpose      = "purpose"
	SecretContextTenant       = "tenant"
	SecretContextSubscription = "subscription_id"
	// SecretPurpose is the value of SecretContextPurpose.
	SecretPurpose = "triggers-webhook-signing-secret"
)

// HTTP methods of the contract's routes.
const (
	MethodGet    = "GET"
	MethodPost   = "POST"
	MethodPatch  = "PATCH"
	MethodDelete = "DELETE"
)

// Paths of the HTTP API v1. PathEvent's "{event_id}" is the path
// parameter, written as API Gateway writes it.
const (
	PathEvents      = "/v1/events"
	PathEventsBatch = "/v1/events/batch"
	PathEvent       = "/v1/events/{event_id}"
	PathInbox       = "/v1/inbox"
	PathInboxAck    = "/v1/inbox/ack"
	// PathEventPrefix is PathEvent up to its parameter.
	PathEventPrefix = "/v1/events/"
	// EventIDParam is PathEvent's path parameter.
	EventIDParam = "event_id"

	// PathEventAttempts lists an event's webhook delivery attempts;
	// PathEventRedeliver re-drives a failed event's webhook delivery.
	PathEventAttempts  = "/v1/events/{event_id}/attempts"
	PathEventRedeliver = "/v1/events/{event_id}/redeliver"
	// PathSubscriptions creates and lists webhook subscriptions,
	// PathSubscription reads, updates and deletes one,
	// PathSubscriptionRotate rotates its signing secret,
	// PathSubscriptionAttempts lists its delivery attempts,
	// PathSubscriptionRecover delivers again the events whose delivery to
	// it failed for good within a time range.
	PathSubscriptions        = "/v1/subscriptions"
	PathSubscription         = "/v1/subscriptions/{subscription_id}"
	PathSubscriptionRotate   = "/v1/subscriptions/{subscription_id}/rotate"
	PathSubscriptionAttempts = "/v1/subscriptions/{subscription_id}/attempts"
	PathSubscriptionRecover  = "/v1/subscriptions/{subscription_id}/recover"
	// SubscriptionIDParam is the subscription paths' parameter.
	SubscriptionIDParam = "subscription_id"

	// PathOpenAPI serves the API's OpenAPI document (contract/openapi),
	// without an API key.
	PathOpenAPI = "/v1/openapi.json"
)

// Route is one (method, path) of the HTTP API.
type Route struct {
	Method string
	Path   string
}

// Routes returns the contract's routes, all served by the API function,
// behind the authorizer but for the Public ones. It returns a new slice
// each call.
func Routes() []Route { return slices.Clone(routes) }

// Public reports whether r is served without an API key: API Gateway
// invokes no authorizer for it (its method's authorization is NONE) and
// the API function reads no credential. Other methods on its path still
// need a key (they are 405s after authentication).
func (r Route) Public() bool { return slices.Contains(public, r) }

// public are the routes of Routes served without an API key: the OpenAPI
// document, which holds nothing of a tenant's.
var public = []Route{{MethodGet, PathOpenAPI}}

var routes = []Route{
	{MethodPost, PathEvents},
	{MethodPost, PathEventsBatch},
	{MethodGet, PathEvent},
	{MethodPatch, PathEvent},
	{MethodGet, PathInbox},
	{MethodPost, PathInboxAck},
	{MethodGet, PathEventAttempts},
	{MethodPost, PathEventRedeliver},
	{MethodGet, PathSubscriptions},
	{MethodPost, PathSubscriptions},
	{MethodDelete, PathSubscription},
	{MethodPost, PathSubscriptionRotate},
	{MethodGet, PathSubscription},
	{MethodPatch, PathSubscription},
	{MethodGet, PathSubscriptionAttempts},
	{MethodPost, PathSubscriptionRecover},
	{MethodGet, PathOpenAPI},
}

// PathParams returns the parameters of path, in order: "event_id" for
// PathEvent.
func PathParams(path string) []string {
	var out []string
	for _, seg := range strings.Split(path, "/") {
		if len(seg) > 2 && seg[0] == '{' && seg[len(seg)-1] == '}' {
			out = append(out, seg[1:len(seg)-1])
		}
	}
	return out
}

// Paths returns the API's resources, in the order Routes first names them.
func Paths() []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range routes {
		if !seen[r.Path] {
			seen[r.Path] = true
			out = append(out, r.Path)
		}
	}
	return out
}

// The runtime's own metrics (embedded metric format, internal/emf), read by
// the dashboards and by TriggersApi's MetricXxx methods.
const (
	// MetricEventsIngested counts events stored (no dimension).
	MetricEventsIngested = "EventsIngested"
	// MetricEventsRejected counts events refused, by DimensionReason.
	MetricEventsRejected = "EventsRejected"
	// DimensionReason is EventsRejected's dimension: the error code.
	DimensionReason = "Reason"
	// MetricRequestLatency is the API function's time to answer one
	// request, in milliseconds, by DimensionRoute: the query latency the
	// spec sets targets for (inbox p95 < 50 ms, story 001 AC2).
	MetricRequestLatency = "RequestLatency"
	// DimensionRoute is RequestLatency's dimension: RouteOf the request
	// ("GET /v1/inbox"), at most len(Routes())+1 values.
	DimensionRoute = "Route"
	// RouteOther is the route of a request no route of Routes serves (an
	// unknown path, or a method its path does not allow).
	RouteOther = "other"
	// MetricWebhookAttempts counts webhook delivery attempts (webhook
	// function), by DimensionOutcome: delivered, failed or gone.
	MetricWebhookAttempts = "WebhookAttempts"
	// DimensionOutcome is WebhookAttempts' dimension.
	DimensionOutcome = "Outcome"
	// MetricWebhookDeferred counts attempts put off without being made,
	// by DimensionReason: circuit_open (the endpoint's circuit is open),
	// probe_busy (a probe of its half-open circuit is under way),
	// rate_limited (its per-second cap is used up), tenant_busy (the
	// endpoint is slow and its tenant's slow lane is full) or behind_wake
	// (the endpoint is slow and attempts put off before are parked behind
	// its queued wake: the new one joins them, to be made after them).
	// Each line also carries the properties tenant and subscription_id.
	MetricWebhookDeferred = "WebhookDeferred"
	// MetricWebhookCircuitsOpened counts endpoint circuits opened, with
	// the properties tenant, subscription_id and cause (failures, slow or
	// probe): the dashboard groups them by tenant.
	MetricWebhookCircuitsOpened = "WebhookCircuitsOpened"
	// The reasons of MetricWebhookDeferred.
	DeferredCircuitOpen = "circuit_open"
	DeferredProbeBusy   = "probe_busy"
	DeferredRateLimited = "rate_limited"
	// DeferredTenantBusy: the endpoint is slow (marked so by a recent
	// slow answer) and every slot of its tenant's slow lane is taken.
	DeferredTenantBusy = "tenant_busy"
	// DeferredBehindWake: the endpoint is slow and its subscription's
	// wake is queued, due soon, to make the attempts parked behind it
	// (put off before): a new attempt joins them instead of asking the
	// slow lane for a slot, so that the lane serves the oldest events
	// first. Not a sign of a full lane by itself: the wake may find a
	// slot free.
	DeferredBehindWake = "behind_wake"
	// MetricSubscriptionsDisabled counts subscriptions disabled after
	// failing for too long (no dimension).
	MetricSubscriptionsDisabled = "SubscriptionsDisabled"
	// MetricsNamespacePrefix starts the default metrics namespace,
	// "Triggers/<stack name>".
	MetricsNamespacePrefix = "Triggers/"
)

// Log fields of the API function's JSON log lines (log/slog), read by the
// saved Logs Insights queries of constructs/monitoring.
const (
	// LogMsgRequest is the msg of the one line logged per request.
	LogMsgRequest = "request"
	// LogMsgCircuitOpened is the msg of the webhook function's line when
	// an endpoint's circuit opens (fields tenant, subscription_id, cause,
	// until): the dashboard counts them by tenant.
	LogMsgCircuitOpened = "circuit opened"
	// LogFieldSubscriptionID names a webhook subscription in the webhook
	// function's lines.
	LogFieldSubscriptionID = "subscription_id"

	LogFieldMsg           = "msg"
	LogFieldLevel         = "level"
	LogFieldRequestID     = "request_id"
	LogFieldCorrelationID = "correlation_id"
	LogFieldTenant        = "tenant"
	LogFieldMethod        = "method"
	LogFieldPath          = "path"
	LogFieldRoute         = "route"
	LogFieldStatus        = "status"
	LogFieldDurationMs    = "duration_ms"
	LogFieldErrorCode     = "error_code"
	LogFieldError         = "error"
)

// RequestLogFields returns the fields of the per-request line, in the order
// the API function writes them (error_code and error only on errors). It
// returns a new slice each call.
func RequestLogFields() []string { return slices.Clone(requestLogFields) }

var requestLogFields = []string{
	LogFieldRequestID, LogFieldCorrelationID, LogFieldTenant, LogFieldMethod,
	LogFieldPath, LogFieldRoute, LogFieldStatus, LogFieldDurationMs, LogFieldErrorCode, LogFieldError,
}
