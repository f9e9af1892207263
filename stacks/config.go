// Package stacks composes the reusable constructs into deployable stacks,
// one file per system of the specs. Build adds every stack to an app.
package stacks

import (
	"fmt"
	"regexp"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/triggers-dev/triggers/constructs/dynamotable"
)

// Context keys the app reads (cdk.json or `cdk synth -c key=value`).
const (
	// ContextEnv selects the environment named in stack names: dev, staging or prod.
	ContextEnv = "triggers:env"
	// ContextBilling selects the events table billing: on-demand or provisioned.
	ContextBilling = "triggers:billing"
)

// Environments the app accepts in ContextEnv.
var Environments = []string{"dev", "staging", "prod"}

// Config is what the app reads from context.
type Config struct {
	// Env names the environment: dev, staging or prod. Default: dev.
	Env string
	// Billing is the events table billing mode. Default: on-demand.
	Billing dynamotable.Billing
}

var envRE = regexp.MustCompile(`^[a-z][a-z0-9-]{0,15}$`)

// ConfigFromContext reads Config from the app's context and validates it.
func ConfigFromContext(app awscdk.App) (Config, error) {
	cfg := Config{Env: "dev", Billing: dynamotable.OnDemand}
	if v := app.Node().TryGetContext(jsii.String(ContextEnv)); v != nil {
		s, ok := v.(string)
		if !ok || !envRE.MatchString(s) {
			return cfg, fmt.Errorf("context %s=%v is not an environment name: use dev, staging or prod (lowercase letters, digits and '-', at most 16)", ContextEnv, v)
		}
		cfg.Env = s
	}
	if v := app.Node().TryGetContext(jsii.String(ContextBilling)); v != nil {
		switch v {
		case "on-demand":
			cfg.Billing = dynamotable.OnDemand
		case "provisioned":
			cfg.Billing = dynamotable.Provisioned
		default:
			return cfg, fmt.Errorf("context %s=%v is unknown: use on-demand or provisioned", ContextBilling, v)
		}
	}
	return cfg, nil
}

// Build adds every stack of the app for cfg.
func Build(app awscdk.App, cfg Config) {
	NewTriggersDataStack(app, jsii.String(StackName("triggers", cfg.Env, "data")), &TriggersDataStackProps{
		StackProps: awscdk.StackProps{
			Description: jsii.String(fmt.Sprintf("Triggers %s: stateful resources (events table). Seeds 000/001.", cfg.Env)),
		},
		Env:     cfg.Env,
		Billing: cfg.Billing,
	})
}

// StackName joins a system, an environment and a part into a stack name,
// such as "triggers-dev-data".
func StackName(system, env, part string) string {
	if part == "" {
		return system + "-" + env
	}
	return system + "-" + env + "-" + part
}
