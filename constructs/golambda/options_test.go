package golambda_test

import (
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/jsii-runtime-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/constructs/golambda"
)

// unbundled returns a stack whose assets are not bundled (no Go runs).
func unbundled() awscdk.Stack {
	ctx := map[string]any{"aws:cdk:bundling-stacks": []any{}}
	return awscdk.NewStack(awscdk.NewApp(&awscdk.AppProps{Context: &ctx}), jsii.String("S"), nil)
}

// Every option reaches the function as the CDK's own Function takes it.
func TestFunctionOptions(t *testing.T) {
	stack := unbundled()
	vpc := awsec2.NewVpc(stack, jsii.String("Vpc"), &awsec2.VpcProps{MaxAzs: jsii.Number(2), NatGateways: jsii.Number(1)})
	sg := awsec2.NewSecurityGroup(stack, jsii.String("Sg"), &awsec2.SecurityGroupProps{Vpc: vpc})
	layer := awslambda.LayerVersion_FromLayerVersionArn(stack, jsii.String("Layer"), jsii.String("arn:aws:lambda:eu-west-1:123456789012:layer:ext:3"))
	f := golambda.NewGoFunction(stack, jsii.String("Fn"), &golambda.GoFunctionProps{
		Entry: "example.com/m/fn/a",
		FunctionOptions: golambda.FunctionOptions{
			Architecture: awslambda.Architecture_X86_64(),
			Environment:  map[string]*string{"TEAM": jsii.String("payments")},
			Vpc:          vpc, VpcSubnets: &awsec2.SubnetSelection{SubnetType: awsec2.SubnetType_PRIVATE_WITH_EGRESS},
			SecurityGroups:         []awsec2.ISecurityGroup{sg},
			Layers:                 []awslambda.ILayerVersion{layer},
			ReservedConcurrency:    jsii.Number(10),
			ProvisionedConcurrency: 2,
		},
	})
	// Without the options: no reservation, no alias, the function itself
	// is invoked; 0 reserves nothing and so stops every invocation.
	plain := golambda.NewGoFunction(stack, jsii.String("Plain"), &golambda.GoFunctionProps{Entry: "example.com/m/fn/a"})
	golambda.NewGoFunction(stack, jsii.String("Stopped"), &golambda.GoFunctionProps{Entry: "example.com/m/fn/a",
		FunctionOptions: golambda.FunctionOptions{ReservedConcurrency: jsii.Number(0)}})
	tmpl := assertions.Template_FromStack(stack, nil)
	tmpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
		"Architectures":                []any{"x86_64"},
		"Environment":                  map[string]any{"Variables": map[string]any{"TEAM": "payments"}},
		"Layers":                       []any{"arn:aws:lambda:eu-west-1:123456789012:layer:ext:3"},
		"ReservedConcurrentExecutions": 10,
		"VpcConfig": map[string]any{
			"SecurityGroupIds": []any{map[string]any{"Fn::GetAtt": []any{*stack.GetLogicalId(sg.Node().DefaultChild().(awsec2.CfnSecurityGroup)), "GroupId"}}},
			"SubnetIds":        assertions.Match_ArrayWith(&[]any{map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^VpcPrivateSubnet"))}}),
		},
	})
	// Provisioned concurrency lives on the "live" alias of the current
	// version, and callers are handed the alias.
	tmpl.HasResourceProperties(jsii.String("AWS::Lambda::Alias"), map[string]any{
		"Name":                         golambda.AliasName,
		"FunctionVersion":              map[string]any{"Fn::GetAtt": []any{assertions.Match_StringLikeRegexp(jsii.String("^FnCurrentVersion")), "Version"}},
		"ProvisionedConcurrencyConfig": map[string]any{"ProvisionedConcurrentExecutions": 2},
	})
	require.NotNil(t, f.Alias)
	assert.Equal(t, *f.Alias.FunctionArn(), *f.Invocable().FunctionArn())
	// The role may manage the function's network interfaces.
	tmpl.HasResourceProperties(jsii.String("AWS::IAM::Policy"), map[string]any{
		"PolicyDocument": map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{map[string]any{
			"Action": assertions.Match_ArrayWith(&[]any{"ec2:CreateNetworkInterface", "ec2:DeleteNetworkInterface"}),
			"Effect": "Allow", "Resource": "*",
		}})},
	})

	assert.Nil(t, plain.Alias)
	assert.Equal(t, *plain.Function.FunctionArn(), *plain.Invocable().FunctionArn())
	fns := tmpl.FindResources(jsii.String("AWS::Lambda::Function"), nil)
	var reserved []any
	for id, r := range *fns {
		props := (*r)["Properties"].(map[string]any)
		if v, ok := props["ReservedConcurrentExecutions"]; ok {
			reserved = append(reserved, v)
		}
		if id == *stack.GetLogicalId(plain.Function.Node().DefaultChild().(awslambda.CfnFunction)) {
			assert.NotContains(t, props, "ReservedConcurrentExecutions", "nil: no reservation")
			assert.NotContains(t, props, "VpcConfig")
		}
	}
	assert.ElementsMatch(t, []any{10.0, 0.0}, reserved, "0 is a reservation of 0, as in the CDK")
	tmpl.ResourceCountIs(jsii.String("AWS::Lambda::Alias"), jsii.Number(1))
}

// A role and a log group of your own are used instead of new ones; the
// role still gets the right to write to the log group.
func TestGivenRoleAndLogGroup(t *testing.T) {
	stack := unbundled()
	role := awsiam.NewRole(stack, jsii.String("Mine"), &awsiam.RoleProps{AssumedBy: awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil)})
	logs := awslogs.NewLogGroup(stack, jsii.String("MyLogs"), &awslogs.LogGroupProps{Retention: awslogs.RetentionDays_ONE_YEAR})
	f := golambda.NewGoFunction(stack, jsii.String("Fn"), &golambda.GoFunctionProps{Entry: "example.com/m/fn/a",
		FunctionOptions: golambda.FunctionOptions{Role: role, LogGroup: logs}})
	assert.Nil(t, f.Node().TryFindChild(jsii.String("ServiceRole")), "no role of its own")
	assert.Nil(t, f.Node().TryFindChild(jsii.String("LogGroup")), "no log group of its own")
	assertions.Annotations_FromStack(stack).HasNoWarning(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String("takes no statements")))
	tmpl := assertions.Template_FromStack(stack, nil)
	tmpl.ResourceCountIs(jsii.String("AWS::IAM::Role"), jsii.Number(1))
	tmpl.ResourceCountIs(jsii.String("AWS::Logs::LogGroup"), jsii.Number(1))
	roleID := *stack.GetLogicalId(role.Node().DefaultChild().(awsiam.CfnRole))
	logsID := *stack.GetLogicalId(logs.Node().DefaultChild().(awslogs.CfnLogGroup))
	tmpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
		"Role":          map[string]any{"Fn::GetAtt": []any{roleID, "Arn"}},
		"LoggingConfig": map[string]any{"LogFormat": "JSON", "LogGroup": map[string]any{"Ref": logsID}},
	})
	tmpl.HasResourceProperties(jsii.String("AWS::IAM::Policy"), map[string]any{
		"Roles": []any{map[string]any{"Ref": roleID}},
		"PolicyDocument": map[string]any{"Statement": []any{map[string]any{
			"Action": []any{"logs:CreateLogStream", "logs:PutLogEvents"}, "Effect": "Allow",
			"Resource": map[string]any{"Fn::GetAtt": []any{logsID, "Arn"}},
		}}},
	})
}

// Each bad option fails synth with a message naming the value and the fix.
func TestFunctionOptionsValidation(t *testing.T) {
	stack := unbundled()
	param := func() float64 { // a number known at deploy time only
		return *awscdk.NewCfnParameter(awscdk.NewStack(awscdk.NewApp(nil), jsii.String("P"), nil), jsii.String("N"), &awscdk.CfnParameterProps{Type: jsii.String("Number")}).ValueAsNumber()
	}
	vpcLess := &awsec2.SubnetSelection{SubnetType: awsec2.SubnetType_PRIVATE_WITH_EGRESS}
	for msg, o := range map[string]golambda.FunctionOptions{
		`Architecture "riscv64" is not one Lambda runs: use awslambda.Architecture_ARM_64() (the default) or awslambda.Architecture_X86_64()`: {
			Architecture: awslambda.Architecture_Custom(jsii.String("riscv64"), jsii.String("linux/riscv64"))},
		`build tag "a b" is not a tag go build accepts`:                                                             {BuildTags: []string{"a b"}},
		`ReservedConcurrency -1 is not a whole number >= 0: give nil for no reservation, 0 to stop all invocations`: {ReservedConcurrency: jsii.Number(-1)},
		`ReservedConcurrency 1.5 is not a whole number >= 0`:                                                        {ReservedConcurrency: jsii.Number(1.5)},
		`ProvisionedConcurrency -2 is not a whole number >= 0`:                                                      {ProvisionedConcurrency: -2},
		`ProvisionedConcurrency 5 is above ReservedConcurrency 4: Lambda refuses that`:                              {ProvisionedConcurrency: 5, ReservedConcurrency: jsii.Number(4)},
		`VpcSubnets or SecurityGroups are set without Vpc: give the Vpc they belong to`:                             {VpcSubnets: vpcLess},
		`Environment "AWS_REGION" is reserved by Lambda, which sets it: remove it`:                                  {Environment: map[string]*string{"AWS_REGION": jsii.String("x")}},
		`Environment "1BAD" is not a name Lambda accepts: use a letter then letters, digits and '_'`:                {Environment: map[string]*string{"1BAD": jsii.String("x")}},
		`MemoryMiB 20000 is outside 128-10240`:                                                                      {MemoryMiB: 20000},
		// Found by review: 256.5 synthesized MemorySize 256.5, which
		// CloudFormation refuses at deploy (an integer).
		`MemoryMiB 256.5 is not a whole number: Lambda takes memory in whole MiB; give one from 128 to 10240, such as 257`: {MemoryMiB: 256.5},
		`ProvisionedConcurrency is a token: give a literal number`:                                                         {ProvisionedConcurrency: param()},
		// Found by review: 20 minutes synthesized 1200 s (refused at
		// deploy), 0 s passed, 1.5 s panicked inside the CDK.
		`Timeout 20m0s is outside 1s-15m: Lambda runs an invocation for 1 second to 15 minutes; give a timeout in that range`: {Timeout: awscdk.Duration_Minutes(jsii.Number(20))},
		`Timeout 0s is outside 1s-15m`: {Timeout: awscdk.Duration_Seconds(jsii.Number(0))},
		`Timeout 1.5s is not whole seconds: Lambda takes a timeout in whole seconds; give one from 1s to 15m, such as 2s`:       {Timeout: awscdk.Duration_Millis(jsii.Number(1500))},
		`Timeout 15m0.5s is not whole seconds: Lambda takes a timeout in whole seconds; give one from 1s to 15m, such as 15m0s`: {Timeout: awscdk.Duration_Millis(jsii.Number(900500))},
	} {
		t.Run(msg, func(t *testing.T) {
			err := o.Validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), msg)
			assert.PanicsWithError(t, `golambda "F": `+err.Error(), func() {
				golambda.NewGoFunction(stack, jsii.String("F"), &golambda.GoFunctionProps{Entry: "example.com/m/fn/a", FunctionOptions: o})
			})
		})
	}

	// Other numbers from a parameter are left to CloudFormation (found by
	// review: their placeholder value was refused as out of range).
	n := param()
	tokens := golambda.FunctionOptions{MemoryMiB: n, ReservedConcurrency: &n, Timeout: awscdk.Duration_Seconds(&n)}
	assert.NoError(t, tokens.Validate())
	// Lambda's limits themselves are accepted.
	for _, d := range []awscdk.Duration{awscdk.Duration_Seconds(jsii.Number(1)), awscdk.Duration_Minutes(jsii.Number(15)), awscdk.Duration_Millis(jsii.Number(3000))} {
		o := golambda.FunctionOptions{Timeout: d}
		assert.NoError(t, o.Validate(), *d.ToHumanString())
	}

	// The construct's own variables cannot be overridden.
	o := golambda.FunctionOptions{Environment: map[string]*string{"EVENTS_TABLE": jsii.String("mine"), "TEAM": jsii.String("x")}}
	env, err := o.MergeEnvironment(map[string]*string{"EVENTS_TABLE": jsii.String("t")})
	assert.EqualError(t, err, `Environment "EVENTS_TABLE" is set by the construct (the function reads it): remove it, or use the construct's prop for it`)
	assert.Equal(t, "t", *env["EVENTS_TABLE"], "the construct's value stays")
	assert.Equal(t, "x", *env["TEAM"])
}

// A role that takes no statements (imported immutable) leaves the function
// without its log group's permissions and every grant: synth warns, naming
// the role and what it must allow. A mutable imported role gets the
// statements (an AWS::IAM::Policy on it) and no warning.
func TestImmutableRoleWarns(t *testing.T) {
	stack := unbundled()
	fixed := awsiam.Role_FromRoleArn(stack, jsii.String("Fixed"), jsii.String("arn:aws:iam::123456789012:role/ops-lambda"),
		&awsiam.FromRoleArnOptions{Mutable: jsii.Bool(false)})
	vpc := awsec2.NewVpc(stack, jsii.String("Vpc"), &awsec2.VpcProps{MaxAzs: jsii.Number(2), NatGateways: jsii.Number(1)})
	golambda.NewGoFunction(stack, jsii.String("Fn"), &golambda.GoFunctionProps{Entry: "example.com/m/fn/a",
		FunctionOptions: golambda.FunctionOptions{Role: fixed, Vpc: vpc}})
	mutable := awsiam.Role_FromRoleArn(stack, jsii.String("Open"), jsii.String("arn:aws:iam::123456789012:role/dev-lambda"), nil)
	golambda.NewGoFunction(stack, jsii.String("Fn2"), &golambda.GoFunctionProps{Entry: "example.com/m/fn/a",
		FunctionOptions: golambda.FunctionOptions{Role: mutable}})
	// A LazyRole makes its role (and that role's policy) a level down.
	lazy := awsiam.NewLazyRole(stack, jsii.String("Lazy"), &awsiam.LazyRoleProps{AssumedBy: awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil)})
	golambda.NewGoFunction(stack, jsii.String("Fn3"), &golambda.GoFunctionProps{Entry: "example.com/m/fn/a",
		FunctionOptions: golambda.FunctionOptions{Role: lazy}})

	annotations := assertions.Annotations_FromStack(stack)
	annotations.HasWarning(jsii.String("/S/Fn"), assertions.Match_StringLikeRegexp(jsii.String(
		`execution role S/Fixed takes no statements .*logs:CreateLogStream and logs:PutLogEvents on its log group, the VPC network-interface actions.*must already allow them.*\[ack: `+golambda.WarningImmutableRole+`\]`)))
	annotations.HasNoWarning(jsii.String("/S/Fn2"), assertions.Match_StringLikeRegexp(jsii.String("takes no statements")))
	annotations.HasNoWarning(jsii.String("/S/Fn3"), assertions.Match_StringLikeRegexp(jsii.String("takes no statements")))
	tmpl := assertions.Template_FromStack(stack, nil)
	tmpl.HasResourceProperties(jsii.String("AWS::IAM::Policy"), map[string]any{
		"Roles": []any{"dev-lambda"},
	})
	policies := tmpl.FindResources(jsii.String("AWS::IAM::Policy"), nil)
	for id, p := range *policies {
		props, _ := (*p)["Properties"].(map[string]any)
		assert.NotEqual(t, []any{"ops-lambda"}, props["Roles"], "policy %s on the immutable role", id)
	}
}
