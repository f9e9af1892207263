// Package golambda builds Go Lambda functions at synth time with the local
// Go toolchain (no Docker): linux/arm64, the provided.al2023 runtime, a
// static stripped binary named bootstrap built with -tags lambda.norpc. Each
// function gets its own log group with a retention period, JSON logs and
// an asset hash that changes only when the function's own code does.
//
// Why not awscdklambdagoalpha.GoFunction: see docs/lambda-bundling.md
// (synth time measured both ways, asset hashing, and a stable API).
package golambda

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3assets"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// Defaults of GoFunctionProps.
const (
	DefaultMemoryMiB      = 256
	DefaultTimeoutSeconds = 10
)

// GoFunctionProps configures a GoFunction.
type GoFunctionProps struct {
	// Entry is the main package, relative to the module root ("lambda/api").
	// Required.
	Entry string
	// ModuleDir is the Go module root.
	//
	// Default: the nearest directory holding go.mod above the working directory.
	ModuleDir string
	// Description of the function.
	//
	// Default: none.
	Description *string
	// MemoryMiB is the memory size, 128-10240 MiB.
	//
	// Default: 256.
	MemoryMiB float64
	// Timeout of one invocation, at most 15 minutes.
	//
	// Default: 10 seconds.
	Timeout awscdk.Duration
	// Environment variables.
	//
	// Default: none.
	Environment map[string]*string
	// LogRetention is how long the function's log group keeps logs.
	//
	// Default: awslogs.RetentionDays_ONE_MONTH.
	LogRetention awslogs.RetentionDays
	// Tracing enables AWS X-Ray active tracing.
	//
	// Default: false.
	Tracing bool
	// ReservedConcurrency caps concurrent executions; 0 means no cap.
	//
	// Default: no reserved concurrency.
	ReservedConcurrency float64
}

// GoFunction is a Go Lambda function built from this module at synth time.
// Its children are "Resource" (the awslambda.Function), "LogGroup" and
// "ServiceRole" (allowed to write to that log group only).
type GoFunction struct {
	constructs.Construct
	// Function is the Lambda function.
	Function awslambda.Function
	// LogGroup is the function's log group.
	LogGroup awslogs.LogGroup
	// Role is the function's execution role; grants add to its policy.
	Role awsiam.Role
}

// NewGoFunction builds entry and creates the function. Bad props panic with
// a message naming the value and the fix.
func NewGoFunction(scope constructs.Construct, id *string, props *GoFunctionProps) *GoFunction {
	if props == nil || props.Entry == "" {
		panic(fmt.Errorf("golambda %q: props.Entry is required: the main package relative to the module root, such as \"lambda/api\"", deref(id)))
	}
	module := props.ModuleDir
	if module == "" {
		wd, err := os.Getwd()
		if err != nil {
			panic(err)
		}
		if module, err = ModuleRoot(wd); err != nil {
			panic(fmt.Errorf("golambda %q: %w: set props.ModuleDir", deref(id), err))
		}
	}
	if st, err := os.Stat(filepath.Join(module, props.Entry)); err != nil || !st.IsDir() {
		panic(fmt.Errorf("golambda %q: entry %q is not a directory under %s: give the main package's path relative to the module root", deref(id), props.Entry, module))
	}
	mem := props.MemoryMiB
	if mem == 0 {
		mem = DefaultMemoryMiB
	}
	if mem < 128 || mem > 10240 {
		panic(fmt.Errorf("golambda %q: MemoryMiB %v is outside 128-10240: Lambda accepts 128 MiB to 10,240 MiB", deref(id), mem))
	}
	hash, err := SourceHash(module, props.Entry)
	if err != nil {
		panic(fmt.Errorf("golambda %q: %w", deref(id), err))
	}

	f := &GoFunction{}
	constructs.NewConstruct_Override(f, scope, id)
	retention := props.LogRetention
	if retention == "" {
		retention = awslogs.RetentionDays_ONE_MONTH
	}
	f.LogGroup = awslogs.NewLogGroup(f, jsii.String("LogGroup"), &awslogs.LogGroupProps{
		Retention:     retention,
		RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
	})
	timeout := props.Timeout
	if timeout == nil {
		timeout = awscdk.Duration_Seconds(jsii.Number(DefaultTimeoutSeconds))
	}
	env := props.Environment
	tracing := awslambda.Tracing_DISABLED
	if props.Tracing {
		tracing = awslambda.Tracing_ACTIVE
	}
	// A role of its own that may write only to its own log group: no AWS
	// managed policy (AWSLambdaBasicExecutionRole allows every log group).
	f.Role = awsiam.NewRole(f, jsii.String("ServiceRole"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: props.Description,
	})
	f.Role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("logs:CreateLogStream", "logs:PutLogEvents"),
		Resources: jsii.Strings(*f.LogGroup.LogGroupArn()),
	}))
	if props.Tracing {
		cdknag.NagSuppressions_AddResourceSuppressions(f.Role, &[]*cdknag.NagPackSuppression{{
			Id:        jsii.String("AwsSolutions-IAM5"),
			Reason:    jsii.String("X-Ray's PutTraceSegments and PutTelemetryRecords support no resource-level permissions; Lambda's tracing grant must use Resource *"),
			AppliesTo: &[]any{"Resource::*"},
		}}, jsii.Bool(true))
	}
	fp := &awslambda.FunctionProps{
		Role:         f.Role,
		Runtime:      awslambda.Runtime_PROVIDED_AL2023(),
		Architecture: awslambda.Architecture_ARM_64(),
		Handler:      jsii.String("bootstrap"),
		Code: awslambda.Code_FromAsset(jsii.String(module), &awss3assets.AssetOptions{
			AssetHashType: awscdk.AssetHashType_CUSTOM,
			AssetHash:     jsii.String(hash),
			Bundling: &awscdk.BundlingOptions{
				// Used only if local bundling is impossible; it never is
				// where Go is installed, and synth fails otherwise.
				Image: awscdk.DockerImage_FromRegistry(jsii.String("public.ecr.aws/docker/library/golang:1.26")),
				Local: &localBundler{moduleDir: module, entry: props.Entry},
			},
		}),
		Description:   props.Description,
		MemorySize:    jsii.Number(mem),
		Timeout:       timeout,
		LogGroup:      f.LogGroup,
		LoggingFormat: awslambda.LoggingFormat_JSON,
		Tracing:       tracing,
	}
	if len(env) > 0 {
		fp.Environment = &env
	}
	if props.ReservedConcurrency > 0 {
		fp.ReservedConcurrentExecutions = jsii.Number(props.ReservedConcurrency)
	}
	f.Function = awslambda.NewFunction(f, jsii.String("Resource"), fp)
	return f
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// FunctionName returns the function's name.
func (f *GoFunction) FunctionName() *string { return f.Function.FunctionName() }

// FunctionArn returns the function's ARN.
func (f *GoFunction) FunctionArn() *string { return f.Function.FunctionArn() }

// GrantPrincipal returns the principal that grants give permissions to (the
// function's role), so a GoFunction can be passed to Grant* methods.
func (f *GoFunction) GrantPrincipal() awsiam.IPrincipal { return f.Function.GrantPrincipal() }
