// Command triggers is the CDK app: it reads context (cdk.json, -c flags),
// builds every stack and synthesizes them into cdk.out/.
package main

import (
	"fmt"
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	_ "github.com/triggers-dev/triggers/internal/synth/jsiienv" // before any jsii package: silences Node's banner
	"github.com/triggers-dev/triggers/internal/synth/jsiirt"
	"github.com/triggers-dev/triggers/stacks"
)

func main() {
	defer jsiirt.Close()
	app := awscdk.NewApp(nil)
	cfg, err := stacks.ConfigFromContext(app)
	if err != nil {
		jsiirt.Close()
		fmt.Fprintln(os.Stderr, "triggers:", err)
		os.Exit(2)
	}
	stacks.Build(app, cfg)
	if v := app.Node().TryGetContext(jsii.String(stacks.ContextCdkNag)); v != false && v != "false" {
		stacks.CheckWithCdkNag(app)
	}
	app.Synth(nil)
}
