package triggersapi

import (
	"maps"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigateway"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"

	"github.com/triggers-dev/triggers/constructs/dynamotable"
	"github.com/triggers-dev/triggers/constructs/eventstore"
	"github.com/triggers-dev/triggers/constructs/golambda"
	"github.com/triggers-dev/triggers/contract"
)

// Defaults of TriggersApiProps.
const (
	DefaultStageName              = "live"
	DefaultAuthorizerCacheSeconds = contract.DefaultAuthorizerCacheSeconds
	DefaultThrottlingRateLimit    = 100
	DefaultThrottlingBurstLimit   = 200
	DefaultRetentionDays          = 30
	DefaultDLQMaxReceiveCount     = 5
)

// The Go packages of the construct's functions, built by import path in the
// CDK app's module (which resolves this module from the module cache, a
// replace or a workspace). Build these for TriggersApiProps.PrebuiltDir.
const (
	ApiPackage            = "github.com/triggers-dev/triggers/lambda/api"
	AuthorizerPackage     = "github.com/triggers-dev/triggers/lambda/authorizer"
	StreamConsumerPackage = "github.com/triggers-dev/triggers/lambda/streamconsumer"
	// WebhooksPackage is the webhook function's, built only when
	// TriggersApiProps.Webhooks is set (or by a WebhookDelivery alone).
	WebhooksPackage = "github.com/triggers-dev/triggers/lambda/webhooks"
)

// PrebuiltDirs returns the subdirectories of TriggersApiProps.PrebuiltDir
// that hold each function's bootstrap, by package. It returns a new map
// each call.
func PrebuiltDirs() map[string]string { return maps.Clone(prebuiltDirs) }

var prebuiltDirs = map[string]string{
	ApiPackage:            "api",
	AuthorizerPackage:     "authorizer",
	StreamConsumerPackage: "streamconsumer",
	WebhooksPackage:       "webhooks",
}

// FunctionOptions size, place and build one of the construct's functions,
// or give its prebuilt code (golambda.FunctionOptions: memory, timeout,
// architecture, build tags and linker flags, environment, VPC, layers,
// role, log group, reserved and provisioned concurrency). Zero values take
// the function's defaults. A prebuilt Code holds a bootstrap built from the
// function's package (ApiPackage, AuthorizerPackage,
// StreamConsumerPackage or WebhooksPackage) for its Architecture.
type FunctionOptions = golambda.FunctionOptions

// TriggersApiProps configures a TriggersApi. A nil props takes every
// default.
type TriggersApiProps struct {
	// EventsTable stores the events.
	//
	// Default: a new eventstore.EventsTable inside this construct.
	EventsTable eventstore.IEventsTable
	// ApiKeysTable maps API-key hashes to tenants (schema.APIKeys()):
	// NewApiKeysTable, FromApiKeysTableAttributes, or any
	// dynamotable.ITable whose schema has schema.APIKeys()'s keys and
	// TenantIndex (checked at synth; another table fails naming the
	// difference).
	//
	// Default: a new table inside this construct.
	ApiKeysTable dynamotable.ITable
	// StageName is the API Gateway stage (the first path segment of the URL).
	//
	// Default: "live".
	StageName string
	// AuthorizerCacheTtl is how long API Gateway caches the authorizer's
	// decision per API key: also how long a revoked key keeps working.
	// Between 0 (no cache) and 1 hour. With caching, the identity source is
	// the Authorization header and the key is accepted from that header
	// only (the cache key must be exactly the credential checked): clients
	// send Authorization: Bearer <key>, and a request that also carries
	// X-Api-Key is a 401. With 0, either header works, never both.
	//
	// Default: 300 seconds.
	AuthorizerCacheTtl awscdk.Duration
	// ThrottlingRateLimit is the stage's steady-state requests per second.
	//
	// Default: 100.
	ThrottlingRateLimit float64
	// ThrottlingBurstLimit is the stage's burst of requests, a whole number
	// at least ThrottlingRateLimit.
	//
	// Default: 200.
	ThrottlingBurstLimit float64
	// LogRetention applies to the access log group and every function's logs.
	//
	// Default: awslogs.RetentionDays_ONE_MONTH.
	LogRetention awslogs.RetentionDays
	// ExecutionLogging is the stage's execution log level.
	//
	// Default: awsapigateway.MethodLoggingLevel_ERROR.
	ExecutionLogging awsapigateway.MethodLoggingLevel
	// CloudWatchRole creates the account-level role API Gateway needs to
	// write the stage's access and execution logs (an IAM role and
	// AWS::ApiGateway::Account, one per account and region: a second
	// stack that sets it takes it over). Without it, the account must
	// already have that role set, or the stage fails to deploy; nil
	// follows the CDK's feature flag
	// @aws-cdk/aws-apigateway:disableCloudWatchRole (cdk.json), like the
	// CDK's own RestApi, and warns at synth when the flag leaves the role
	// out.
	//
	// Default: nil: the role unless cdk.json sets the flag to true (new
	// CDK projects do).
	CloudWatchRole *bool
	// Tracing turns on AWS X-Ray for the stage and every function.
	//
	// Default: false.
	Tracing bool
	// Cors lets pages on other origins call the API from a browser:
	// preflight (OPTIONS) responses on every resource (API Gateway's, with
	// Idempotency-Key and X-Correlation-Id added to CDK's default
	// AllowHeaders when AllowHeaders is unset), and
	// Access-Control-Allow-Origin with Access-Control-Expose-Headers
	// (Retry-After, X-Request-Id, X-Correlation-Id, Location and
	// ExposeHeaders) on the answers: the API function's, for an allowed
	// Origin only (CORS_ALLOW_ORIGINS), and API Gateway's own error
	// answers (401, 403, 429...), which name the one allowed origin, "*",
	// or with several origins the request's Origin. AllowOrigins must be
	// literal origins as browsers send them ("https://app.example.com": no
	// path, no trailing slash, lower case, no default port, punycode
	// hosts) or "*" alone (not with AllowCredentials: browsers refuse a
	// credentialed preflight answered with "*"); synth fails otherwise,
	// naming the fix. A browser page holding an API key shows
	// it to its users: keep keys in backends where you can.
	//
	// Default: no CORS (browsers cannot call the API from other origins).
	Cors *awsapigateway.CorsOptions
	// DomainName maps a custom domain to the API.
	//
	// Default: the execute-api endpoint only.
	DomainName *awsapigateway.DomainNameOptions
	// WebAclArn associates your own AWS WAFv2 web ACL (REGIONAL scope)
	// with the stage instead of the one RateLimit creates (a stage has one
	// web ACL): put rate-based rules in it. (WAFv2 has no L2 construct;
	// this is its ARN.) Not together with RateLimit.
	//
	// Default: the rate-limit web ACL of RateLimit.
	WebAclArn *string
	// RateLimit sets per-API-key and per-address request limits in a web
	// ACL the construct creates, so one tenant cannot use up the stage's
	// shared throttle.
	//
	// Default: on, with RateLimitOptions' defaults.
	RateLimit *RateLimitOptions
	// RetentionDays is how long events live before TTL expires them, 1-3650.
	//
	// Default: 30.
	RetentionDays float64
	// CursorSecret is the HMAC key that signs inbox cursors (at least 32
	// bytes of SecretString).
	//
	// Default: a new generated Secrets Manager secret (64 characters).
	// On a global table, give the same secret in every region (a secret
	// with replica regions, imported by name in the others): cursors then
	// survive a failover (docs/multi-region.md).
	CursorSecret awssecretsmanager.ISecret
	// WriterRegion is the one region whose API accepts writes when the
	// events table is a global table (docs/multi-region.md): the API
	// function gets it as WRITER_REGION, answers writes in any other
	// region 503 unavailable (reads are served), and records in each new
	// event the region that accepted it, which the stream consumers
	// deliver from. A failover deploys every region's API stack with the
	// new writer region. Give it in every region's stack, the same value.
	//
	// Default: "", a single-region service (every write accepted, no
	// origin recorded).
	WriterRegion string
	// ApiFunction sizes the API function.
	//
	// Default: 256 MiB, 10 seconds.
	ApiFunction *FunctionOptions
	// AuthorizerFunction sizes the authorizer.
	//
	// Default: 256 MiB, 5 seconds.
	AuthorizerFunction *FunctionOptions
	// MetricsNamespace is the CloudWatch namespace of the API function's
	// own metrics (METRICS_NAMESPACE): a literal (a token fails synth) of
	// 1-255 characters of letters, digits and . - _ / # : space, not
	// starting with AWS/.
	//
	// Two TriggersApi in one stack must not share it: the second one
	// built with the same namespace (the default, say) fails synth; give
	// each API after the first its own.
	//
	// Default: "Triggers/<stack name>", so environments do not mix.
	MetricsNamespace string
	// PrebuiltDir holds the three functions' binaries, built beforehand (in
	// CI, say): api/bootstrap, authorizer/bootstrap and
	// streamconsumer/bootstrap, linux/arm64 executables built from
	// ApiPackage, AuthorizerPackage and StreamConsumerPackage (the layout
	// scripts/build-lambdas.sh writes under bin/). No Go command runs at
	// synth. A function's FunctionOptions.Code takes precedence.
	//
	// Default: the functions are built at synth from their packages, by
	// import path, in the CDK app's module.
	PrebuiltDir string
	// Delivery configures the stream consumer and its queues.
	//
	// Default: see DeliveryOptions.
	Delivery *DeliveryOptions
	// Webhooks turns on push delivery to webhook subscriptions: a
	// WebhookDelivery (id "Webhooks") consumes the delivery queue, which
	// then belongs to it (attach no other consumer); the API function
	// gets WEBHOOK_QUEUE_URL and may queue redeliveries. With PrebuiltDir,
	// the webhook function's binary is webhooks/bootstrap.
	//
	// Default: nil, off: no webhook function, the delivery queue is yours
	// to consume, and the subscription routes answer 404 webhooks_disabled.
	Webhooks *WebhookOptions
}

// DeliveryOptions configures stream delivery: the consumer function reading
// the events table stream, the delivery queue it feeds and that queue's DLQ.
type DeliveryOptions struct {
	// Function sizes the stream consumer.
	//
	// Default: 256 MiB, 30 seconds.
	Function *FunctionOptions
	// Stream tunes the event source mapping (batch size, retries, record
	// age, failure queue...). Records are filtered to INSERTs. Its
	// RetryAttempts 0 means StreamRetryAttempts (10,000) here, not
	// dynamotable's default of 10; 1-10000 bounds the retries. Its
	// MaxRecordAge is at most 23 hours
	// (dynamotable.MaxStreamMaxRecordAgeHours: the stream keeps records
	// 24).
	//
	// Default: 100 records, StreamRetryAttempts (10,000) retries,
	// records up to StreamMaxRecordAgeHours (6) hours old, bisect on
	// error, partial batch failures.
	Stream *dynamotable.StreamConsumerOptions
	// QueueVisibilityTimeout is the delivery queue's visibility timeout:
	// how long a downstream consumer has per message, whole seconds up to
	// 12 hours. With TriggersApiProps.Webhooks, at least 6 times the
	// webhook function's timeout (AWS's guidance for SQS event sources).
	//
	// Default: 30 seconds; with Webhooks, 6 times the webhook function's
	// timeout (30 minutes by default).
	QueueVisibilityTimeout awscdk.Duration
	// QueueRetention is how long undelivered messages stay in the
	// delivery queue: whole seconds, 1 minute to 14 days.
	//
	// Default: 4 days.
	QueueRetention awscdk.Duration
	// MaxReceiveCount moves a message to the DLQ after this many receives.
	//
	// Default: 5.
	MaxReceiveCount float64
}
