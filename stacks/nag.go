package stacks

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// ContextCdkNag turns the cdk-nag checks (AwsSolutions and Serverless
// packs) on or off for the app (true or false). Findings are errors and
// fail synthesis.
const ContextCdkNag = "triggers:cdk-nag"

// CheckWithCdkNag runs cdk-nag's AwsSolutions and Serverless packs over
// scope (an app or a stack). Every finding the constructs accept is
// suppressed where it arises, on its resource, with a reason; anything
// else fails synthesis.
func CheckWithCdkNag(scope constructs.IConstruct) {
	awscdk.Aspects_Of(scope).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
	awscdk.Aspects_Of(scope).Add(cdknag.NewServerlessChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
}
