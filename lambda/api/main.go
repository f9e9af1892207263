// Command api is the Lambda function serving the Triggers HTTP API v1
// behind an API Gateway REST API (proxy integration, REQUEST authorizer).
// Configuration: see internal/appconfig and docs/runtime.md.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/triggers-dev/triggers/internal/appconfig"
	"github.com/triggers-dev/triggers/internal/awsdb"
	"github.com/triggers-dev/triggers/internal/httpapi"
	"github.com/triggers-dev/triggers/internal/lambdaadapter"
	"github.com/triggers-dev/triggers/internal/store"
)

func main() {
	cfg, err := appconfig.LoadAPI(os.Getenv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "api: configuration: %v\n", err)
		os.Exit(1)
	}
	log := appconfig.Logger(os.Stdout, cfg.LogLevel)
	client, err := awsdb.NewClient(context.Background(), awsdb.Options{EndpointURL: cfg.Endpoint})
	if err != nil {
		fmt.Fprintf(os.Stderr, "api: %v\n", err)
		os.Exit(1)
	}
	api, err := httpapi.New(httpapi.Config{
		Store:        store.New(client, cfg.EventsTable),
		CursorSecret: cfg.CursorSecret,
		Retention:    cfg.Retention,
		Logger:       log,
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "api: %v\n", err)
		os.Exit(1)
	}
	lambda.Start(lambdaadapter.Proxy(api))
}
