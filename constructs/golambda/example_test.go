package golambda_test

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/jsii-runtime-go"

	"github.com/triggers-dev/triggers/constructs/golambda"
)

// A function built at synth from a package of a dependency, by import path:
// go list and go build run in the CDK app's module, which resolves the
// dependency (module cache, replace or workspace). A package of your own
// module is named by its directory instead ("lambda/audit"). Bundling is
// skipped here; cdk synth builds the binary.
func ExampleNewGoFunction() {
	ctx := map[string]any{"aws:cdk:bundling-stacks": []any{}}
	stack := awscdk.NewStack(awscdk.NewApp(&awscdk.AppProps{Context: &ctx}), jsii.String("S"), nil)
	fn := golambda.NewGoFunction(stack, jsii.String("Authorizer"), &golambda.GoFunctionProps{
		Entry:           "github.com/triggers-dev/triggers/lambda/authorizer",
		FunctionOptions: golambda.FunctionOptions{MemoryMiB: 512},
	})
	fmt.Println(*fn.Node().Id())
	tmpl := assertions.Template_FromStack(stack, nil)
	tmpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
		"Runtime": "provided.al2023", "Architectures": []any{"arm64"}, "Handler": "bootstrap", "MemorySize": 512,
	})
	fmt.Println("built at synth")
	// Output:
	// Authorizer
	// built at synth
}

// A binary built in CI and uploaded as a zip: no Go command runs at synth.
// (PrebuiltDir takes a local directory holding bootstrap instead.)
func ExampleNewGoFunction_prebuilt() {
	stack := awscdk.NewStack(awscdk.NewApp(nil), jsii.String("S"), nil)
	artifacts := awss3.Bucket_FromBucketName(stack, jsii.String("Artifacts"), jsii.String("ci-artifacts"))
	golambda.NewGoFunction(stack, jsii.String("Api"), &golambda.GoFunctionProps{
		FunctionOptions: golambda.FunctionOptions{Code: awslambda.Code_FromBucket(artifacts, jsii.String("api/v1.4.0.zip"), nil)},
	})
	tmpl := assertions.Template_FromStack(stack, nil)
	tmpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
		"Code": map[string]any{"S3Bucket": "ci-artifacts", "S3Key": "api/v1.4.0.zip"},
	})
	fmt.Println("prebuilt")
	// Output: prebuilt
}

// Options of the CDK's Function: an x86_64 build with a version stamped by
// the linker, kept warm by provisioned concurrency on the "live" alias,
// which is what callers invoke (Invocable).
func ExampleFunctionOptions() {
	ctx := map[string]any{"aws:cdk:bundling-stacks": []any{}}
	stack := awscdk.NewStack(awscdk.NewApp(&awscdk.AppProps{Context: &ctx}), jsii.String("S"), nil)
	fn := golambda.NewGoFunction(stack, jsii.String("Api"), &golambda.GoFunctionProps{
		Entry: "github.com/triggers-dev/triggers/lambda/api",
		FunctionOptions: golambda.FunctionOptions{
			Architecture:           awslambda.Architecture_X86_64(),
			Ldflags:                "-X main.version=1.4.0",
			ReservedConcurrency:    jsii.Number(20),
			ProvisionedConcurrency: 2,
		},
	})
	tmpl := assertions.Template_FromStack(stack, nil)
	tmpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
		"Architectures": []any{"x86_64"}, "ReservedConcurrentExecutions": 20,
	})
	tmpl.HasResourceProperties(jsii.String("AWS::Lambda::Alias"), map[string]any{
		"Name": "live", "ProvisionedConcurrencyConfig": map[string]any{"ProvisionedConcurrentExecutions": 2},
	})
	fmt.Println(fn.Invocable() == awslambda.IFunction(fn.Alias))
	// Output: true
}
