// Command authorizer is the API Gateway REQUEST authorizer of the Triggers
// API: it hashes the presented API key, looks it up in the API-keys table
// and returns the tenant id in the authorizer context.
// Configuration: see lambda/fnconfig and docs/runtime.md.
package main

import (
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/triggers-dev/triggers/internal/apigw"
	"github.com/triggers-dev/triggers/internal/apikey"
	"github.com/triggers-dev/triggers/internal/awsenv"
	"github.com/triggers-dev/triggers/internal/ddb"
	"github.com/triggers-dev/triggers/lambda/fnconfig"
)

func main() {
	cfg, err := fnconfig.LoadAuthorizer(os.Getenv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "authorizer: configuration: %v\n", err)
		os.Exit(1)
	}
	dbOpts := ddb.Options{EndpointURL: cfg.Endpoint}
	client := ddb.ClientFromConfig(awsenv.Config(os.Getenv, dbOpts), dbOpts)
	keys := apikey.NewStore(client, cfg.APIKeysTable)
	lambda.Start(apigw.Authorizer(keys, cfg.KeySources, fnconfig.Logger(os.Stdout, cfg.LogLevel)))
}
