package golambda

import (
	"errors"
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/triggers-dev/triggers/constructs/internal/cdkutil"
)

// IGoFunction is a Go function as other constructs use it, made in this
// app (GoFunction) or deployed elsewhere (FromGoFunctionAttributes): the
// function for metrics, grants and event sources, what callers invoke,
// its log group, and the settings alarms are sized by.
type IGoFunction interface {
	constructs.IConstruct
	awsiam.IGrantable
	// FunctionName returns the function's name.
	FunctionName() *string
	// FunctionArn returns the function's ARN.
	FunctionArn() *string
	// Lambda returns the function.
	Lambda() awslambda.IFunction
	// Invocable returns what callers invoke: the provisioned-concurrency
	// alias when there is one, else the function.
	Invocable() awslambda.IFunction
	// Logs returns the function's log group.
	Logs() awslogs.ILogGroup
	// Timeout returns the function's timeout, or nil when unknown.
	Timeout() awscdk.Duration
	// ReservedConcurrency returns the function's reserved concurrency, or
	// nil when it has none or it is unknown.
	ReservedConcurrency() *float64
}

var _ IGoFunction = (*GoFunction)(nil)

// Lambda returns the function (Function).
func (f *GoFunction) Lambda() awslambda.IFunction { return f.Function }

// Logs returns the function's log group (LogGroup).
func (f *GoFunction) Logs() awslogs.ILogGroup { return f.LogGroup }

// Timeout returns the function's timeout.
func (f *GoFunction) Timeout() awscdk.Duration { return f.Function.Timeout() }

// ReservedConcurrency returns the function's reserved concurrency, or nil
// without one.
func (f *GoFunction) ReservedConcurrency() *float64 {
	if cfn, ok := f.Function.Node().DefaultChild().(awslambda.CfnFunction); ok {
		return cfn.ReservedConcurrentExecutions()
	}
	return nil
}

// GoFunctionAttributes describe a function deployed elsewhere (another
// stack or app) for FromGoFunctionAttributes.
type GoFunctionAttributes struct {
	// FunctionArn is the function's ARN. Required.
	FunctionArn *string
	// LogGroupName is the function's log group. Required: this module's
	// functions log to a group of their own, not /aws/lambda/<name>.
	LogGroupName *string
	// InvokeArn is what callers invoke: the ARN of the function's alias
	// holding provisioned concurrency, if it has one.
	//
	// Default: the function.
	InvokeArn *string
	// Timeout is the function's timeout (alarms on its duration are
	// sized by it).
	//
	// Default: unknown (alarms assume Lambda's default of 3 s).
	Timeout awscdk.Duration
	// ReservedConcurrency is the function's reserved concurrency (alarms
	// on its concurrency are sized by it).
	//
	// Default: none.
	ReservedConcurrency *float64
	// Role is the function's execution role, to grant it access; without
	// it grants to the function are no-ops.
	//
	// Default: none.
	Role awsiam.IRole
}

// importedFunction is a function deployed elsewhere.
type importedFunction struct {
	constructs.Construct
	fn, invoke awslambda.IFunction
	logs       awslogs.ILogGroup
	timeout    awscdk.Duration
	reserved   *float64
}

// FromGoFunctionAttributes imports a function deployed elsewhere. Missing
// required attributes panic with a message naming them.
func FromGoFunctionAttributes(scope constructs.Construct, id *string, attrs *GoFunctionAttributes) IGoFunction {
	if attrs == nil {
		attrs = &GoFunctionAttributes{}
	}
	var errs []error
	if attrs.FunctionArn == nil {
		errs = append(errs, errors.New("FunctionArn is required: the deployed function's ARN"))
	}
	if attrs.LogGroupName == nil {
		errs = append(errs, errors.New("LogGroupName is required: the function's log group (this module's functions log to their own group)"))
	}
	if err := errors.Join(errs...); err != nil {
		panic(fmt.Errorf("golambda %q: %w", cdkutil.Deref(id), err))
	}
	f := &importedFunction{timeout: attrs.Timeout, reserved: attrs.ReservedConcurrency}
	constructs.NewConstruct_Override(f, scope, id)
	f.fn = awslambda.Function_FromFunctionAttributes(f, jsii.String("Function"), &awslambda.FunctionAttributes{
		FunctionArn: attrs.FunctionArn, Role: attrs.Role, SameEnvironment: jsii.Bool(true),
	})
	f.invoke = f.fn
	if attrs.InvokeArn != nil {
		f.invoke = awslambda.Function_FromFunctionAttributes(f, jsii.String("Invocable"), &awslambda.FunctionAttributes{
			FunctionArn: attrs.InvokeArn, Role: attrs.Role, SameEnvironment: jsii.Bool(true),
		})
	}
	f.logs = awslogs.LogGroup_FromLogGroupName(f, jsii.String("LogGroup"), attrs.LogGroupName)
	return f
}

func (f *importedFunction) FunctionName() *string             { return f.fn.FunctionName() }
func (f *importedFunction) FunctionArn() *string              { return f.fn.FunctionArn() }
func (f *importedFunction) GrantPrincipal() awsiam.IPrincipal { return f.fn.GrantPrincipal() }
func (f *importedFunction) Lambda() awslambda.IFunction       { return f.fn }
func (f *importedFunction) Invocable() awslambda.IFunction    { return f.invoke }
func (f *importedFunction) Logs() awslogs.ILogGroup           { return f.logs }
func (f *importedFunction) Timeout() awscdk.Duration          { return f.timeout }
func (f *importedFunction) ReservedConcurrency() *float64     { return f.reserved }
