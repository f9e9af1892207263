// Command api is the Lambda function serving the Triggers HTTP API v1
// behind an API Gateway REST API (proxy integration, REQUEST authorizer).
// Configuration: see internal/appconfig and docs/runtime.md.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/triggers-dev/triggers/internal/appconfig"
	"github.com/triggers-dev/triggers/internal/awsdb"
	"github.com/triggers-dev/triggers/internal/cursor"
	"github.com/triggers-dev/triggers/internal/emf"
	"github.com/triggers-dev/triggers/internal/httpapi"
	"github.com/triggers-dev/triggers/internal/lambdaadapter"
	"github.com/triggers-dev/triggers/internal/secrets"
	"github.com/triggers-dev/triggers/internal/store"
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintf(os.Stderr, "api: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	cfg, err := appconfig.LoadAPI(os.Getenv)
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	awsCfg, err := awsdb.LoadConfig(ctx, awsdb.Options{EndpointURL: cfg.Endpoint})
	if err != nil {
		return err
	}
	client := dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = &cfg.Endpoint
		}
	})
	secret := cfg.CursorSecret
	if cfg.CursorSecretARN != "" {
		if secret, err = secrets.Fetch(ctx, secretsmanager.NewFromConfig(awsCfg), cfg.CursorSecretARN, cursor.MinSecretBytes); err != nil {
			return err
		}
	}
	var metrics emf.Recorder = emf.Nop{}
	if cfg.MetricsNamespace != "" {
		// stdout is the function's log: CloudWatch Logs extracts the metrics.
		if metrics, err = emf.New(os.Stdout, cfg.MetricsNamespace); err != nil {
			return err
		}
	}
	api, err := httpapi.New(httpapi.Config{
		Store:        store.New(client, cfg.EventsTable),
		CursorSecret: secret,
		Retention:    cfg.Retention,
		KeySources:   cfg.KeySources,
		Logger:       appconfig.Logger(os.Stdout, cfg.LogLevel),
		Metrics:      metrics,
	})
	if err != nil {
		return err
	}
	lambda.Start(lambdaadapter.Proxy(api))
	return nil
}
