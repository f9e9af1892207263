// Command app deploys the multi-region example, one region per run, from
// the module's root:
//
//	cdk deploy --app 'go run ./examples/multiregion/app' -c account=111111111111 -c region=us-east-1 -c primary=us-east-1 -c replicas=eu-west-1
//	cdk deploy --app 'go run ./examples/multiregion/app' -c account=111111111111 -c region=eu-west-1 -c primary=us-east-1 \
//	  -c events-table-name=... -c events-stream-arn=<eu-west-1 stream ARN> -c api-keys-table-name=...
package main

import (
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/triggers-dev/triggers/examples/multiregion"
)

func main() {
	app := awscdk.NewApp(nil)
	get := func(key string) string {
		s, _ := app.Node().TryGetContext(jsii.String(key)).(string)
		return s
	}
	props := &multiregion.RegionStackProps{
		Account: get("account"), Region: get("region"), Primary: get("primary"),
		EventsTableName: get("events-table-name"), EventsStreamArn: get("events-stream-arn"), ApiKeysTableName: get("api-keys-table-name"),
	}
	if r := get("replicas"); r != "" {
		props.Replicas = strings.Split(r, ",")
	}
	multiregion.NewRegionStack(app, jsii.String("Triggers-"+props.Region), props)
	app.Synth(nil)
}
