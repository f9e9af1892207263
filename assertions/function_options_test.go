package assertions

import (
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/constructs/golambda"
	"github.com/triggers-dev/triggers/constructs/triggersapi"
	"github.com/triggers-dev/triggers/internal/testkit/cdktest"
	"github.com/triggers-dev/triggers/stacks"
)

// buildFunctionOptionsStack adds stackFunctionOptions: the webhook
// function in the private subnets of a VPC whose NAT gateway has one
// Elastic IP (receivers allow-list it), the API function with provisioned
// concurrency, an x86_64 authorizer with a layer, and a stream consumer
// with the deployer's role and log group. The code is prebuilt (no Go
// build for these variants).
func buildFunctionOptionsStack(app awscdk.App) {
	s := awscdk.NewStack(app, jsii.String(stackFunctionOptions), nil)
	artifacts := awss3.Bucket_FromBucketName(s, jsii.String("Artifacts"), jsii.String("ci-artifacts"))
	code := func(name string) awslambda.Code {
		return awslambda.Code_FromBucket(artifacts, jsii.String(name+".zip"), jsii.String("v1"))
	}
	eip := awsec2.NewCfnEIP(s, jsii.String("WebhookEgress"), &awsec2.CfnEIPProps{Domain: jsii.String("vpc")})
	vpc := awsec2.NewVpc(s, jsii.String("Vpc"), &awsec2.VpcProps{
		MaxAzs: jsii.Number(2), NatGateways: jsii.Number(1),
		NatGatewayProvider: awsec2.NatProvider_Gateway(&awsec2.NatGatewayProps{EipAllocationIds: jsii.Strings(*eip.AttrAllocationId())}),
	})
	awsec2.NewFlowLog(s, jsii.String("VpcFlowLog"), &awsec2.FlowLogProps{ResourceType: awsec2.FlowLogResourceType_FromVpc(vpc)})
	role := awsiam.NewRole(s, jsii.String("ConsumerRole"), &awsiam.RoleProps{AssumedBy: awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil)})
	logs := awslogs.NewLogGroup(s, jsii.String("ConsumerLogs"), &awslogs.LogGroupProps{Retention: awslogs.RetentionDays_ONE_YEAR})
	triggersapi.NewTriggersApi(s, jsii.String("Triggers"), &triggersapi.TriggersApiProps{
		CloudWatchRole: jsii.Bool(true),
		ApiFunction:    &triggersapi.FunctionOptions{Code: code("api"), ProvisionedConcurrency: 2},
		AuthorizerFunction: &triggersapi.FunctionOptions{Code: code("authorizer"), Architecture: awslambda.Architecture_X86_64(),
			Layers: []awslambda.ILayerVersion{awslambda.LayerVersion_FromLayerVersionArn(s, jsii.String("Extension"),
				jsii.String("arn:aws:lambda:us-east-1:111111111111:layer:extension:3"))}},
		Delivery: &triggersapi.DeliveryOptions{Function: &triggersapi.FunctionOptions{Code: code("streamconsumer"), Role: role, LogGroup: logs,
			Environment: map[string]*string{"TEAM": jsii.String("payments")}}},
		Webhooks: &triggersapi.WebhookOptions{Function: &triggersapi.FunctionOptions{Code: code("webhooks"),
			Vpc: vpc, VpcSubnets: &awsec2.SubnetSelection{SubnetType: awsec2.SubnetType_PRIVATE_WITH_EGRESS}}},
	})
	stacks.CheckWithCdkNag(s)
}

// Each function option reaches its function, and the integrations follow
// the alias that holds provisioned concurrency.
func TestFunctionOptions(t *testing.T) {
	tp := tmpl(t, stackFunctionOptions)
	props := func(prefix string) map[string]any {
		_, f := one(t, tp, "AWS::Lambda::Function", prefix)
		return cdktest.Props(f)
	}

	t.Run("webhooks leave through the NAT gateway's Elastic IP", func(t *testing.T) {
		vpcConfig, ok := props("TriggersWebhooksFunction")["VpcConfig"].(map[string]any)
		require.True(t, ok, "the webhook function is in the VPC")
		subnets := vpcConfig["SubnetIds"].([]any)
		require.Len(t, subnets, 2)
		for _, s := range subnets {
			assert.Regexp(t, `^VpcPrivateSubnet`, s.(map[string]any)["Ref"], "private subnets, routed to the NAT")
		}
		eipID, _ := one(t, tp, "AWS::EC2::EIP", "WebhookEgress")
		_, nat := one(t, tp, "AWS::EC2::NatGateway", "VpcPublicSubnet1NATGateway")
		assert.Equal(t, map[string]any{"Fn::GetAtt": []any{eipID, "AllocationId"}}, cdktest.Props(nat)["AllocationId"])
		assert.NotContains(t, props("TriggersApiFunction"), "VpcConfig", "only the function given a VPC is in one")
	})
	t.Run("provisioned concurrency on the API function's alias, which API Gateway invokes", func(t *testing.T) {
		aliasID, alias := one(t, tp, "AWS::Lambda::Alias", "TriggersApiFunctionAlias")
		p := cdktest.Props(alias)
		assert.Equal(t, golambda.AliasName, p["Name"])
		assert.Equal(t, map[string]any{"ProvisionedConcurrentExecutions": 2.0}, p["ProvisionedConcurrencyConfig"])
		assert.Len(t, cdktest.Resources(tp, "AWS::Lambda::Alias"), 1, "the other functions have none")
		var integrations int
		for id, m := range cdktest.Resources(tp, "AWS::ApiGateway::Method") {
			in, ok := cdktest.Props(m)["Integration"].(map[string]any)
			if !ok || in["Type"] != "AWS_PROXY" {
				continue
			}
			integrations++
			assert.Contains(t, jsonOf(in["Uri"]), aliasID, "%s invokes the alias", id)
		}
		assert.Positive(t, integrations)
		// API Gateway may invoke the alias; the API function's
		// permissions name the alias, never the unqualified function.
		var toAlias int
		for id, perm := range cdktest.Resources(tp, "AWS::Lambda::Permission") {
			p := cdktest.Props(perm)
			if p["Principal"] != "apigateway.amazonaws.com" {
				continue
			}
			fn := jsonOf(p["FunctionName"])
			if fn == jsonOf(map[string]any{"Ref": aliasID}) {
				toAlias++
				continue
			}
			assert.Contains(t, fn, "TriggersAuthorizerFunction", "%s: only the authorizer is invoked unqualified", id)
		}
		assert.Positive(t, toAlias)
	})
	t.Run("x86_64 and a layer for the authorizer", func(t *testing.T) {
		p := props("TriggersAuthorizerFunction")
		assert.Equal(t, []any{"x86_64"}, p["Architectures"])
		assert.Equal(t, []any{"arm64"}, props("TriggersApiFunction")["Architectures"], "the default")
		assert.Equal(t, []any{"arn:aws:lambda:us-east-1:111111111111:layer:extension:3"}, p["Layers"])
	})
	t.Run("the deployer's role and log group for the stream consumer", func(t *testing.T) {
		p := props("TriggersConsumerFunction")
		roleID, _ := one(t, tp, "AWS::IAM::Role", "ConsumerRole")
		logsID, _ := one(t, tp, "AWS::Logs::LogGroup", "ConsumerLogs")
		assert.Equal(t, map[string]any{"Fn::GetAtt": []any{roleID, "Arn"}}, p["Role"])
		assert.Equal(t, map[string]any{"Ref": logsID}, p["LoggingConfig"].(map[string]any)["LogGroup"])
		env := p["Environment"].(map[string]any)["Variables"].(map[string]any)
		assert.Equal(t, "payments", env["TEAM"], "the deployer's variable")
		assert.Contains(t, env, "DELIVERY_QUEUE_URL", "beside the construct's own")
		for id := range cdktest.Resources(tp, "AWS::IAM::Role") {
			assert.NotContains(t, id, "ConsumerFunctionServiceRole", "no role of its own")
		}
	})
}
