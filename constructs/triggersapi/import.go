package triggersapi

import (
	"errors"
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigateway"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/triggers-dev/triggers/constructs/dynamotable"
	"github.com/triggers-dev/triggers/constructs/eventstore"
	"github.com/triggers-dev/triggers/constructs/golambda"
	"github.com/triggers-dev/triggers/constructs/internal/cdkutil"
	"github.com/triggers-dev/triggers/contract"
)

// TriggersApiAttributes describe a Triggers API deployed by another stack
// or app, for FromTriggersApiAttributes: the values its stack outputs or
// SSM parameters carry.
type TriggersApiAttributes struct {
	// RestApiId is the API Gateway REST API's id. Required.
	RestApiId *string
	// RestApiName is its name (the ApiName dimension of its metrics).
	// Required.
	RestApiName *string
	// RootResourceId is the id of its root resource. Required.
	RootResourceId *string
	// StageName is the stage it is served from. Required.
	StageName *string
	// Url is the stage's base URL, ending in "/".
	//
	// Default: https://<RestApiId>.execute-api.<region>.<URL suffix>/<StageName>/.
	Url *string
	// AccessLogGroupName is the stage's access log group. Required.
	AccessLogGroupName *string
	// ApiFunction, AuthorizerFunction and ConsumerFunction describe its
	// functions. Required.
	ApiFunction, AuthorizerFunction, ConsumerFunction *golambda.GoFunctionAttributes
	// DeliveryQueueArn, DeliveryDeadLetterQueueArn and
	// StreamFailureQueueArn are its queues. Required.
	DeliveryQueueArn, DeliveryDeadLetterQueueArn, StreamFailureQueueArn *string
	// EventsTable and ApiKeysTable are its tables (imported, say, with
	// eventstore.FromEventsTableAttributes and
	// FromApiKeysTableAttributes). Required.
	EventsTable  eventstore.IEventsTable
	ApiKeysTable dynamotable.ITable
	// CursorSecretArn is the secret signing its inbox cursors. Required.
	CursorSecretArn *string
	// MetricsNamespace is the namespace of its runtime metrics. Required.
	MetricsNamespace string
	// KeySources says which headers carry the API key.
	//
	// Default: contract.KeySourcesBearer (the authorizer cache on).
	KeySources contract.KeySources
	// Webhooks describes its webhook delivery.
	//
	// Default: nil, webhooks off.
	Webhooks *WebhookDeliveryAttributes
}

// WebhookDeliveryAttributes describe the webhook delivery of a Triggers API
// deployed elsewhere.
type WebhookDeliveryAttributes struct {
	// Function describes the webhook function. Required.
	Function *golambda.GoFunctionAttributes
	// RetryQueueArn and RetryDeadLetterQueueArn are its queues. Required.
	RetryQueueArn, RetryDeadLetterQueueArn *string
	// SecretsKeyArn is the KMS key sealing signing secrets. Required.
	SecretsKeyArn *string
	// Schedule is its retry schedule (WEBHOOK_SCHEDULE).
	//
	// Default: contract.DefaultRetrySchedule().
	Schedule string
	// MetricsNamespace is the namespace of the webhook function's metrics.
	//
	// Default: the API's MetricsNamespace.
	MetricsNamespace string
}

// importedApi is a Triggers API deployed elsewhere.
type importedApi struct {
	constructs.Construct
	restApi                 awsapigateway.IRestApi
	name, stage, url        *string
	accessLogs              awslogs.ILogGroup
	apiFn, authFn, consumer golambda.IGoFunction
	queue, dlq, failures    awssqs.IQueue
	eventsTable             eventstore.IEventsTable
	apiKeysTable            dynamotable.ITable
	cursorSecret            awssecretsmanager.ISecret
	ns                      string
	keySources              contract.KeySources
	webhooks                *WebhookDelivery // imported: the same type, with imported parts
}

var _ ITriggersApi = (*importedApi)(nil)

// FromTriggersApiAttributes imports a Triggers API deployed by another
// stack or app: monitoring.TriggersMonitoring, grants and metrics work on
// it as on one made here. Missing required attributes panic with a
// message naming each.
func FromTriggersApiAttributes(scope constructs.Construct, id *string, attrs *TriggersApiAttributes) ITriggersApi {
	if attrs == nil {
		attrs = &TriggersApiAttributes{}
	}
	if err := validateAttributes(attrs); err != nil {
		panic(fmt.Errorf("triggersapi %q: invalid attributes:\n%w", cdkutil.Deref(id), err))
	}
	a := &importedApi{
		name: attrs.RestApiName, stage: attrs.StageName, url: attrs.Url,
		eventsTable: attrs.EventsTable, apiKeysTable: attrs.ApiKeysTable,
		ns: attrs.MetricsNamespace, keySources: attrs.KeySources,
	}
	constructs.NewConstruct_Override(a, scope, id)
	if a.keySources == "" {
		a.keySources = contract.KeySourcesBearer
	}
	a.restApi = awsapigateway.RestApi_FromRestApiAttributes(a, jsii.String("Api"), &awsapigateway.RestApiAttributes{
		RestApiId: attrs.RestApiId, RestApiName: attrs.RestApiName, RootResourceId: attrs.RootResourceId,
	})
	if a.url == nil {
		a.url = jsii.String(fmt.Sprintf("https://%s.execute-api.%s.%s/%s/", *attrs.RestApiId,
			*awscdk.Aws_REGION(), *awscdk.Aws_URL_SUFFIX(), *attrs.StageName))
	}
	a.accessLogs = awslogs.LogGroup_FromLogGroupName(a, jsii.String("AccessLogs"), attrs.AccessLogGroupName)
	a.apiFn = golambda.FromGoFunctionAttributes(a, jsii.String("ApiFunction"), attrs.ApiFunction)
	a.authFn = golambda.FromGoFunctionAttributes(a, jsii.String("AuthorizerFunction"), attrs.AuthorizerFunction)
	a.consumer = golambda.FromGoFunctionAttributes(a, jsii.String("ConsumerFunction"), attrs.ConsumerFunction)
	q := func(id string, arn *string) awssqs.IQueue { return awssqs.Queue_FromQueueArn(a, jsii.String(id), arn) }
	a.queue, a.dlq, a.failures = q("DeliveryQueue", attrs.DeliveryQueueArn), q("DeliveryDLQ", attrs.DeliveryDeadLetterQueueArn), q("StreamFailures", attrs.StreamFailureQueueArn)
	a.cursorSecret = awssecretsmanager.Secret_FromSecretCompleteArn(a, jsii.String("CursorSecret"), attrs.CursorSecretArn)
	if w := attrs.Webhooks; w != nil {
		iw := &WebhookDelivery{delivery: a.queue, schedule: w.Schedule, ns: w.MetricsNamespace}
		constructs.NewConstruct_Override(iw, a, jsii.String("Webhooks"))
		if iw.schedule == "" {
			iw.schedule = contract.DefaultRetrySchedule().String()
		}
		if iw.ns == "" {
			iw.ns = a.ns
		}
		iw.fn = golambda.FromGoFunctionAttributes(iw, jsii.String("Function"), w.Function)
		iw.retry = awssqs.Queue_FromQueueArn(iw, jsii.String("RetryQueue"), w.RetryQueueArn)
		iw.retryDLQ = awssqs.Queue_FromQueueArn(iw, jsii.String("RetryDLQ"), w.RetryDeadLetterQueueArn)
		iw.key = awskms.Key_FromKeyArn(iw, jsii.String("SecretsKey"), w.SecretsKeyArn)
		a.webhooks = iw
	}
	return a
}

// validateAttributes names every missing required attribute.
func validateAttributes(attrs *TriggersApiAttributes) error {
	var errs []error
	need := func(name string, missing bool) {
		if missing {
			errs = append(errs, fmt.Errorf("%s is required", name))
		}
	}
	need("RestApiId", attrs.RestApiId == nil)
	need("RestApiName", attrs.RestApiName == nil)
	need("RootResourceId", attrs.RootResourceId == nil)
	need("StageName", attrs.StageName == nil)
	need("AccessLogGroupName", attrs.AccessLogGroupName == nil)
	need("ApiFunction", attrs.ApiFunction == nil)
	need("AuthorizerFunction", attrs.AuthorizerFunction == nil)
	need("ConsumerFunction", attrs.ConsumerFunction == nil)
	need("DeliveryQueueArn", attrs.DeliveryQueueArn == nil)
	need("DeliveryDeadLetterQueueArn", attrs.DeliveryDeadLetterQueueArn == nil)
	need("StreamFailureQueueArn", attrs.StreamFailureQueueArn == nil)
	need("EventsTable", attrs.EventsTable == nil)
	need("ApiKeysTable", attrs.ApiKeysTable == nil)
	need("CursorSecretArn", attrs.CursorSecretArn == nil)
	need("MetricsNamespace", attrs.MetricsNamespace == "")
	if attrs.KeySources != "" {
		if _, err := contract.ParseKeySources(string(attrs.KeySources)); err != nil {
			errs = append(errs, fmt.Errorf("KeySources: %w", err))
		}
	}
	if w := attrs.Webhooks; w != nil {
		need("Webhooks.Function", w.Function == nil)
		need("Webhooks.RetryQueueArn", w.RetryQueueArn == nil)
		need("Webhooks.RetryDeadLetterQueueArn", w.RetryDeadLetterQueueArn == nil)
		need("Webhooks.SecretsKeyArn", w.SecretsKeyArn == nil)
	}
	return errors.Join(errs...)
}

func (a *importedApi) Url() *string                             { return a.url }
func (a *importedApi) RestApi() awsapigateway.IRestApi          { return a.restApi }
func (a *importedApi) StageName() *string                       { return a.stage }
func (a *importedApi) AccessLogs() awslogs.ILogGroup            { return a.accessLogs }
func (a *importedApi) ApiFunction() golambda.IGoFunction        { return a.apiFn }
func (a *importedApi) AuthorizerFunction() golambda.IGoFunction { return a.authFn }
func (a *importedApi) ConsumerFunction() golambda.IGoFunction   { return a.consumer }
func (a *importedApi) DeliveryQueue() awssqs.IQueue             { return a.queue }
func (a *importedApi) DeliveryDeadLetterQueue() awssqs.IQueue   { return a.dlq }
func (a *importedApi) StreamFailureQueue() awssqs.IQueue        { return a.failures }
func (a *importedApi) EventsTable() eventstore.IEventsTable     { return a.eventsTable }
func (a *importedApi) ApiKeysTable() dynamotable.ITable         { return a.apiKeysTable }
func (a *importedApi) CursorSecret() awssecretsmanager.ISecret  { return a.cursorSecret }
func (a *importedApi) KeySources() contract.KeySources          { return a.keySources }
func (a *importedApi) MetricsNamespace() string                 { return a.ns }

func (a *importedApi) Webhooks() IWebhookDelivery {
	if a.webhooks == nil {
		return nil
	}
	return a.webhooks
}

func (a *importedApi) MetricEventsIngested(opts *awscloudwatch.MetricOptions) awscloudwatch.Metric {
	return runtimeMetric(a.ns, contract.MetricEventsIngested, nil, opts)
}

func (a *importedApi) MetricEventsRejected(reason string, opts *awscloudwatch.MetricOptions) awscloudwatch.Metric {
	return eventsRejected(a.ns, reason, opts)
}

// stageMetric is one of API Gateway's metrics of the stage, with the
// dimensions and default statistic the CDK's Stage gives it.
func (a *importedApi) stageMetric(name, stat string, opts *awscloudwatch.MetricOptions) awscloudwatch.Metric {
	o := awscloudwatch.MetricOptions{}
	if opts != nil {
		o = *opts
	}
	if o.Statistic == nil {
		o.Statistic = jsii.String(stat)
	}
	return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace: jsii.String("AWS/ApiGateway"), MetricName: jsii.String(name),
		DimensionsMap: &map[string]*string{"ApiName": a.name, "Stage": a.stage},
		Statistic:     o.Statistic, Period: o.Period, Label: o.Label, Color: o.Color, Unit: o.Unit, Region: o.Region, Account: o.Account,
	})
}

func (a *importedApi) MetricLatency(opts *awscloudwatch.MetricOptions) awscloudwatch.Metric {
	return a.stageMetric("Latency", "Average", opts)
}

func (a *importedApi) MetricIntegrationLatency(opts *awscloudwatch.MetricOptions) awscloudwatch.Metric {
	return a.stageMetric("IntegrationLatency", "Average", opts)
}

func (a *importedApi) MetricCount(opts *awscloudwatch.MetricOptions) awscloudwatch.Metric {
	return a.stageMetric("Count", "SampleCount", opts)
}

func (a *importedApi) MetricClientError(opts *awscloudwatch.MetricOptions) awscloudwatch.Metric {
	return a.stageMetric("4XXError", "Sum", opts)
}

func (a *importedApi) MetricServerError(opts *awscloudwatch.MetricOptions) awscloudwatch.Metric {
	return a.stageMetric("5XXError", "Sum", opts)
}

func (a *importedApi) GrantConsumeDeliveries(grantee awsiam.IGrantable) awsiam.Grant {
	return a.queue.GrantConsumeMessages(grantee)
}
