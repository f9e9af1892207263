// Command platform is a platform team's CDK app that deploys the Triggers
// service from the constructs of github.com/triggers-dev/triggers, as
// another module would: the Triggers data stack (events and API-keys
// tables and the archive of expired events, stateful) and the team's own stack (the Triggers API, a second
// consumer of the events stream with its own Go handler, monitoring that
// alarms to the team's SNS topic).
//
//	npx cdk synth                                   # builds the Go functions at synth
//	npx cdk synth -c platform:env=prod -c platform:alarm-email=oncall@example.com
//	npx cdk synth -c platform:prebuilt-dir=bin      # binaries built in CI (see docs/constructs.md)
package main

import (
	"fmt"
	"os"
	"regexp"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/triggers-dev/triggers/constructs/archive"
	"github.com/triggers-dev/triggers/stacks"
)

// Context keys this app reads (cdk.json or -c key=value).
const (
	ContextEnv         = "platform:env"          // environment name: dev, staging, prod...
	ContextPrebuiltDir = "platform:prebuilt-dir" // directory of prebuilt binaries; empty: build at synth
	ContextAlarmEmail  = "platform:alarm-email"  // subscribed to the alarm topic; empty: none
)

var envRE = regexp.MustCompile(`^[a-z][a-z0-9-]{0,15}$`)

func main() {
	app := awscdk.NewApp(nil)
	env := contextString(app, ContextEnv, "dev")
	if !envRE.MatchString(env) {
		jsii.Close()
		fmt.Fprintf(os.Stderr, "platform: %s %q is invalid: use a lowercase name such as dev or prod\n", ContextEnv, env)
		os.Exit(2)
	}
	prebuilt := contextString(app, ContextPrebuiltDir, "")
	// The data stack holds the tables and the archive of expired events
	// (its function, too, may come prebuilt: <dir>/archiver/bootstrap).
	data := stacks.NewTriggersDataStack(app, jsii.String("platform-"+env+"-data"), &stacks.TriggersDataStackProps{
		Env:     env,
		Archive: archive.ExpiredEventsArchiveProps{PrebuiltDir: prebuilt},
	})
	NewPlatformStack(app, jsii.String("platform-"+env+"-triggers"), &PlatformStackProps{
		Env:          env,
		EventsTable:  data.Events,
		ApiKeysTable: data.ApiKeys,
		PrebuiltDir:  prebuilt,
		AlarmEmail:   contextString(app, ContextAlarmEmail, ""),
	})
	app.Synth(nil)
	jsii.Close()
}

// contextString returns the context value of key, or def.
func contextString(app awscdk.App, key, def string) string {
	if v, ok := app.Node().TryGetContext(jsii.String(key)).(string); ok && v != "" {
		return v
	}
	return def
}
