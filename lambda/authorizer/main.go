// Command authorizer is the API Gateway REQUEST authorizer of the Triggers
// API: it hashes the presented API key, looks it up in the API-keys table
// and returns the tenant id in the authorizer context.
// Configuration: see internal/appconfig and docs/runtime.md.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/triggers-dev/triggers/internal/apikey"
	"github.com/triggers-dev/triggers/internal/appconfig"
	"github.com/triggers-dev/triggers/internal/awsdb"
	"github.com/triggers-dev/triggers/internal/lambdaadapter"
)

func main() {
	cfg, err := appconfig.LoadAuthorizer(os.Getenv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "authorizer: configuration: %v\n", err)
		os.Exit(1)
	}
	client, err := awsdb.NewClient(context.Background(), awsdb.Options{EndpointURL: cfg.Endpoint})
	if err != nil {
		fmt.Fprintf(os.Stderr, "authorizer: %v\n", err)
		os.Exit(1)
	}
	keys := apikey.NewStore(client, cfg.APIKeysTable)
	lambda.Start(lambdaadapter.Authorizer(keys, cfg.KeySources, appconfig.Logger(os.Stdout, cfg.LogLevel)))
}
