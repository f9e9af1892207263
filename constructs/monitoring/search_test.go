package monitoring_test

import (
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/constructs/monitoring"
	"github.com/triggers-dev/triggers/constructs/triggersapi"
)

// searchExpressions returns the SEARCH expressions of a dashboard's graphs.
func searchExpressions(widgets []map[string]any) []string {
	var out []string
	for _, w := range widgets {
		p, _ := w["properties"].(map[string]any)
		lines, _ := p["metrics"].([]any)
		for _, l := range lines {
			for _, part := range l.([]any) {
				if o, ok := part.(map[string]any); ok {
					if e, ok := o["expression"].(string); ok && strings.HasPrefix(e, "SEARCH(") {
						out = append(out, e)
					}
				}
			}
		}
	}
	return out
}

// The runtime's namespace may hold a space (contract.ValidMetricsNamespace
// allows letters, digits, . - _ / # : and space), and a SEARCH expression's
// metric schema needs a name with a space or another character that is
// not a letter or digit in double quotes: unquoted, the dashboard's
// by-reason and by-route graphs (events rejected, request latency,
// webhook attempts deferred) showed nothing. The namespace is always
// quoted.
func TestSearchExpressionsQuoteTheNamespace(t *testing.T) {
	ctx := map[string]any{"aws:cdk:bundling-stacks": []any{}}
	stack := awscdk.NewStack(awscdk.NewApp(&awscdk.AppProps{Context: &ctx}), jsii.String("S"), nil)
	artifacts := awss3.Bucket_FromBucketName(stack, jsii.String("Artifacts"), jsii.String("ci-artifacts"))
	const ns = "Triggers prod"
	api := triggersapi.NewTriggersApi(stack, jsii.String("Triggers"), &triggersapi.TriggersApiProps{
		MetricsNamespace: ns,
		RateLimit:        &triggersapi.RateLimitOptions{Disabled: true},
		Webhooks: &triggersapi.WebhookOptions{Function: &triggersapi.FunctionOptions{
			Code: awslambda.Code_FromBucket(artifacts, jsii.String("webhooks.zip"), nil)}},
	})
	m := monitoring.NewTriggersMonitoring(stack, jsii.String("Monitoring"), &monitoring.TriggersMonitoringProps{Api: api})
	_, props := synthStack(t, stack)

	searches := searchExpressions(dashboardWidgets(t, props(m.Dashboard)))
	require.Len(t, searches, 3, "events rejected, request latency by route, webhook attempts deferred")
	for _, e := range searches {
		assert.True(t, strings.HasPrefix(e, `SEARCH('{"`+ns+`",`), "the namespace is quoted in %s", e)
	}
}
