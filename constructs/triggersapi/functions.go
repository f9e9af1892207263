package triggersapi

import (
	"fmt"
	"path/filepath"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/triggers-dev/triggers/constructs/golambda"
	"github.com/triggers-dev/triggers/constructs/internal/cdkutil"
)

// functionDefaults are what every function of the package shares.
type functionDefaults struct {
	retention   awslogs.RetentionDays
	tracing     bool
	prebuiltDir string
	// invokedBy says how the function is invoked, and where its failures
	// go (the reason for cdk-nag's Serverless-LambdaDLQ).
	invokedBy string
}

// newFunction creates one of the package's functions: from its prebuilt
// code when given, else built at synth from its package by import path, in
// the CDK app's module (this module, or another that depends on it).
func newFunction(scope constructs.Construct, id, pkg, desc string, d functionDefaults, o *FunctionOptions, defTimeout float64, env map[string]*string) *golambda.GoFunction {
	p := &golambda.GoFunctionProps{Description: jsii.String(desc), LogRetention: d.retention, Tracing: d.tracing}
	if o != nil {
		p.FunctionOptions = *o
	}
	if p.Timeout == nil {
		p.Timeout = awscdk.Duration_Seconds(jsii.Number(defTimeout))
	}
	var err error
	if p.Environment, err = p.MergeEnvironment(env); err != nil {
		panic(fmt.Errorf("triggersapi %s: %w", id, err))
	}
	switch {
	case p.Code != nil:
	case d.prebuiltDir != "":
		p.PrebuiltDir = filepath.Join(d.prebuiltDir, prebuiltDirs[pkg])
	default:
		p.Entry = pkg
	}
	fn := golambda.NewGoFunction(scope, jsii.String(id), p)
	// cdk-nag's Serverless pack: DeadLetterConfig catches failed
	// asynchronous invocations only; these functions are invoked
	// synchronously (API Gateway) or by event source mappings, whose
	// failures have their own destinations.
	cdkutil.Suppress(fn.Function, "Serverless-LambdaDLQ", d.invokedBy)
	if !d.tracing {
		cdkutil.Suppress(fn.Function, "Serverless-LambdaTracing", tracingOff)
	}
	return fn
}

// tracingOff is why X-Ray tracing may be off: it is the deployer's choice.
const tracingOff = "X-Ray tracing is opt-in (TriggersApiProps.Tracing): every request is followed across the gateway and the functions by its request id and X-Correlation-Id in the JSON logs, and active tracing costs per trace"
