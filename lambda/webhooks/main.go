// Command webhooks is the Lambda function of webhook push delivery: it
// consumes the delivery queue (new events, from the stream consumer) and
// the webhook retry queue (retries and redeliveries), POSTs each event to
// its tenant's matching subscriptions with Standard Webhooks signatures
// (the secrets opened with KMS, WEBHOOK_SECRETS_KEY),
// records every attempt and reports partial batch failures. Logic:
// internal/webhook/dispatch; configuration: lambda/fnconfig (LoadWebhooks) and
// docs/delivery.md.
package main

import (
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/triggers-dev/triggers/internal/awsenv"
	"github.com/triggers-dev/triggers/internal/ddb"
	"github.com/triggers-dev/triggers/internal/emf"
	"github.com/triggers-dev/triggers/internal/store"
	"github.com/triggers-dev/triggers/internal/webhook"
	"github.com/triggers-dev/triggers/internal/webhook/dispatch"
	"github.com/triggers-dev/triggers/internal/webhook/secretbox"
	"github.com/triggers-dev/triggers/lambda/fnconfig"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "webhooks: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	cfg, err := fnconfig.LoadWebhooks(os.Getenv)
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	log := fnconfig.Logger(os.Stdout, cfg.LogLevel)
	dbOpts := ddb.Options{EndpointURL: cfg.Endpoint}
	awsCfg := awsenv.Config(os.Getenv, dbOpts)
	queue := sqs.NewFromConfig(awsCfg, func(o *sqs.Options) {
		if cfg.SQSEndpoint != "" {
			o.BaseEndpoint = aws.String(cfg.SQSEndpoint)
		}
	})
	var metrics dispatch.Metrics
	if cfg.MetricsNamespace != "" {
		// stdout is the function's log: CloudWatch Logs extracts the metrics.
		if metrics, err = emf.New(os.Stdout, cfg.MetricsNamespace); err != nil {
			return err
		}
	}
	// Opens the sealed signing secrets (kms:Decrypt, this function only),
	// caching each for a few minutes.
	secrets, err := secretbox.New(kms.NewFromConfig(awsCfg), cfg.SecretsKey, secretbox.Options{})
	if err != nil {
		return err
	}
	d, err := dispatch.New(dispatch.Config{
		Secrets:      secrets,
		Metrics:      metrics,
		Store:        store.New(ddb.ClientFromConfig(awsCfg, dbOpts), cfg.EventsTable, store.WithProfile(cfg.EventsProfile), store.WithSharding(cfg.EventsSharding), store.WithRoundHold(cfg.RoundHold)),
		Queue:        dispatch.SQSQueue{Client: queue, URL: cfg.QueueURL},
		Client:       webhook.NewHTTPClient(webhook.ClientOptions{Timeout: cfg.Timeout, AllowPrivate: cfg.AllowPrivate}),
		Schedule:     cfg.Schedule,
		DisableAfter: cfg.DisableAfter,
		Logger:       log,
		// The endpoints' isolation: zero values take dispatch's defaults.
		Parallel:              cfg.Parallel,
		BreakerThreshold:      cfg.BreakerThreshold,
		BreakerCooldown:       cfg.BreakerCooldown,
		SlowAfter:             cfg.SlowAfter,
		EndpointRate:          cfg.EndpointRate,
		SlowLaneAfter:         cfg.SlowLaneAfter,
		TenantSlowConcurrency: cfg.TenantSlowConcurrency,
	})
	if err != nil {
		return err
	}
	lambda.Start(d.HandleSQS)
	return nil
}
