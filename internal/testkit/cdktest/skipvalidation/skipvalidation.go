// Package skipvalidation turns CDK's template validation off for a test
// binary: import it for its side effect in a test package whose templates
// cfn-lint checks (cdktest.CfnLint), beside jsiienv:
//
//	import _ "github.com/triggers-dev/triggers/internal/testkit/cdktest/skipvalidation"
//
// The CDK library validates every template at synth with its CloudFormation
// Validate plugin unless the environment variable CDK_VALIDATION is
// "false"; the plugin's rule engine starts once per process and takes most
// of an in-process synth's time (about 5 s of 7 s for the app on a 2-core
// machine, far more under load). The jsii runtime's Node process takes its
// environment when the first jsii package initializes, before TestMain, so
// the variable is set in this package's init, which runs before package os
// and so before any jsii package (see package jsiienv for why). A caller's
// own CDK_VALIDATION is left alone, and so are the CDK apps a test starts
// with an environment of its own. Keep one synth with validation on.
package skipvalidation

import "syscall"

// Env is the environment variable the CDK library reads: "false" skips
// template validation.
const Env = "CDK_VALIDATION"

func init() {
	if _, ok := syscall.Getenv(Env); !ok {
		_ = syscall.Setenv(Env, "false")
	}
}
