package assertions

import (
	"regexp"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/testkit/cdktest"
)

// The synthesized template uses exactly the names of package contract,
// which the runtime reads (lambda/fnconfig, internal/httpapi,
// internal/emf): env var names, metric names, log fields. (Routes: see
// TestRestApiRoutesAndAuthorizer, which compares the RestApi's methods
// with contract.Routes().)

// Every environment variable a function is given is one the runtime reads.
func TestContractEnvNames(t *testing.T) {
	known := []string{
		contract.EnvEventsTable, contract.EnvAPIKeysTable, contract.EnvCursorSecretARN, contract.EnvRetentionDays,
		contract.EnvMetricsNamespace, contract.EnvAPIKeySources, contract.EnvDeliveryQueueURL, contract.EnvDeadLetterQueueURL,
		contract.EnvWebhookQueueURL, contract.EnvWebhookSchedule, contract.EnvWebhookTimeout, contract.EnvWebhookDisableAfter,
		contract.EnvLogLevel, contract.EnvWebhookSecretsKey, contract.EnvWebhookParallel, contract.EnvWebhookBreakerThreshold,
		contract.EnvWebhookBreakerCooldown, contract.EnvWebhookSlowAfter, contract.EnvWebhookEndpointRate,
		contract.EnvWebhookSlowLaneAfter, contract.EnvWebhookTenantSlowConcurrency,
		contract.EnvWebhookRoundHold, contract.EnvCorsAllowOrigins, contract.EnvCorsAllowCredentials, contract.EnvCorsExposeHeaders,
	}
	for _, stack := range []string{apiStack, stackApiOptions} {
		for id, fn := range cdktest.Resources(tmpl(t, stack), "AWS::Lambda::Function") {
			env, _ := cdktest.Props(fn)["Environment"].(map[string]any)
			vars, _ := env["Variables"].(map[string]any)
			require.NotEmpty(t, vars, id)
			for k := range vars {
				assert.True(t, slices.Contains(known, k), "%s sets %s, which package contract does not declare", id, k)
			}
		}
	}
}

// The dashboard's runtime section reads the metric names and dimension the
// runtime emits, in the namespace the API function is given.
func TestContractMetricNames(t *testing.T) {
	fns := cdktest.Resources(tmpl(t, apiStack), "AWS::Lambda::Function")
	ns := cdktest.Props(fns[mustID(t, tmpl(t, apiStack), "AWS::Lambda::Function", "TriggersApiFunction")])["Environment"].(map[string]any)["Variables"].(map[string]any)[contract.EnvMetricsNamespace]
	assert.Equal(t, contract.MetricsNamespacePrefix+apiStack, ns)
	body := jsonOf(dashboard(t, apiStack))
	assert.Contains(t, body, `["`+contract.MetricsNamespacePrefix+apiStack+`","`+contract.MetricEventsIngested+`"`)
	assert.Contains(t, body, `{\"`+contract.MetricsNamespacePrefix+apiStack+`\",`+contract.DimensionReason+`} MetricName=\"`+contract.MetricEventsRejected+`\"`)
	assert.Contains(t, body, `["`+contract.MetricsNamespacePrefix+apiStack+`","`+contract.MetricRequestLatency+`","`+contract.DimensionRoute+`","GET /v1/inbox"`)
	assert.Contains(t, body, `{\"`+contract.MetricsNamespacePrefix+apiStack+`\",`+contract.DimensionRoute+`} MetricName=\"`+contract.MetricRequestLatency+`\"`)
}

var (
	quoted  = regexp.MustCompile(`"[^"]*"|/\^.*?/(\s|$)|@\w+`)
	ident   = regexp.MustCompile(`[a-z_][a-z0-9_]*`)
	keyword = []string{
		"fields", "filter", "stats", "sort", "limit", "and", "or", "like", "as", "by", "desc", "asc",
		"ispresent", "pct", "count", "bin", "m", "h", "p50", "p95", "p99", "requests", "errors",
		"count_distinct", "opened", "endpoints",
	}
)

// Every log field a saved query reads is a field of the API function's
// request log line (contract.RequestLogFields(), msg, level).
func TestContractLogFields(t *testing.T) {
	// The webhook function's circuit line adds subscription_id.
	fields := append([]string{contract.LogFieldMsg, contract.LogFieldLevel, contract.LogFieldSubscriptionID}, contract.RequestLogFields()...)
	qs := cdktest.Resources(tmpl(t, apiStack), "AWS::Logs::QueryDefinition")
	require.Len(t, qs, 6)
	used := map[string]bool{}
	for id, q := range qs {
		s := quoted.ReplaceAllString(cdktest.Props(q)["QueryString"].(string), " ")
		for _, w := range ident.FindAllString(s, -1) {
			if slices.Contains(keyword, w) {
				continue
			}
			used[w] = true
			assert.True(t, slices.Contains(fields, w), "%s reads field %q, which the API function does not log (contract.RequestLogFields())", id, w)
		}
	}
	for _, f := range []string{contract.LogFieldMsg, contract.LogFieldMethod, contract.LogFieldPath, contract.LogFieldRoute, contract.LogFieldDurationMs, contract.LogFieldErrorCode, contract.LogFieldTenant, contract.LogFieldCorrelationID} {
		assert.True(t, used[f], "no saved query reads %q: the check above found nothing", f)
	}
}
