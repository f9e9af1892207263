// Package golambda builds Go Lambda functions at synth time with the local
// Go toolchain (no Docker): linux/arm64, the provided.al2023 runtime, a
// static stripped binary named bootstrap built with -tags lambda.norpc. Each
// function gets its own log group with a retention period, JSON logs and
// an asset hash that changes only when the function's own code does.
//
// The function's main package is a directory of the caller's module or an
// import path that the caller's module resolves (a dependency from the
// module cache, a replace, a workspace): a CDK app in another module builds
// this repository's handlers by import path, and nothing is written into
// the directory of a dependency. A team that builds its binaries in CI gives
// them instead (PrebuiltDir or Code), and synth runs no Go command.
//
// Why not awscdklambdagoalpha.GoFunction: see docs/lambda-bundling.md
// (synth time measured both ways, asset hashing, and a stable API).
package golambda

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3assets"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/triggers-dev/triggers/constructs/internal/cdkutil"
)

// Defaults of GoFunctionProps.
const (
	DefaultMemoryMiB      = 256
	DefaultTimeoutSeconds = 10
)

// GoFunctionProps configures a GoFunction. Give exactly one of Entry,
// PrebuiltDir and Code.
type GoFunctionProps struct {
	// Entry is the function's main package, built at synth: a directory of
	// the module in ModuleDir ("lambda/api" or "./lambda/api"), or an import
	// path that module resolves ("github.com/triggers-dev/triggers/lambda/api",
	// from the module cache, a replace or a workspace). go list and go build
	// run in ModuleDir; the binary is written to CDK's bundling directory.
	//
	// Default: none; required unless PrebuiltDir or Code is given.
	Entry string
	// ModuleDir is the root of the Go module that builds Entry (the
	// caller's module, whose go.mod pins every dependency).
	//
	// Default: the nearest directory holding go.mod above the working directory.
	ModuleDir string
	// PrebuiltDir is a directory holding the function's binary, built
	// beforehand: a linux/arm64 executable named bootstrap (BuildEnv and
	// BuildCommand give the build; scripts/build-lambdas.sh writes
	// bin/<fn>/bootstrap). No Go command runs at synth. The directory is
	// the function's asset.
	//
	// Default: none; Entry is built at synth.
	PrebuiltDir string
	// Code is the function's code, built beforehand: any awslambda.Code
	// (awslambda.Code_FromBucket, Code_FromAsset of a zip...) holding a
	// linux/arm64 executable named bootstrap. It is used as given; no Go
	// command runs at synth.
	//
	// Default: none; Entry is built at synth.
	Code awslambda.Code
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

// GoFunction is a Go Lambda function, built at synth time from a main
// package that the caller's module resolves, or from a prebuilt binary.
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

// NewGoFunction creates the function, building Entry (or taking the
// prebuilt code). Bad props panic with a message naming the value and the
// fix.
func NewGoFunction(scope constructs.Construct, id *string, props *GoFunctionProps) *GoFunction {
	if props == nil {
		props = &GoFunctionProps{}
	}
	mem := props.MemoryMiB
	if mem == 0 {
		mem = DefaultMemoryMiB
	}
	if mem < 128 || mem > 10240 {
		panic(fmt.Errorf("golambda %q: MemoryMiB %v is outside 128-10240: Lambda accepts 128 MiB to 10,240 MiB", cdkutil.Deref(id), mem))
	}
	code, err := functionCode(scope, props)
	if err != nil {
		panic(fmt.Errorf("golambda %q: %w", cdkutil.Deref(id), err))
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
		Role:          f.Role,
		Runtime:       awslambda.Runtime_PROVIDED_AL2023(),
		Architecture:  awslambda.Architecture_ARM_64(),
		Handler:       jsii.String("bootstrap"),
		Code:          code,
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

// functionCode returns the function's code: the prebuilt code, or an
// asset that go build fills at synth, hashed by SourceHash. When the
// stack's assets are not bundled (aws:cdk:bundling-stacks leaves it out:
// tests, cdk synth of other stacks) CDK neither builds nor reads the
// asset, so no Go command runs and the hash is a placeholder
// (unbundledHash), as CDK's own bundled assets get then.
func functionCode(scope constructs.Construct, props *GoFunctionProps) (awslambda.Code, error) {
	given := 0
	for _, set := range []bool{props.Entry != "", props.PrebuiltDir != "", props.Code != nil} {
		if set {
			given++
		}
	}
	if given != 1 {
		return nil, errors.New("give exactly one of props.Entry (the main package to build: a directory of your module such as \"lambda/api\", or an import path such as \"github.com/triggers-dev/triggers/lambda/api\"), props.PrebuiltDir (a directory holding a prebuilt bootstrap) and props.Code")
	}
	switch {
	case props.Code != nil:
		return props.Code, nil
	case props.PrebuiltDir != "":
		if err := CheckBootstrap(props.PrebuiltDir); err != nil {
			return nil, fmt.Errorf("PrebuiltDir: %w", err)
		}
		return awslambda.Code_FromAsset(jsii.String(props.PrebuiltDir), nil), nil
	}
	module := props.ModuleDir
	if module == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		if module, err = ModuleRoot(wd); err != nil {
			return nil, fmt.Errorf("%w: set props.ModuleDir to your Go module's root", err)
		}
	}
	if !IsImportPath(props.Entry) {
		if st, err := os.Stat(filepath.Join(module, props.Entry)); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("entry %q is not a directory under %s: give the main package's directory relative to your module root, or its import path (\"github.com/triggers-dev/triggers/lambda/api\")", props.Entry, module)
		}
	}
	hash := unbundledHash(props.Entry)
	if *awscdk.Stack_Of(scope).BundlingRequired() {
		var err error
		if hash, err = SourceHash(module, props.Entry); err != nil {
			return nil, err
		}
	}
	return awslambda.Code_FromAsset(jsii.String(module), &awss3assets.AssetOptions{
		AssetHashType: awscdk.AssetHashType_CUSTOM,
		AssetHash:     jsii.String(hash),
		Bundling: &awscdk.BundlingOptions{
			// Used only if local bundling is impossible; it never is
			// where Go is installed, and synth fails otherwise.
			Image: awscdk.DockerImage_FromRegistry(jsii.String("public.ecr.aws/docker/library/golang:1.26")),
			Local: &localBundler{moduleDir: module, entry: props.Entry},
		},
	}), nil
}

// CheckBootstrap reports whether dir holds a prebuilt function binary that
// Lambda's provided.al2023 runtime on arm64 can run: a regular, executable,
// linux/arm64 ELF file named bootstrap. The error names the path and the fix.
func CheckBootstrap(dir string) error {
	p := filepath.Join(dir, "bootstrap")
	build := fmt.Sprintf("build it with %s go build -tags lambda.norpc -trimpath -buildvcs=false -ldflags \"-s -w\" -o %s <main package> (scripts/build-lambdas.sh does this for this repository's functions)", strings.Join(buildEnv, " "), p)
	st, err := os.Stat(p)
	switch {
	case err != nil:
		return fmt.Errorf("no prebuilt binary at %s: %s", p, build)
	case !st.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file: %s", p, build)
	case st.Mode().Perm()&0o111 == 0:
		return fmt.Errorf("%s is not executable: chmod +x it (Lambda runs it as is)", p)
	}
	f, err := elf.Open(p)
	if err != nil {
		return fmt.Errorf("%s is not an ELF binary (%v): %s", p, err, build)
	}
	defer f.Close()
	if f.Machine != elf.EM_AARCH64 || f.Class != elf.ELFCLASS64 {
		return fmt.Errorf("%s is built for %v, not linux/arm64 (the function runs on arm64): %s", p, f.Machine, build)
	}
	return nil
}

// FunctionName returns the function's name.
func (f *GoFunction) FunctionName() *string { return f.Function.FunctionName() }

// FunctionArn returns the function's ARN.
func (f *GoFunction) FunctionArn() *string { return f.Function.FunctionArn() }

// GrantPrincipal returns the principal that grants give permissions to (the
// function's role), so a GoFunction can be passed to Grant* methods.
func (f *GoFunction) GrantPrincipal() awsiam.IPrincipal { return f.Function.GrantPrincipal() }
