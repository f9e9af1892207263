package triggersapi

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/triggers-dev/triggers/constructs/eventstore"
	"github.com/triggers-dev/triggers/constructs/golambda"
	"github.com/triggers-dev/triggers/constructs/internal/cdkutil"
	"github.com/triggers-dev/triggers/constructs/internal/tablegrant"
	"github.com/triggers-dev/triggers/contract"
)

// Defaults and fixed settings of WebhookOptions.
const (
	// DefaultWebhookFunctionTimeoutSeconds is the webhook function's
	// timeout: one batch of 10 messages may wait on several webhook
	// requests of up to Timeout each.
	DefaultWebhookFunctionTimeoutSeconds = 300
	// DefaultWebhookTimeoutSeconds bounds one webhook request.
	DefaultWebhookTimeoutSeconds = contract.DefaultWebhookTimeoutSeconds
	// DefaultWebhookDisableAfterDays is how long a subscription may fail
	// without a success before it is disabled.
	DefaultWebhookDisableAfterDays = 5
	// DefaultWebhookLogLevel is the webhook function's LOG_LEVEL.
	DefaultWebhookLogLevel = "info"
	// WebhookBatchSize is the batch size of both event sources (the
	// most SQS returns in one receive).
	WebhookBatchSize = 10
	// WebhookMaxBatchingWindowSeconds is how long Lambda gathers a batch
	// before invoking: at most this much latency for fuller batches.
	WebhookMaxBatchingWindowSeconds = 1
	// VisibilityTimeoutFactor: a queue consumed by a function has a
	// visibility timeout of at least this many times the function's
	// timeout (AWS's guidance for SQS event sources: the poller's own
	// retries of a throttled invoke happen within it).
	VisibilityTimeoutFactor = 6
	// MaxWebhookDisableAfter is the longest DisableAfter the runtime
	// accepts (90 days).
	MaxWebhookDisableAfter = 90 * 24 * time.Hour
	// MaxSQSDelay is the longest delay SQS gives one message
	// (DelaySeconds 900): a longer schedule step hops (see WebhookDelivery).
	MaxSQSDelay = 15 * time.Minute
	// DefaultWebhookReservedConcurrency is the webhook function's reserved
	// concurrency: the most instances delivery ever runs.
	DefaultWebhookReservedConcurrency = 30
	// DefaultWebhookDeliveryMaxConcurrency is the delivery queue's event
	// source's MaximumConcurrency (new events).
	DefaultWebhookDeliveryMaxConcurrency = 20
	// DefaultWebhookRetryMaxConcurrency is the retry queue's event
	// source's MaximumConcurrency (retries, deferred attempts,
	// redeliveries).
	DefaultWebhookRetryMaxConcurrency = 10
	// DefaultWebhookParallel bounds one message's attempts made at once:
	// a tenant's most subscriptions, so a round never waits for a slot.
	DefaultWebhookParallel = 20
	// DefaultWebhookBreakerThreshold is how many failures in a row open an
	// endpoint's circuit.
	DefaultWebhookBreakerThreshold = 5
	// DefaultWebhookBreakerCooldownSeconds is how long a circuit first
	// stays open (doubling with each failed probe, up to an hour).
	DefaultWebhookBreakerCooldownSeconds = 30
	// DefaultWebhookSlowAfterSeconds opens an endpoint's circuit when one
	// of its requests is still unanswered after it.
	DefaultWebhookSlowAfterSeconds = 5
	// DefaultWebhookSlowLaneAfterMillis marks an endpoint slow (its
	// attempts then take its tenant's slow lane) when a request to it was
	// answered after at least this long.
	DefaultWebhookSlowLaneAfterMillis = 1000
	// DefaultWebhookTenantSlowConcurrency bounds the requests to one
	// tenant's slow endpoints in flight at once.
	DefaultWebhookTenantSlowConcurrency = 4
)

// DefaultWebhookSchedule returns the default retry schedule, Svix's:
// 5s, 5m, 30m, 2h, 5h, 10h, 10h (8 attempts over about 27.6 hours).
func DefaultWebhookSchedule() []awscdk.Duration {
	var out []awscdk.Duration
	for _, d := range contract.DefaultRetrySchedule() {
		out = append(out, awscdk.Duration_Millis(jsii.Number(float64(d.Milliseconds()))))
	}
	return out
}

// WebhookOptions configures push delivery to webhook subscriptions (see
// WebhookDelivery). The zero value takes every default.
type WebhookOptions struct {
	// Function sizes the webhook function. Its timeout must exceed
	// Timeout; the queues' visibility timeouts are 6 times it, so it must
	// be a literal (a token fails synth).
	//
	// Default: 256 MiB, 5 minutes; its reserved concurrency is
	// ReservedConcurrency.
	Function *FunctionOptions
	// Schedule is the retry schedule: delay i is the wait between
	// attempt i+1 failing and attempt i+2 (the first attempt is at once),
	// so n delays allow n+1 attempts, then delivery gives up. 1 to 20
	// delays, each positive and at most 24 hours, never decreasing. The
	// runtime adds ±20% jitter (WEBHOOK_SCHEDULE).
	//
	// Default: DefaultWebhookSchedule(), "5s,5m,30m,2h,5h,10h,10h" like
	// Svix: 8 attempts over about 27.6 hours.
	Schedule []awscdk.Duration
	// Timeout bounds one webhook request (connect, TLS, send, response),
	// 1-30 seconds (WEBHOOK_TIMEOUT).
	//
	// Default: 10 seconds.
	Timeout awscdk.Duration
	// DisableAfter is how long a subscription may keep failing, with no
	// success, before it is disabled; 1 hour to 90 days
	// (WEBHOOK_DISABLE_AFTER).
	//
	// Default: 5 days.
	DisableAfter awscdk.Duration
	// MaxReceiveCount moves a retry-queue message to the retry DLQ after
	// this many receives (1-1000): a task the function keeps failing on
	// (DynamoDB down, a bug), not a failing webhook, which is an
	// attempt recorded and retried per Schedule.
	//
	// A literal: a token fails synth (it sets WEBHOOK_ROUND_HOLD, computed
	// at synth).
	//
	// Default: 5.
	MaxReceiveCount float64
	// LogLevel is the webhook function's LOG_LEVEL: debug, info, warn or error.
	//
	// Default: "info".
	LogLevel string
	// ReservedConcurrency is the webhook function's reserved concurrency:
	// the most instances delivery runs whatever its backlog, so the API,
	// the authorizer and the account's other functions keep the rest of
	// the account's concurrency. At least DeliveryMaxConcurrency +
	// RetryMaxConcurrency (the event sources would be throttled
	// otherwise), at most 1000. Set this, not Function.ReservedConcurrency.
	//
	// A token (a CfnParameter's ValueAsNumber) reaches the template
	// unchecked.
	//
	// Default: 30 (DefaultWebhookReservedConcurrency).
	ReservedConcurrency float64
	// DeliveryMaxConcurrency is the delivery queue's event source's
	// MaximumConcurrency (new events' first attempts), 2-1000. Room for
	// the batches a tenant's hanging endpoints hold until their circuits
	// open (each for up to a webhook timeout) beside everyone else's.
	//
	// A token reaches the template unchecked.
	//
	// Default: 20.
	DeliveryMaxConcurrency float64
	// RetryMaxConcurrency is the retry queue's event source's
	// MaximumConcurrency (retries, deferred attempts, redeliveries),
	// 2-1000. Apart from the delivery queue's: a retry backlog never takes
	// new events' instances.
	//
	// A token reaches the template unchecked.
	//
	// Default: 10.
	RetryMaxConcurrency float64
	// Parallel bounds the attempts of one message (a round to one
	// tenant's subscriptions) made at once, 1-20 (WEBHOOK_PARALLEL). Below
	// 20 a round to many hanging endpoints holds its invocation for
	// several webhook timeouts.
	//
	// A literal: a token fails synth (the function reads an environment
	// string).
	//
	// Default: 20.
	Parallel float64
	// CircuitBreaker configures the endpoints' circuit breaker, shared by
	// every instance through the events table: while an endpoint's circuit
	// is open its attempts are put off (scheduled, not made, not counted
	// as failures), then one probe at a time goes.
	//
	// Default: see CircuitBreakerOptions.
	CircuitBreaker *CircuitBreakerOptions
	// EndpointRateLimit caps the requests per second to one subscription's
	// endpoint, counted across every instance (WEBHOOK_ENDPOINT_RATE,
	// 1-10000); requests beyond it wait for the next second. Costs one
	// write to the events table per attempt.
	//
	// A literal: a token fails synth (the function reads an environment
	// string).
	//
	// Default: 0, no cap.
	EndpointRateLimit float64
	// SlowLane keeps a tenant whose endpoints answer successfully but
	// slowly (too fast to open their circuits) from holding many of the
	// function's instances: an endpoint answered slowly is marked slow
	// for 10 minutes, and the requests to a tenant's slow endpoints share
	// a few slots, counted across every instance; the attempts that find
	// them taken are put off (WebhookDeferred reason tenant_busy), not
	// failed. Fast endpoints never touch it.
	//
	// Default: see SlowLaneOptions (on).
	SlowLane *SlowLaneOptions
	// SecretsKey is the symmetric KMS key that seals the subscriptions'
	// signing secrets (WEBHOOK_SECRETS_KEY): the table, its stream, its
	// archive and backups hold only ciphertext bound to its tenant and
	// subscription. Only the webhook function may decrypt with it
	// (GrantOpenSecrets); the API function may only encrypt
	// (GrantSealSecrets). Give a key, not an alias, whose key policy lets
	// this account's IAM policies grant it (CDK's default key policy
	// does). Deleting or disabling the key makes every stored secret
	// unusable: no webhook is signed until it is back.
	//
	// Default: a new key inside the WebhookDelivery (id "SecretsKey"),
	// with yearly automatic rotation, retained when removed from the
	// stack (SecretsKeyRemovalPolicy).
	SecretsKey awskms.IKey
	// SecretsKeyRemovalPolicy applies to the key made by default (not to
	// a SecretsKey you give).
	//
	// Default: awscdk.RemovalPolicy_RETAIN.
	SecretsKeyRemovalPolicy awscdk.RemovalPolicy
}

// CircuitBreakerOptions configure the endpoints' circuit breaker. Zero
// values take the defaults.
type CircuitBreakerOptions struct {
	// Threshold is how many failures in a row open an endpoint's circuit,
	// 1-1000 (WEBHOOK_BREAKER_THRESHOLD). A literal: a token fails synth.
	//
	// Default: 5.
	Threshold float64
	// Cooldown is how long a circuit first stays open, 1 second to 1 hour;
	// each failed probe doubles it, up to an hour (WEBHOOK_BREAKER_COOLDOWN).
	//
	// Default: 30 seconds.
	Cooldown awscdk.Duration
	// SlowAfter opens an endpoint's circuit (for Cooldown) when one of its
	// requests is still unanswered after it, so an endpoint that hangs
	// holds only the requests already in flight; 100 ms up to the webhook
	// Timeout (WEBHOOK_SLOW_AFTER).
	//
	// Default: 5 seconds.
	SlowAfter awscdk.Duration
	// DisableSlowAfter turns the slow-endpoint watch off (SlowAfter is
	// then ignored).
	//
	// Default: false.
	DisableSlowAfter bool
}

// SlowLaneOptions configure the tenants' slow lanes. Zero values take
// the defaults.
type SlowLaneOptions struct {
	// After marks an endpoint slow when a request to it was answered
	// (whatever the answer) after at least this long; 100 ms up to the
	// webhook Timeout (WEBHOOK_SLOW_LANE_AFTER). A literal: a token fails
	// synth.
	//
	// Default: 1 second.
	After awscdk.Duration
	// TenantConcurrency is how many requests to one tenant's slow
	// endpoints may be in flight at once, across every instance, 1-1000,
	// and less than DeliveryMaxConcurrency and RetryMaxConcurrency (the
	// attempts the lane puts off are made on the retry queue)
	// (WEBHOOK_TENANT_SLOW_CONCURRENCY). A literal: a token fails synth.
	//
	// Default: 4, or the narrower of DeliveryMaxConcurrency and
	// RetryMaxConcurrency, minus 1, when that is less.
	TenantConcurrency float64
	// Disable turns the slow lane off (After and TenantConcurrency are
	// then ignored): a tenant's slow but successful endpoints may then
	// hold as many instances as its events keep busy.
	//
	// Default: false.
	Disable bool
}

// WebhookDeliveryProps configures a WebhookDelivery.
type WebhookDeliveryProps struct {
	// EventsTable holds the events, the subscriptions and the attempts.
	// Required.
	EventsTable eventstore.IEventsTable
	// DeliveryQueue carries one message per new event
	// (StreamDelivery.DeliveryQueue()); the webhook function consumes it,
	// so it belongs to webhook delivery: no other consumer should read
	// it. Its visibility timeout must be at least 6 times the webhook
	// function's timeout (checked when the queue is made in this app).
	// Required.
	DeliveryQueue awssqs.IQueue
	// WebhookOptions size the function and set the retry policy.
	//
	// Default: see WebhookOptions.
	WebhookOptions
	// LogRetention of the webhook function's logs.
	//
	// Default: awslogs.RetentionDays_ONE_MONTH.
	LogRetention awslogs.RetentionDays
	// Tracing turns on AWS X-Ray for the webhook function.
	//
	// Default: false.
	Tracing bool
	// PrebuiltDir holds the function's binary in webhooks/bootstrap (see
	// TriggersApiProps.PrebuiltDir). WebhookOptions.Function.Code takes
	// precedence.
	//
	// Default: built at synth from WebhooksPackage.
	PrebuiltDir string
	// MetricsNamespace is the CloudWatch namespace of the function's own
	// metrics (METRICS_NAMESPACE): a literal (a token fails synth) of
	// 1-255 characters of letters, digits and . - _ / # : space, not
	// starting with AWS/ (checked at synth; the function refuses others at
	// every start).
	//
	// Two WebhookDelivery in one stack (a TriggersApi's among them) must
	// not share it: the second one built with the same namespace fails
	// synth.
	//
	// Default: "Triggers/<stack name>", as TriggersApi's.
	MetricsNamespace string
}

// WebhookDelivery pushes each new event to the tenant's webhook
// subscriptions: a Go function (WebhooksPackage) consumes the delivery
// queue, POSTs each event to every matching subscription with Standard
// Webhooks signatures, records every attempt in the events table, and
// moves the event through its status machine.
//
// Retries go to a retry queue of their own, never back to the delivery
// queue. A failed attempt is recorded, a retry task is sent to the retry
// queue with a per-message delay (DelaySeconds), and the delivery message
// is done: retries never block the delivery queue behind them, nor count
// towards its dead-letter queue, and a subscriber down for hours costs
// the queue nothing. SQS caps a message's delay at 15 minutes
// (MaxSQSDelay): the function re-sends a task that is not yet due with
// the remaining delay, so a 10-hour step hops 40 times (40 small
// messages, cheaper than one stuck visibility timeout). The API function
// sends redelivery tasks (POST /v1/events/{event_id}/redeliver) to the
// same queue (GrantRedeliver). A task the function itself keeps failing
// on goes to the retry dead-letter queue after MaxReceiveCount receives.
//
// Both queues feed the function through SQS event sources with batches of
// 10, a 1-second batching window and partial batch responses
// (ReportBatchItemFailures); their visibility timeouts are 6 times the
// function's timeout. TriggersApi composes one with id "Webhooks" when
// TriggersApiProps.Webhooks is set.
type WebhookDelivery struct {
	constructs.Construct

	// Made by NewWebhookDelivery, or imported (FromTriggersApiAttributes).
	fn                        golambda.IGoFunction
	key                       awskms.IKey
	delivery, retry, retryDLQ awssqs.IQueue
	schedule                  string
	ns                        string
	// roundHold is contract.RoundHoldFor the retry queue ("" imported).
	roundHold string
}

// IWebhookDelivery is webhook push delivery as other constructs use it:
// its function, queues, key, metrics and grants (WebhookDelivery, or one
// deployed elsewhere: FromTriggersApiAttributes).
type IWebhookDelivery interface {
	constructs.IConstruct
	// WebhookFunction returns the function delivering webhooks.
	WebhookFunction() golambda.IGoFunction
	// SecretsKey returns the KMS key that seals the signing secrets.
	SecretsKey() awskms.IKey
	// GrantSealSecrets lets grantee encrypt new signing secrets.
	GrantSealSecrets(grantee awsiam.IGrantable) awsiam.Grant
	// GrantOpenSecrets lets grantee decrypt stored signing secrets.
	GrantOpenSecrets(grantee awsiam.IGrantable) awsiam.Grant
	// DeliveryQueue returns the queue of new events the function consumes.
	DeliveryQueue() awssqs.IQueue
	// RetryQueue returns the queue of retry and redelivery tasks.
	RetryQueue() awssqs.IQueue
	// RetryDeadLetterQueue returns the retry queue's dead-letter queue.
	RetryDeadLetterQueue() awssqs.IQueue
	// Schedule returns the retry schedule in force (WEBHOOK_SCHEDULE).
	Schedule() string
	// MetricsNamespace returns the namespace of the function's metrics.
	MetricsNamespace() string
	// MetricWebhookAttempts returns the attempts with one outcome.
	MetricWebhookAttempts(outcome string, opts *awscloudwatch.MetricOptions) awscloudwatch.Metric
	// MetricSubscriptionsDisabled returns the subscriptions disabled.
	MetricSubscriptionsDisabled(opts *awscloudwatch.MetricOptions) awscloudwatch.Metric
	// MetricWebhookDeferred returns the attempts put off for one reason.
	MetricWebhookDeferred(reason string, opts *awscloudwatch.MetricOptions) awscloudwatch.Metric
	// MetricCircuitsOpened returns the endpoint circuits opened.
	MetricCircuitsOpened(opts *awscloudwatch.MetricOptions) awscloudwatch.Metric
	// GrantRedeliver lets grantee queue a redelivery.
	GrantRedeliver(grantee awsiam.IGrantable) awsiam.Grant
}

var _ IWebhookDelivery = (*WebhookDelivery)(nil)

// WebhookFunction returns the function delivering webhooks (a
// *golambda.GoFunction).
func (w *WebhookDelivery) WebhookFunction() golambda.IGoFunction { return w.fn }

// SecretsKey returns the KMS key that seals the subscriptions' signing
// secrets (given, or made by the construct).
func (w *WebhookDelivery) SecretsKey() awskms.IKey { return w.key }

// GrantSealSecrets lets grantee (the API function, which makes secrets)
// encrypt new signing secrets with SecretsKey: exactly kms:Encrypt on the
// key, for an encryption context made of exactly the secret's purpose,
// tenant and subscription (contract.SecretContext*). It cannot decrypt.
func (w *WebhookDelivery) GrantSealSecrets(grantee awsiam.IGrantable) awsiam.Grant {
	return grantSecretsKey(w.key, grantee, "kms:Encrypt")
}

// GrantOpenSecrets lets grantee decrypt stored signing secrets: exactly
// kms:Decrypt on SecretsKey, under the same encryption-context
// conditions. The construct grants it to its own function only: whoever
// holds it can read every tenant's secrets.
func (w *WebhookDelivery) GrantOpenSecrets(grantee awsiam.IGrantable) awsiam.Grant {
	return grantSecretsKey(w.key, grantee, "kms:Decrypt")
}

// SecretsKeyConditions are the IAM conditions of both secrets-key grants:
// the encryption context names the purpose contract.SecretPurpose, holds
// a tenant and a subscription id, and nothing else. A grant cannot check
// the tenant's value (any tenant's secret is the function's to open); the
// context binds each ciphertext to its own.
func SecretsKeyConditions() map[string]any {
	return map[string]any{
		"StringEquals": map[string]any{
			"kms:EncryptionContext:" + contract.SecretContextPurpose: contract.SecretPurpose,
		},
		"ForAllValues:StringEquals": map[string]any{
			"kms:EncryptionContextKeys": []any{contract.SecretContextPurpose, contract.SecretContextTenant, contract.SecretContextSubscription},
		},
		"Null": map[string]any{
			"kms:EncryptionContext:" + contract.SecretContextTenant:       "false",
			"kms:EncryptionContext:" + contract.SecretContextSubscription: "false",
		},
	}
}

// grantSecretsKey grants action on key to grantee's own policy, under
// SecretsKeyConditions.
func grantSecretsKey(key awskms.IKey, grantee awsiam.IGrantable, action string) awsiam.Grant {
	conds := map[string]*map[string]any{}
	for k, v := range SecretsKeyConditions() {
		m := v.(map[string]any)
		conds[k] = &m
	}
	return awsiam.Grant_AddToPrincipal(&awsiam.GrantOnPrincipalOptions{
		Grantee: grantee, Actions: jsii.Strings(action),
		ResourceArns: jsii.Strings(*key.KeyArn()), Conditions: &conds,
	})
}

// DeliveryQueue returns the queue of new events the function consumes.
func (w *WebhookDelivery) DeliveryQueue() awssqs.IQueue { return w.delivery }

// RetryQueue returns the queue of retry and redelivery tasks.
func (w *WebhookDelivery) RetryQueue() awssqs.IQueue { return w.retry }

// RetryDeadLetterQueue returns the queue receiving retry tasks received
// more than MaxReceiveCount times.
func (w *WebhookDelivery) RetryDeadLetterQueue() awssqs.IQueue { return w.retryDLQ }

// Schedule returns the retry schedule in force, as WEBHOOK_SCHEDULE
// gives it ("5s,5m,30m,2h,5h,10h,10h" by default).
func (w *WebhookDelivery) Schedule() string { return w.schedule }

// MetricsNamespace returns the CloudWatch namespace of the webhook
// function's own metrics (METRICS_NAMESPACE).
func (w *WebhookDelivery) MetricsNamespace() string { return w.ns }

// MetricWebhookAttempts returns the webhook delivery attempts with one
// outcome: "delivered", "failed" or "gone" (contract.MetricWebhookAttempts
// by contract.DimensionOutcome in MetricsNamespace; Sum unless opts say
// otherwise).
func (w *WebhookDelivery) MetricWebhookAttempts(outcome string, opts *awscloudwatch.MetricOptions) awscloudwatch.Metric {
	return runtimeMetric(w.ns, contract.MetricWebhookAttempts, map[string]*string{contract.DimensionOutcome: jsii.String(outcome)}, opts)
}

// MetricSubscriptionsDisabled returns the subscriptions disabled after
// failing for DisableAfter (contract.MetricSubscriptionsDisabled in
// MetricsNamespace; Sum unless opts say otherwise).
func (w *WebhookDelivery) MetricSubscriptionsDisabled(opts *awscloudwatch.MetricOptions) awscloudwatch.Metric {
	return runtimeMetric(w.ns, contract.MetricSubscriptionsDisabled, nil, opts)
}

// MetricWebhookDeferred returns the attempts put off without being made,
// for one reason: contract.DeferredCircuitOpen, DeferredProbeBusy,
// DeferredRateLimited, DeferredTenantBusy or DeferredBehindWake
// (contract.MetricWebhookDeferred by contract.DimensionReason in
// MetricsNamespace; Sum unless opts say otherwise).
func (w *WebhookDelivery) MetricWebhookDeferred(reason string, opts *awscloudwatch.MetricOptions) awscloudwatch.Metric {
	return runtimeMetric(w.ns, contract.MetricWebhookDeferred, map[string]*string{contract.DimensionReason: jsii.String(reason)}, opts)
}

// MetricCircuitsOpened returns the endpoint circuits opened
// (contract.MetricWebhookCircuitsOpened in MetricsNamespace; Sum unless
// opts say otherwise).
func (w *WebhookDelivery) MetricCircuitsOpened(opts *awscloudwatch.MetricOptions) awscloudwatch.Metric {
	return runtimeMetric(w.ns, contract.MetricWebhookCircuitsOpened, nil, opts)
}

// GrantRedeliver lets grantee (the API function) queue a redelivery:
// exactly sqs:SendMessage on the retry queue.
func (w *WebhookDelivery) GrantRedeliver(grantee awsiam.IGrantable) awsiam.Grant {
	return grantSendMessage(w.retry, grantee)
}

// grantSendMessage grants exactly sqs:SendMessage on q (which also
// allows SendMessageBatch), plus the KMS actions of a customer-managed key.
func grantSendMessage(q awssqs.IQueue, grantee awsiam.IGrantable) awsiam.Grant {
	g := awsiam.Grant_AddToPrincipal(&awsiam.GrantOnPrincipalOptions{
		Grantee: grantee, Actions: jsii.Strings("sqs:SendMessage"),
		ResourceArns: jsii.Strings(*q.QueueArn()),
	})
	if key := q.EncryptionMasterKey(); key != nil {
		g = g.Combine(key.GrantEncryptDecrypt(grantee))
	}
	return g
}

// WebhookEventsTableActions returns the webhook function's actions on the
// events table (its ARN only, no index): read events and subscriptions,
// query attempts and subscriptions, claim and record attempts, update an
// event's status and a subscription's health, delete a subscription (410
// Gone), and the transactions that settle an event's status (conditional
// on its attempts: ConditionCheckItem), start a redelivery round and keep
// the subscription count (TransactWriteItems is authorized by each of its
// items' actions). It returns a new slice each call.
func WebhookEventsTableActions() []string { return slices.Clone(webhookEventsTableActions) }

var webhookEventsTableActions = []string{
	"dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem",
	"dynamodb:ConditionCheckItem",
}

// ApiWebhookActions returns what the API function gets on the events table
// (its ARN only) when webhooks are on, beyond its grants for events:
// deleting a subscription (DELETE /v1/subscriptions/{subscription_id}).
// Creating, listing and rotating subscriptions, listing attempts and
// moving an event to retrying use the actions it already has (PutItem,
// Query, GetItem, UpdateItem). It returns a new slice each call.
func ApiWebhookActions() []string { return slices.Clone(apiWebhookActions) }

var apiWebhookActions = []string{"dynamodb:DeleteItem"}

// durationOf converts d; ok is false for a token.
func durationOf(d awscdk.Duration) (time.Duration, bool) {
	if cdkutil.IsDurationToken(d) {
		return 0, false
	}
	return time.Duration(*d.ToMilliseconds(nil)) * time.Millisecond, true
}

// webhookSettings are WebhookOptions resolved: defaults applied, as the
// function reads them.
type webhookSettings struct {
	schedule     contract.RetrySchedule
	timeout      time.Duration
	disableAfter time.Duration
	fnTimeout    time.Duration
	receives     float64
	logLevel     string
	reserved     float64
	deliveryMax  float64
	retryMax     float64
	parallel     float64
	threshold    float64
	cooldown     time.Duration
	slowAfter    time.Duration // 0: off
	endpointRate float64
	slowLane     time.Duration // 0: off
	tenantSlow   float64
}

// env is the function's environment for the isolation settings.
func (s webhookSettings) env() map[string]*string {
	slow := "off"
	if s.slowAfter > 0 {
		slow = s.slowAfter.String()
	}
	out := map[string]*string{
		contract.EnvWebhookParallel:         jsii.String(fmt.Sprint(s.parallel)),
		contract.EnvWebhookBreakerThreshold: jsii.String(fmt.Sprint(s.threshold)),
		contract.EnvWebhookBreakerCooldown:  jsii.String(s.cooldown.String()),
		contract.EnvWebhookSlowAfter:        jsii.String(slow),
	}
	if s.endpointRate > 0 {
		out[contract.EnvWebhookEndpointRate] = jsii.String(fmt.Sprint(s.endpointRate))
	}
	out[contract.EnvWebhookSlowLaneAfter] = jsii.String("off")
	if s.slowLane > 0 {
		out[contract.EnvWebhookSlowLaneAfter] = jsii.String(s.slowLane.String())
		out[contract.EnvWebhookTenantSlowConcurrency] = jsii.String(fmt.Sprint(s.tenantSlow))
	}
	return out
}

// resolveWebhooks applies the defaults and validates o. Error messages
// start with prefix ("Webhooks." in TriggersApi) before the prop name.
func resolveWebhooks(o *WebhookOptions, prefix string) (webhookSettings, error) {
	s := webhookSettings{
		schedule:     contract.DefaultRetrySchedule(),
		timeout:      DefaultWebhookTimeoutSeconds * time.Second,
		disableAfter: DefaultWebhookDisableAfterDays * 24 * time.Hour,
		fnTimeout:    DefaultWebhookFunctionTimeoutSeconds * time.Second,
		receives:     DefaultDLQMaxReceiveCount,
		logLevel:     DefaultWebhookLogLevel,
		reserved:     DefaultWebhookReservedConcurrency,
		deliveryMax:  DefaultWebhookDeliveryMaxConcurrency,
		retryMax:     DefaultWebhookRetryMaxConcurrency,
		parallel:     DefaultWebhookParallel,
		threshold:    DefaultWebhookBreakerThreshold,
		cooldown:     DefaultWebhookBreakerCooldownSeconds * time.Second,
		slowAfter:    DefaultWebhookSlowAfterSeconds * time.Second,
		slowLane:     DefaultWebhookSlowLaneAfterMillis * time.Millisecond,
		tenantSlow:   DefaultWebhookTenantSlowConcurrency,
	}
	if o == nil {
		return s, nil
	}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(prefix+format, args...)) }
	literal := func(name string, d awscdk.Duration) (time.Duration, bool) {
		v, ok := durationOf(d)
		if !ok {
			bad("%s is a token: give a literal duration (the function reads it as a Go duration string)", name)
		}
		return v, ok
	}
	if o.Schedule != nil {
		sched := contract.RetrySchedule{}
		tokens := false
		for i, d := range o.Schedule {
			if d == nil {
				bad("Schedule element %d is nil: give a duration such as awscdk.Duration_Minutes(5)", i+1)
				tokens = true
				continue
			}
			v, ok := literal(fmt.Sprintf("Schedule element %d", i+1), d)
			tokens = tokens || !ok
			sched = append(sched, v)
		}
		if !tokens {
			if err := sched.Validate(); err != nil {
				detail := strings.TrimPrefix(err.Error(), contract.ErrInvalidRetrySchedule.Error()+": ")
				bad("Schedule %q is invalid (%s): give 1 to %d delays, each positive and at most %s, never decreasing (default %s)",
					sched.String(), detail, contract.MaxRetryScheduleLen, contract.RetrySchedule{contract.MaxRetryDelay}, contract.DefaultRetrySchedule())
			}
			s.schedule = sched
		}
	}
	if o.Timeout != nil {
		if v, ok := literal("Timeout", o.Timeout); ok {
			if v < time.Second || v > 30*time.Second {
				bad("Timeout %s is outside 1s-30s: one webhook request gets 1 to 30 seconds (default 10s)", v)
			}
			s.timeout = v
		}
	}
	if o.DisableAfter != nil {
		if v, ok := literal("DisableAfter", o.DisableAfter); ok {
			if v < time.Hour || v > MaxWebhookDisableAfter {
				bad("DisableAfter %s is outside 1h-2160h: give a subscription at least an hour and at most 90 days of failures before disabling it (default 120h, 5 days)", v)
			}
			s.disableAfter = v
		}
	}
	if r := o.MaxReceiveCount; isToken(r) {
		bad("MaxReceiveCount is a token: give a literal (it sets how long a round's hold lasts, WEBHOOK_ROUND_HOLD, computed at synth; default 5)")
	} else if r != 0 {
		if r < 1 || r > 1000 || r != float64(int(r)) {
			bad("MaxReceiveCount %v is outside 1-1000: give how many receives a retry task gets before the retry DLQ (default 5)", r)
		}
		s.receives = r
	}
	if o.SecretsKey != nil {
		if _, alias := o.SecretsKey.(awskms.IAlias); alias {
			bad("SecretsKey is an alias: give the key itself (awskms.Key_FromKeyArn): IAM grants on an alias's ARN do not reach its key")
		}
		if o.SecretsKeyRemovalPolicy != "" {
			bad("SecretsKeyRemovalPolicy %s is set with SecretsKey: it applies to the key the construct makes; set the removal policy on your own key instead", o.SecretsKeyRemovalPolicy)
		}
	}
	if l := o.LogLevel; l != "" {
		if !slices.Contains([]string{"debug", "info", "warn", "error"}, l) {
			bad("LogLevel %q is invalid: use debug, info, warn or error", l)
		}
		s.logLevel = l
	}
	// whole checks a literal v against lo-hi and sets *dst. A token passes
	// through to the template when passToken (a property CloudFormation
	// resolves) and is refused otherwise (a value the function reads
	// from an environment string, formatted at synth): never dropped.
	whole := func(name string, v, lo, hi float64, dst *float64, what string, passToken bool) {
		switch {
		case v == 0:
			return
		case isToken(v) && passToken:
			*dst = v
			return
		case isToken(v):
			bad("%s is a token: give a literal, read by the function from an environment variable written at synth: %s", name, what)
			return
		}
		if v < lo || v > hi || v != float64(int64(v)) {
			bad("%s %v is outside %v-%v: %s", name, v, lo, hi, what)
		}
		*dst = v
	}
	whole("ReservedConcurrency", o.ReservedConcurrency, 1, 1000, &s.reserved, "give the most instances webhook delivery may run (default 30)", true)
	whole("DeliveryMaxConcurrency", o.DeliveryMaxConcurrency, 2, 1000, &s.deliveryMax, fmt.Sprintf("an SQS event source's MaximumConcurrency is 2 to 1000 (default %d)", DefaultWebhookDeliveryMaxConcurrency), true)
	whole("RetryMaxConcurrency", o.RetryMaxConcurrency, 2, 1000, &s.retryMax, fmt.Sprintf("an SQS event source's MaximumConcurrency is 2 to 1000 (default %d)", DefaultWebhookRetryMaxConcurrency), true)
	whole("Parallel", o.Parallel, 1, 20, &s.parallel, fmt.Sprintf("give how many attempts one message makes at once (default %d)", DefaultWebhookParallel), false)
	whole("EndpointRateLimit", o.EndpointRateLimit, 1, 10000, &s.endpointRate, "give requests per second per endpoint, or 0 for no cap", false)
	if !isToken(s.reserved) && !isToken(s.deliveryMax) && !isToken(s.retryMax) && s.reserved < s.deliveryMax+s.retryMax {
		bad("ReservedConcurrency %v is less than DeliveryMaxConcurrency %v + RetryMaxConcurrency %v = %v: the event sources would be throttled; raise ReservedConcurrency to at least %v or lower their maximum concurrency",
			s.reserved, s.deliveryMax, s.retryMax, s.deliveryMax+s.retryMax, s.deliveryMax+s.retryMax)
	}
	if b := o.CircuitBreaker; b != nil {
		whole("CircuitBreaker.Threshold", b.Threshold, 1, 1000, &s.threshold, "give how many failures in a row open an endpoint's circuit (default 5)", false)
		if b.Cooldown != nil {
			if v, ok := literal("CircuitBreaker.Cooldown", b.Cooldown); ok {
				if v < time.Second || v > time.Hour {
					bad("CircuitBreaker.Cooldown %s is outside 1s-1h: a circuit stays open between a second and an hour at first (default 30s)", v)
				}
				s.cooldown = v
			}
		}
		if b.SlowAfter != nil && !b.DisableSlowAfter {
			if v, ok := literal("CircuitBreaker.SlowAfter", b.SlowAfter); ok {
				s.slowAfter = v
			}
		}
		if b.DisableSlowAfter {
			s.slowAfter = 0
		}
	}
	if s.slowAfter != 0 && (s.slowAfter < 100*time.Millisecond || s.slowAfter > s.timeout) {
		bad("CircuitBreaker.SlowAfter %s is outside 100ms-%s (the webhook Timeout): a request unanswered that long opens its endpoint's circuit; set DisableSlowAfter to turn the watch off", s.slowAfter, s.timeout)
	}
	if l := o.SlowLane; l != nil && l.Disable {
		s.slowLane = 0
	} else {
		given := false
		if l != nil {
			if l.After != nil {
				if v, ok := literal("SlowLane.After", l.After); ok {
					s.slowLane = v
					if v < 100*time.Millisecond || v > s.timeout {
						bad("SlowLane.After %s is outside 100ms-%s (the webhook Timeout): a request answered after that long marks its endpoint slow (default 1s); set SlowLane.Disable to turn the slow lane off", v, s.timeout)
					}
				}
			}
			whole("SlowLane.TenantConcurrency", l.TenantConcurrency, 1, 1000, &s.tenantSlow,
				fmt.Sprintf("give how many requests to one tenant's slow endpoints may be in flight at once (default %d)", DefaultWebhookTenantSlowConcurrency), false)
			given = l.TenantConcurrency != 0
		}
		// Each queue's instances bound the lane: new attempts take it on
		// the delivery queue, and the attempts it put off are made by
		// their subscriptions' wakes on the retry queue.
		narrowest, queue := s.deliveryMax, "DeliveryMaxConcurrency"
		if s.retryMax < narrowest && !isToken(s.retryMax) {
			narrowest, queue = s.retryMax, "RetryMaxConcurrency"
		}
		switch {
		case isToken(narrowest) || isToken(s.tenantSlow) || s.tenantSlow < narrowest:
		case !given:
			// The default is narrowed below a queue of 2 to 4 instances:
			// as wide, it would let one tenant's slow endpoints hold
			// every one of them (found by review).
			s.tenantSlow = narrowest - 1
		case queue == "RetryMaxConcurrency":
			bad("SlowLane.TenantConcurrency %v is not less than RetryMaxConcurrency %v: the attempts the slow lane puts off are made on the retry queue, so one tenant's slow endpoints could hold every retry instance, every tenant's retries waiting; lower it (default %d, or the narrower queue's maximum concurrency minus 1 when that is less), raise RetryMaxConcurrency, or set SlowLane.Disable",
				s.tenantSlow, s.retryMax, DefaultWebhookTenantSlowConcurrency)
		default:
			bad("SlowLane.TenantConcurrency %v is not less than DeliveryMaxConcurrency %v: one tenant's slow endpoints could still hold every delivery instance; lower it (default %d, or DeliveryMaxConcurrency - 1 when that is less) or set SlowLane.Disable",
				s.tenantSlow, s.deliveryMax, DefaultWebhookTenantSlowConcurrency)
		}
	}
	if f := o.Function; f != nil {
		errs = append(errs, validateFunction(prefix+"Function", f)...)
		if f.ReservedConcurrency != nil {
			bad("Function.ReservedConcurrency %v is not used for the webhook function: set ReservedConcurrency (default 30), which is checked against the event sources' maximum concurrency", *f.ReservedConcurrency)
		}
		if p := f.ProvisionedConcurrency; !isToken(s.reserved) && p > s.reserved {
			bad("Function.ProvisionedConcurrency %v is above ReservedConcurrency %v: Lambda refuses that; lower it or raise ReservedConcurrency", p, s.reserved)
		}
		if f.Timeout != nil {
			v, ok := durationOf(f.Timeout)
			if !ok {
				// The function never reads its own timeout: the queues
				// and the round hold are made from it.
				bad("Function.Timeout is a token: give a literal duration (the retry and delivery queues' visibility timeouts are %d times it, and a round's hold, %s, follows from them, all computed at synth; default 5m)",
					VisibilityTimeoutFactor, contract.EnvWebhookRoundHold)
			} else {
				switch {
				case v > 15*time.Minute:
					// validateFunction reports it (golambda's Validate).
				case v < s.timeout+contract.WebhookStoreMargin:
					bad("Function.Timeout %s is shorter than the webhook Timeout %s plus %s for an attempt's store writes: the function would never start an attempt; raise Function.Timeout to at least %s (default 5m)", v, s.timeout, contract.WebhookStoreMargin, s.timeout+contract.WebhookStoreMargin)
				}
				s.fnTimeout = v
			}
		}
	}
	return s, errors.Join(errs...)
}

// minVisibility is the visibility timeout a queue the function consumes needs.
func (s webhookSettings) minVisibility() time.Duration {
	return VisibilityTimeoutFactor * s.fnTimeout
}

// queueVisibility returns q's visibility timeout when q is a queue of
// this app with a literal one (SQS's default, 30 seconds, when unset).
func queueVisibility(q awssqs.IQueue) (time.Duration, bool) {
	cfn, ok := q.Node().DefaultChild().(awssqs.CfnQueue)
	if !ok || cfn == nil {
		return 0, false
	}
	v := cfn.VisibilityTimeout()
	switch {
	case v == nil:
		return 30 * time.Second, true
	case isToken(*v):
		return 0, false
	}
	return time.Duration(*v) * time.Second, true
}

// sameDeliveryNamespace returns another WebhookDelivery of w's stack with
// w's metrics namespace (a standalone one beside a TriggersApi's, say),
// or nil.
func sameDeliveryNamespace(w *WebhookDelivery) *WebhookDelivery {
	for _, c := range *awscdk.Stack_Of(w).Node().FindAll(constructs.ConstructOrder_PREORDER) {
		if o, ok := c.(*WebhookDelivery); ok && o != w && o.ns == w.ns {
			return o
		}
	}
	return nil
}

// NewWebhookDelivery creates the webhook function, the retry queue and its
// dead-letter queue, and the event sources on the delivery and retry
// queues. Invalid props panic with an error naming the value and the fix.
func NewWebhookDelivery(scope constructs.Construct, id *string, props *WebhookDeliveryProps) *WebhookDelivery {
	switch {
	case props == nil || props.EventsTable == nil:
		panic(fmt.Errorf("webhookdelivery %q: props.EventsTable is required: pass the events table holding events and subscriptions", cdkutil.Deref(id)))
	case props.DeliveryQueue == nil:
		panic(fmt.Errorf("webhookdelivery %q: props.DeliveryQueue is required: pass the queue of new events (StreamDelivery.DeliveryQueue())", cdkutil.Deref(id)))
	}
	s, err := resolveWebhooks(&props.WebhookOptions, "")
	// TriggersApi checks its own (ValidateProps); the function refuses a
	// bad one at every start.
	if nsErr := metricsNamespaceError(props.MetricsNamespace, "the webhook function"); nsErr != nil {
		err = errors.Join(err, nsErr)
	}
	if err != nil {
		panic(fmt.Errorf("webhookdelivery %q: invalid props:\n%w", cdkutil.Deref(id), err))
	}
	if v, ok := queueVisibility(props.DeliveryQueue); ok && v < s.minVisibility() {
		panic(fmt.Errorf("webhookdelivery %q: the delivery queue's visibility timeout %s is under %d x the webhook function's timeout (%s) = %s: raise it (DeliveryOptions.QueueVisibilityTimeout; TriggersApi does so itself when Webhooks is set and QueueVisibilityTimeout is not)",
			cdkutil.Deref(id), v, VisibilityTimeoutFactor, s.fnTimeout, s.minVisibility()))
	}

	w := &WebhookDelivery{delivery: props.DeliveryQueue, schedule: s.schedule.String(), ns: props.MetricsNamespace,
		roundHold: contract.RoundHoldFor(int(s.receives), s.minVisibility()).String()}
	constructs.NewConstruct_Override(w, scope, id)
	retention := props.LogRetention
	if retention == "" {
		retention = awslogs.RetentionDays_ONE_MONTH
	}
	if w.ns == "" {
		w.ns = contract.MetricsNamespacePrefix + *awscdk.Stack_Of(w).StackName()
	}
	if other := sameDeliveryNamespace(w); other != nil {
		panic(fmt.Errorf("webhookdelivery %q: its metrics namespace %q is that of WebhookDelivery %q in the same stack: their webhook metrics (dimensioned by outcome and reason only) and alarms would mix; give one of them its own MetricsNamespace (WebhookDeliveryProps.MetricsNamespace, or TriggersApiProps.MetricsNamespace for the one a TriggersApi makes), such as %q",
			cdkutil.Deref(id), w.ns, *other.Node().Path(), contract.MetricsNamespacePrefix+*awscdk.Stack_Of(w).StackName()+"/"+*w.Node().Id()))
	}
	visibility := awscdk.Duration_Seconds(jsii.Number(s.minVisibility().Seconds()))

	retryDLQ := cdkutil.NewTLSOnlyQueue(w, "RetryDLQ", &awssqs.QueueProps{
		MaxMessageSizeBytes: jsii.Number(1048576),
		RetentionPeriod:     awscdk.Duration_Days(jsii.Number(14)),
	})
	w.retryDLQ = retryDLQ
	cdkutil.Suppress(retryDLQ, "Serverless-SQSRedrivePolicy", "this queue is the webhook retry queue's dead-letter queue: tasks end here, with no further redrive")

	w.retry = cdkutil.NewTLSOnlyQueue(w, "RetryQueue", &awssqs.QueueProps{
		MaxMessageSizeBytes: jsii.Number(1048576),
		VisibilityTimeout:   visibility,
		RetentionPeriod:     awscdk.Duration_Days(jsii.Number(4)),
		DeadLetterQueue:     &awssqs.DeadLetterQueue{Queue: retryDLQ, MaxReceiveCount: jsii.Number(s.receives)},
	})

	w.key = props.SecretsKey
	if w.key == nil {
		removal := props.SecretsKeyRemovalPolicy
		if removal == "" {
			removal = awscdk.RemovalPolicy_RETAIN
		}
		w.key = awskms.NewKey(w, jsii.String("SecretsKey"), &awskms.KeyProps{
			Description:       jsii.String("Triggers: seals webhook signing secrets (encrypt: API function; decrypt: webhook function)"),
			EnableKeyRotation: jsii.Bool(true),
			RemovalPolicy:     removal,
		})
	}

	fo := FunctionOptions{}
	if props.Function != nil {
		fo = *props.Function
	}
	reserved := s.reserved
	fo.ReservedConcurrency = &reserved
	env := s.env()
	for k, v := range map[string]*string{
		contract.EnvEventsTable:         props.EventsTable.TableName(),
		contract.EnvWebhookQueueURL:     w.retry.QueueUrl(),
		contract.EnvWebhookSchedule:     jsii.String(w.schedule),
		contract.EnvWebhookTimeout:      jsii.String(s.timeout.String()),
		contract.EnvWebhookDisableAfter: jsii.String(s.disableAfter.String()),
		contract.EnvMetricsNamespace:    jsii.String(w.ns),
		contract.EnvLogLevel:            jsii.String(s.logLevel),
		contract.EnvWebhookSecretsKey:   w.key.KeyArn(),
		contract.EnvWebhookRoundHold:    jsii.String(w.roundHold),
	} {
		env[k] = v
	}
	fn := newFunction(w, "Function", WebhooksPackage, "Triggers webhooks: push new events to subscriptions, with retries",
		functionDefaults{retention: retention, tracing: props.Tracing, prebuiltDir: props.PrebuiltDir,
			invokedBy: "invoked by SQS event source mappings on the delivery and retry queues, whose messages go to those queues' own dead-letter queues after MaxReceiveCount receives"},
		&fo, DefaultWebhookFunctionTimeoutSeconds, env)

	w.fn = fn
	setEventsProfile(fn, props.EventsTable)
	tablegrant.Grant(props.EventsTable, fn, tablegrant.On{Table: true, Write: true}, webhookEventsTableActions...)
	grantSendMessage(w.retry, fn)
	w.GrantOpenSecrets(fn)
	for _, src := range []struct {
		q   awssqs.IQueue
		max float64
	}{{props.DeliveryQueue, s.deliveryMax}, {w.retry, s.retryMax}} {
		fn.Invocable().AddEventSource(awslambdaeventsources.NewSqsEventSource(src.q, &awslambdaeventsources.SqsEventSourceProps{
			BatchSize:               jsii.Number(WebhookBatchSize),
			MaxBatchingWindow:       awscdk.Duration_Seconds(jsii.Number(WebhookMaxBatchingWindowSeconds)),
			ReportBatchItemFailures: jsii.Bool(true),
			MaxConcurrency:          jsii.Number(src.max),
		}))
	}
	// SQS event source mappings take no on-failure destination (that is
	// for stream and Kafka sources): a failed message returns to its
	// queue and, after MaxReceiveCount receives, goes to its dead-letter
	// queue.
	cdkutil.Suppress(fn.Function, "Serverless-LambdaEventSourceMappingDestination", "the mappings read SQS queues, for which Lambda offers no on-failure destination; failed messages return to their queue and move to its dead-letter queue (DeliveryDLQ, RetryDLQ) after MaxReceiveCount receives")
	return w
}

// webhookFunctionTimeout returns the webhook function's timeout in force
// for o (for TriggersApi's delivery queue default), ignoring errors.
func webhookFunctionTimeout(o *WebhookOptions) time.Duration {
	s, _ := resolveWebhooks(o, "")
	return s.fnTimeout
}
