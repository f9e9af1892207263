// Command api is the Lambda function serving the Triggers HTTP API v1
// behind an API Gateway REST API (proxy integration, REQUEST authorizer).
// Configuration: see lambda/fnconfig and docs/runtime.md.
//
// Init makes no network call: with CURSOR_SECRET_ARN the cursor key is
// read from Secrets Manager on the first request (lazyProxy).
package main

import (
	"context"
	"fmt"
	"net/http"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/triggers-dev/triggers/internal/apigw"
	"github.com/triggers-dev/triggers/internal/awsenv"
	"github.com/triggers-dev/triggers/internal/cursor"
	"github.com/triggers-dev/triggers/internal/ddb"
	"github.com/triggers-dev/triggers/internal/emf"
	"github.com/triggers-dev/triggers/internal/httpapi"
	"github.com/triggers-dev/triggers/internal/store"
	"github.com/triggers-dev/triggers/internal/webhook/dispatch"
	"github.com/triggers-dev/triggers/internal/webhook/secretbox"
	"github.com/triggers-dev/triggers/lambda/fnconfig"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "api: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	cfg, err := fnconfig.LoadAPI(os.Getenv)
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	dbOpts := ddb.Options{EndpointURL: cfg.Endpoint}
	// No network call and no failure here: a missing region or
	// credential fails each request, naming the variable.
	awsCfg := awsenv.Config(os.Getenv, dbOpts)
	client := ddb.ClientFromConfig(awsCfg, dbOpts)
	var metrics emf.Recorder = emf.Nop{}
	if cfg.MetricsNamespace != "" {
		// stdout is the function's log: CloudWatch Logs extracts the metrics.
		if metrics, err = emf.New(os.Stdout, cfg.MetricsNamespace); err != nil {
			return err
		}
	}
	log := fnconfig.Logger(os.Stdout, cfg.LogLevel)
	storeOpts := []store.Option{store.WithProfile(cfg.EventsProfile), store.WithSharding(cfg.EventsSharding)}
	if cfg.WriterRegion != "" {
		// A global table: every new event names the region that accepted it.
		storeOpts = append(storeOpts, store.WithOriginRegion(cfg.Region))
	}
	storeOpts = append(storeOpts, store.WithRoundHold(cfg.RoundHold))
	st := store.New(client, cfg.EventsTable, storeOpts...)
	var webhooks *httpapi.Webhooks
	if cfg.WebhookQueueURL != "" {
		retry := dispatch.SQSQueue{Client: sqs.NewFromConfig(awsCfg), URL: cfg.WebhookQueueURL}
		// Seals new signing secrets (kms:Encrypt only: this function
		// cannot read a stored secret back).
		sealer, err := secretbox.New(kms.NewFromConfig(awsCfg), cfg.WebhookSecretsKey, secretbox.Options{})
		if err != nil {
			return err
		}
		webhooks = &httpapi.Webhooks{Store: st, Redeliver: dispatch.Redeliver(retry, st), Recover: dispatch.Recover(retry), Secrets: sealer}
	}
	apiCfg := httpapi.Config{
		Webhooks:     webhooks,
		Store:        st,
		CursorSecret: cfg.CursorSecret,
		Retention:    cfg.Retention,
		KeySources:   cfg.KeySources,
		Logger:       log,
		Metrics:      metrics,
		WriterRegion: cfg.WriterRegion,
		Region:       cfg.Region,
		CORS:         cfg.CORS,
	}
	if cfg.CursorSecretARN == "" {
		api, err := httpapi.New(apiCfg)
		if err != nil {
			return err
		}
		lambda.Start(apigw.Proxy(api))
		return nil
	}
	secrets := secretsmanager.NewFromConfig(awsCfg)
	l := &lazyProxy{log: log, cors: cfg.CORS, build: func(ctx context.Context) (http.Handler, error) {
		secret, err := fetchSecret(ctx, secrets, cfg.CursorSecretARN, cursor.MinSecretBytes)
		if err != nil {
			return nil, err
		}
		c := apiCfg
		c.CursorSecret = secret
		api, err := httpapi.New(c)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errMisconfigured, err)
		}
		return api, nil
	}}
	lambda.Start(l.handle)
	return nil
}
