package triggersapi_test

import (
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/assert"

	"github.com/triggers-dev/triggers/constructs/triggersapi"
)

// Two Triggers APIs in one account and region (dev and prod) have metrics
// of their own: the RestApi's name (the ApiName dimension) and the web
// ACL's metric name (WebACL) follow the construct's path. (Found by
// review: both were constants, so each environment's alarms summed every
// environment's traffic and errors.)
func TestEachApiHasItsOwnMetrics(t *testing.T) {
	app := newApp()
	names := map[string]string{}
	acls := map[string]string{}
	stacks := map[string]awscdk.Stack{}
	apis := map[string]*triggersapi.TriggersApi{}
	for _, env := range []string{"triggers-dev-api", "triggers-prod-api"} {
		stacks[env] = awscdk.NewStack(app, jsii.String(env), nil)
		apis[env] = triggersapi.NewTriggersApi(stacks[env], jsii.String("Triggers"), nil)
	}
	for env, stack := range stacks {
		api := apis[env]
		tp := assertions.Template_FromStack(stack, nil)
		for _, r := range *tp.FindResources(jsii.String("AWS::ApiGateway::RestApi"), nil) {
			names[env] = (*r)["Properties"].(map[string]any)["Name"].(string)
		}
		for _, r := range *tp.FindResources(jsii.String("AWS::WAFv2::WebACL"), nil) {
			acls[env] = (*r)["Properties"].(map[string]any)["VisibilityConfig"].(map[string]any)["MetricName"].(string)
		}
		assert.Equal(t, api.WafMetricName(), acls[env])
		dims := *api.MetricWafBlockedRequests(nil).Dimensions()
		assert.Equal(t, api.WafMetricName(), dims["WebACL"])
	}
	assert.Equal(t, map[string]string{"triggers-dev-api": "triggers-dev-api-Triggers", "triggers-prod-api": "triggers-prod-api-Triggers"}, names)
	assert.Equal(t, map[string]string{"triggers-dev-api": "TriggersRateLimits-triggers-dev-api-Triggers", "triggers-prod-api": "TriggersRateLimits-triggers-prod-api-Triggers"}, acls)
}
