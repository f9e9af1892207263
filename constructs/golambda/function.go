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
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
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
	// Description of the function.
	//
	// Default: none.
	Description *string
	// LogRetention is how long the function's log group keeps logs
	// (unused with FunctionOptions.LogGroup, which keeps its own).
	//
	// Default: awslogs.RetentionDays_ONE_MONTH.
	LogRetention awslogs.RetentionDays
	// Tracing enables AWS X-Ray active tracing.
	//
	// Default: false.
	Tracing bool
	// FunctionOptions size, place and build the function, or give its
	// code.
	FunctionOptions
}

// FunctionOptions are what a deployer may set on each function: the
// options of the CDK's own Function that a Go function needs. Every
// construct of this module that makes functions takes them per function
// (triggersapi.FunctionOptions and archive.FunctionOptions are this type).
// Zero values take the defaults.
type FunctionOptions struct {
	// Code is the function's code, built beforehand: any awslambda.Code
	// (awslambda.Code_FromBucket, Code_FromAsset of a zip...) holding an
	// executable named bootstrap for Architecture. It is used as given; no
	// Go command runs at synth.
	//
	// Default: none; Entry is built at synth.
	Code awslambda.Code
	// MemoryMiB is the memory size, whole MiB from 128 to 10240 (checked
	// at synth; a token is not checked).
	//
	// Default: 256 (the constructs of this module set their own).
	MemoryMiB float64
	// Timeout of one invocation, whole seconds from 1 second to 15
	// minutes (Lambda's limits, checked at synth; a token is not checked).
	//
	// Default: 10 seconds (the constructs of this module set their own).
	Timeout awscdk.Duration
	// Architecture is the instruction set the function runs on:
	// awslambda.Architecture_ARM_64() or awslambda.Architecture_X86_64().
	// Entry is built for it; a prebuilt binary must match it.
	//
	// Default: arm64 (Graviton: cheaper per GB-second).
	Architecture awslambda.Architecture
	// BuildTags are build tags added to lambda.norpc when Entry is built.
	//
	// Default: none.
	BuildTags []string
	// Ldflags are linker flags added after -s -w when Entry is built, such
	// as "-X main.version=1.2.3".
	//
	// Default: none.
	Ldflags string
	// Environment holds variables of your own, added to those the
	// construct sets; a name the construct sets, or one Lambda reserves
	// (AWS_REGION, _HANDLER...), fails synth.
	//
	// Default: none.
	Environment map[string]*string
	// Vpc places the function in a VPC: it then reaches the internet (and
	// AWS APIs without VPC endpoints) only through a NAT, from the NAT's
	// addresses. The role gets the network-interface permissions Lambda
	// needs.
	//
	// Default: no VPC.
	Vpc awsec2.IVpc
	// VpcSubnets are the subnets of Vpc the function uses.
	//
	// Default: the VPC's private subnets (the CDK's default).
	VpcSubnets *awsec2.SubnetSelection
	// SecurityGroups of the function in Vpc.
	//
	// Default: one new security group allowing all outbound traffic.
	SecurityGroups []awsec2.ISecurityGroup
	// Layers are Lambda layers (extensions, say) added to the function.
	//
	// Default: none.
	Layers []awslambda.ILayerVersion
	// Role is an execution role of your own. The construct adds to its
	// policy what the function needs (its log group, its grants), unless
	// the role is imported immutable (awsiam.Role_FromRoleArn with
	// Mutable false): then it must already allow them, and synth warns
	// (WarningImmutableRole).
	//
	// Default: a new role allowing writes to the function's log group only.
	Role awsiam.IRole
	// LogGroup is a log group of your own for the function's logs
	// (LogRetention is then not applied).
	//
	// Default: a new log group, retained on stack deletion.
	LogGroup awslogs.ILogGroup
	// ReservedConcurrency reserves concurrent executions for the function
	// and caps it there, as the CDK's reservedConcurrentExecutions: nil
	// for no reservation, 0 to stop every invocation (an emergency
	// switch), n for n.
	//
	// Default: nil, no reservation.
	ReservedConcurrency *float64
	// ProvisionedConcurrency keeps that many execution environments
	// initialized, on an alias named "live" of the function's current
	// version; the construct's integrations and event sources then invoke
	// the alias (GoFunction.Invocable). 0 means none.
	//
	// Default: 0.
	ProvisionedConcurrency float64
}

// takesStatements reports whether role, after a statement was added to its
// policy, has a policy of its own to hold it: a role made here or imported
// mutable gets one (DefaultPolicy, Policy; a LazyRole one level down); an
// immutable one (awsiam.Role_FromRoleArn with Mutable false) has no
// children and answers StatementAdded true all the same.
func takesStatements(role awsiam.IRole) bool {
	for _, c := range *role.Node().FindAll(constructs.ConstructOrder_PREORDER) {
		if _, ok := c.(awsiam.Policy); ok {
			return true
		}
	}
	return false
}

// WarningImmutableRole is the id of the synth warning a GoFunction gives
// when FunctionOptions.Role takes no statements (awsiam.Role_FromRoleArn
// with Mutable false): what the construct and every grant to the function
// would add is dropped, so the role must already allow it. Acknowledge it
// with awscdk.Annotations_Of(fn).AcknowledgeWarning once the role does.
const WarningImmutableRole = "triggers:immutable-role"

// reservedEnv are the environment variables Lambda sets itself and refuses
// in a function's configuration.
var reservedEnv = []string{"_HANDLER", "_X_AMZN_TRACE_ID", "AWS_DEFAULT_REGION", "AWS_REGION", "AWS_EXECUTION_ENV",
	"AWS_LAMBDA_FUNCTION_NAME", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "AWS_LAMBDA_FUNCTION_VERSION",
	"AWS_LAMBDA_INITIALIZATION_TYPE", "AWS_LAMBDA_LOG_GROUP_NAME", "AWS_LAMBDA_LOG_STREAM_NAME",
	"AWS_ACCESS_KEY", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
	"AWS_LAMBDA_RUNTIME_API", "LAMBDA_TASK_ROOT", "LAMBDA_RUNTIME_DIR"}

// MergeEnvironment returns own with o.Environment added, or an error
// naming each variable of o.Environment that own already sets or that
// Lambda reserves, or whose name Lambda refuses. own is not changed.
func (o *FunctionOptions) MergeEnvironment(own map[string]*string) (map[string]*string, error) {
	out := make(map[string]*string, len(own)+len(o.Environment))
	for k, v := range own {
		out[k] = v
	}
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(o.Environment)) {
		switch {
		case !validEnvName(k):
			errs = append(errs, fmt.Errorf("Environment %q is not a name Lambda accepts: use a letter then letters, digits and '_'", k))
		case slices.Contains(reservedEnv, k):
			errs = append(errs, fmt.Errorf("Environment %q is reserved by Lambda, which sets it: remove it", k))
		case own[k] != nil:
			errs = append(errs, fmt.Errorf("Environment %q is set by the construct (the function reads it): remove it, or use the construct's prop for it", k))
		default:
			out[k] = o.Environment[k]
		}
	}
	return out, errors.Join(errs...)
}

func validEnvName(k string) bool {
	if k == "" || !(k[0] >= 'a' && k[0] <= 'z' || k[0] >= 'A' && k[0] <= 'Z') {
		return false
	}
	return !strings.ContainsFunc(k, func(r rune) bool {
		return !(r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	})
}

// Build returns the Build of o's architecture, tags and linker flags, or
// an error naming an architecture Lambda has no Go build for or a bad tag.
func (o *FunctionOptions) Build() (Build, error) {
	b := Build{Tags: o.BuildTags, Ldflags: o.Ldflags}
	if o.Architecture != nil {
		switch name := *o.Architecture.Name(); name {
		case *awslambda.Architecture_ARM_64().Name():
			b.GOARCH = "arm64"
		case *awslambda.Architecture_X86_64().Name():
			b.GOARCH = "amd64"
		default:
			return b, fmt.Errorf("Architecture %q is not one Lambda runs: use awslambda.Architecture_ARM_64() (the default) or awslambda.Architecture_X86_64()", name)
		}
	}
	return b, b.Validate()
}

// Validate reports every bad option, each naming the value and the fix.
func (o *FunctionOptions) Validate() error {
	var errs []error
	// A token (a parameter's value) is left to CloudFormation: its
	// placeholder number is no value to check.
	tok := cdkutil.IsNumberToken
	if m := o.MemoryMiB; m != 0 && !tok(m) {
		switch {
		case m < 128 || m > 10240:
			errs = append(errs, fmt.Errorf("MemoryMiB %v is outside 128-10240: Lambda accepts 128 MiB to 10,240 MiB", m))
		case m != math.Trunc(m):
			// CloudFormation refuses a MemorySize that is not an integer.
			errs = append(errs, fmt.Errorf("MemoryMiB %v is not a whole number: Lambda takes memory in whole MiB; give one from 128 to 10240, such as %v", m, min(max(128, math.Round(m)), 10240)))
		}
	}
	if _, err := o.Build(); err != nil {
		errs = append(errs, err)
	}
	if r := o.ReservedConcurrency; r != nil && !tok(*r) && (*r < 0 || *r != float64(int64(*r))) {
		errs = append(errs, fmt.Errorf("ReservedConcurrency %v is not a whole number >= 0: give nil for no reservation, 0 to stop all invocations, or the executions to reserve", *r))
	}
	if p := o.ProvisionedConcurrency; tok(p) {
		errs = append(errs, errors.New("ProvisionedConcurrency is a token: give a literal number (the alias that holds it is made at synth, when it is above 0)"))
	} else if p < 0 || p != float64(int64(p)) {
		errs = append(errs, fmt.Errorf("ProvisionedConcurrency %v is not a whole number >= 0: give the execution environments to keep initialized (0: none)", p))
	} else if r := o.ReservedConcurrency; r != nil && !tok(*r) && p > *r {
		errs = append(errs, fmt.Errorf("ProvisionedConcurrency %v is above ReservedConcurrency %v: Lambda refuses that; lower it or raise the reservation", p, *r))
	}
	if d := o.Timeout; d != nil && !cdkutil.IsDurationToken(d) {
		ms := *d.ToMilliseconds(&awscdk.TimeConversionOptions{Integral: jsii.Bool(false)})
		v := time.Duration(ms * float64(time.Millisecond))
		switch {
		case ms != math.Trunc(ms/1000)*1000:
			errs = append(errs, fmt.Errorf("Timeout %s is not whole seconds: Lambda takes a timeout in whole seconds; give one from 1s to 15m, such as %s", v, min(max(time.Second, v.Round(time.Second)), 15*time.Minute)))
		case v < time.Second || v > 15*time.Minute:
			errs = append(errs, fmt.Errorf("Timeout %s is outside 1s-15m: Lambda runs an invocation for 1 second to 15 minutes; give a timeout in that range", v))
		}
	}
	if o.Vpc == nil && (o.VpcSubnets != nil || len(o.SecurityGroups) > 0) {
		errs = append(errs, errors.New("VpcSubnets or SecurityGroups are set without Vpc: give the Vpc they belong to"))
	}
	if _, err := o.MergeEnvironment(nil); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// GoFunction is a Go Lambda function, built at synth time from a main
// package that the caller's module resolves, or from a prebuilt binary.
// Its children are "Resource" (the awslambda.Function), "LogGroup" and
// "ServiceRole" (allowed to write to that log group only) unless
// FunctionOptions give a log group or a role, and "Alias" (named "live")
// with provisioned concurrency.
type GoFunction struct {
	constructs.Construct
	// Function is the Lambda function.
	Function awslambda.Function
	// LogGroup is the function's log group (made, or given).
	LogGroup awslogs.ILogGroup
	// Role is the function's execution role (made, or given); grants add
	// to its policy.
	Role awsiam.IRole
	// Alias is the "live" alias that holds the provisioned concurrency, or
	// nil without it.
	Alias awslambda.Alias

	grantPrincipal awsiam.IPrincipal // Function's, read once (GrantPrincipal)
}

// AliasName is the name of the alias a function with provisioned
// concurrency is invoked through.
const AliasName = "live"

// NewGoFunction creates the function, building Entry (or taking the
// prebuilt code). Bad props panic with a message naming the value and the
// fix.
func NewGoFunction(scope constructs.Construct, id *string, props *GoFunctionProps) *GoFunction {
	if props == nil {
		props = &GoFunctionProps{}
	}
	fail := func(err error) { panic(fmt.Errorf("golambda %q: %w", cdkutil.Deref(id), err)) }
	if err := props.FunctionOptions.Validate(); err != nil {
		fail(err)
	}
	build, _ := props.FunctionOptions.Build()
	mem := props.MemoryMiB
	if mem == 0 {
		mem = DefaultMemoryMiB
	}
	code, err := functionCode(scope, props, build)
	if err != nil {
		fail(err)
	}

	f := &GoFunction{}
	constructs.NewConstruct_Override(f, scope, id)
	f.LogGroup = props.LogGroup
	if f.LogGroup == nil {
		retention := props.LogRetention
		if retention == "" {
			retention = awslogs.RetentionDays_ONE_MONTH
		}
		f.LogGroup = awslogs.NewLogGroup(f, jsii.String("LogGroup"), &awslogs.LogGroupProps{
			Retention:     retention,
			RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
		})
	}
	timeout := props.Timeout
	if timeout == nil {
		timeout = awscdk.Duration_Seconds(jsii.Number(DefaultTimeoutSeconds))
	}
	tracing := awslambda.Tracing_DISABLED
	if props.Tracing {
		tracing = awslambda.Tracing_ACTIVE
	}
	// A role of its own that may write only to its own log group: no AWS
	// managed policy (AWSLambdaBasicExecutionRole allows every log group).
	f.Role = props.Role
	if f.Role == nil {
		f.Role = awsiam.NewRole(f, jsii.String("ServiceRole"), &awsiam.RoleProps{
			AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
			Description: props.Description,
		})
	}
	f.Role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("logs:CreateLogStream", "logs:PutLogEvents"),
		Resources: jsii.Strings(*f.LogGroup.LogGroupArn()),
	}))
	var wildcard []string
	if props.Tracing {
		wildcard = append(wildcard, "X-Ray's PutTraceSegments and PutTelemetryRecords support no resource-level permissions; Lambda's tracing grant must use Resource *")
	}
	if props.Vpc != nil {
		// What AWSLambdaVPCAccessExecutionRole allows, which the CDK adds
		// only to a role it makes itself.
		f.Role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions: jsii.Strings("ec2:CreateNetworkInterface", "ec2:DescribeNetworkInterfaces", "ec2:DescribeSubnets",
				"ec2:DeleteNetworkInterface", "ec2:AssignPrivateIpAddresses", "ec2:UnassignPrivateIpAddresses"),
			Resources: jsii.Strings("*"),
		}))
		wildcard = append(wildcard, "Lambda's network interfaces in the VPC (ec2:CreateNetworkInterface and the rest of AWSLambdaVPCAccessExecutionRole) support no resource-level permissions")
	}
	if len(wildcard) > 0 {
		cdknag.NagSuppressions_AddResourceSuppressions(f.Role, &[]*cdknag.NagPackSuppression{{
			Id:        jsii.String("AwsSolutions-IAM5"),
			Reason:    jsii.String(strings.Join(wildcard, "; ")),
			AppliesTo: &[]any{"Resource::*"},
		}}, jsii.Bool(true))
	}
	arch := awslambda.Architecture_ARM_64()
	if build.goarch() == "amd64" {
		arch = awslambda.Architecture_X86_64()
	}
	fp := &awslambda.FunctionProps{
		Role:          f.Role,
		Runtime:       awslambda.Runtime_PROVIDED_AL2023(),
		Architecture:  arch,
		Handler:       jsii.String("bootstrap"),
		Code:          code,
		Description:   props.Description,
		MemorySize:    jsii.Number(mem),
		Timeout:       timeout,
		LogGroup:      f.LogGroup,
		LoggingFormat: awslambda.LoggingFormat_JSON,
		Tracing:       tracing,
		Vpc:           props.Vpc,
		VpcSubnets:    props.VpcSubnets,
	}
	if len(props.SecurityGroups) > 0 {
		fp.SecurityGroups = &props.SecurityGroups
	}
	if len(props.Layers) > 0 {
		fp.Layers = &props.Layers
	}
	if len(props.Environment) > 0 {
		env := props.Environment
		fp.Environment = &env
	}
	if r := props.ReservedConcurrency; r != nil {
		fp.ReservedConcurrentExecutions = jsii.Number(*r)
	}
	f.Function = awslambda.NewFunction(f, jsii.String("Resource"), fp)
	if props.Role != nil && !takesStatements(f.Role) {
		// The CDK drops statements to an immutable role without a word
		// (and answers that they were added): the function would deploy
		// and then fail on its first write. Checked once the function
		// exists: a LazyRole makes its role when the function reads it.
		own := "logs:CreateLogStream and logs:PutLogEvents on its log group"
		if props.Vpc != nil {
			own += ", the VPC network-interface actions"
		}
		awscdk.Annotations_Of(f).AddWarningV2(jsii.String(WarningImmutableRole), jsii.String(fmt.Sprintf(
			"the execution role %s takes no statements (imported with Mutable false, or otherwise immutable): "+
				"the function's own (%s) and every grant made to the function (tables, queues, keys, by this "+
				"library or your code) are not added to it; the role must already allow them, or pass a mutable "+
				"role (docs/constructs.md, GoFunction)", *f.Role.Node().Path(), own)))
	}
	if p := props.ProvisionedConcurrency; p > 0 {
		f.Alias = awslambda.NewAlias(f, jsii.String("Alias"), &awslambda.AliasProps{
			AliasName:                       jsii.String(AliasName),
			Version:                         f.Function.CurrentVersion(),
			ProvisionedConcurrentExecutions: jsii.Number(p),
		})
	}
	return f
}

// Invocable returns what the function's callers should invoke: the alias
// holding provisioned concurrency when there is one, else the function.
// Integrations, authorizers and event sources attached to anything else
// would not use the provisioned environments.
func (f *GoFunction) Invocable() awslambda.IFunction {
	if f.Alias != nil {
		return f.Alias
	}
	return f.Function
}

// functionCode returns the function's code: the prebuilt code, or an
// asset that go build fills at synth, hashed by SourceHash. When the
// stack's assets are not bundled (aws:cdk:bundling-stacks leaves it out:
// tests, cdk synth of other stacks) CDK neither builds nor reads the
// asset, so no Go command runs and the hash is a placeholder
// (unbundledHash), as CDK's own bundled assets get then.
func functionCode(scope constructs.Construct, props *GoFunctionProps, build Build) (awslambda.Code, error) {
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
		if err := build.CheckBootstrap(props.PrebuiltDir); err != nil {
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
		if hash, err = build.SourceHash(module, props.Entry); err != nil {
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
			Local: &localBundler{moduleDir: module, entry: props.Entry, build: build},
		},
	}), nil
}

// CheckBootstrap reports whether dir holds a prebuilt function binary that
// Lambda's provided.al2023 runtime on arm64 can run (Build.CheckBootstrap
// of the default build).
func CheckBootstrap(dir string) error { return Build{}.CheckBootstrap(dir) }

// CheckBootstrap reports whether dir holds a prebuilt function binary that
// Lambda's provided.al2023 runtime can run on b's architecture: a regular,
// executable, linux ELF file for GOARCH named bootstrap. The error names
// the path and the fix.
func (b Build) CheckBootstrap(dir string) error {
	p := filepath.Join(dir, "bootstrap")
	cmd := b.flags()
	for i, a := range cmd {
		if strings.ContainsAny(a, " ") {
			cmd[i] = strconv.Quote(a)
		}
	}
	cmd = append(append([]string{"build"}, cmd...), "-o", p, "<main package>")
	build := fmt.Sprintf("build it with %s go %s (scripts/build-lambdas.sh does this for this repository's functions)", strings.Join(b.Env(), " "), strings.Join(cmd, " "))
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
	want := map[string]elf.Machine{"arm64": elf.EM_AARCH64, "amd64": elf.EM_X86_64}[b.goarch()]
	if f.Machine != want || f.Class != elf.ELFCLASS64 {
		return fmt.Errorf("%s is built for %v, not linux/%s (the function runs on %s): %s", p, f.Machine, b.goarch(), map[string]string{"arm64": "arm64", "amd64": "x86_64"}[b.goarch()], build)
	}
	return nil
}

// FunctionName returns the function's name.
func (f *GoFunction) FunctionName() *string { return f.Function.FunctionName() }

// FunctionArn returns the function's ARN.
func (f *GoFunction) FunctionArn() *string { return f.Function.FunctionArn() }

// GrantPrincipal returns the principal that grants give permissions to (the
// function's role), so a GoFunction can be passed to Grant* methods.
func (f *GoFunction) GrantPrincipal() awsiam.IPrincipal {
	if f.grantPrincipal == nil {
		f.grantPrincipal = f.Function.GrantPrincipal()
	}
	return f.grantPrincipal
}
