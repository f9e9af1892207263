// Command archiver is the Lambda function that keeps the events DynamoDB's
// TTL deletes: it reads the events table's stream (view
// NEW_AND_OLD_IMAGES; the event source mapping passes only REMOVE records
// made by dynamodb.amazonaws.com) and writes each expired event's JSON to
// the archive bucket as gzip JSON lines, one object per tenant and day
// (internal/archive), reporting partial batch failures. Records it can
// never archive are parked on the event source mapping's failure queue
// (DEAD_LETTER_QUEUE_URL), so they do not hold up the shard while the
// mapping retries. Configuration: see lambda/fnconfig and docs/runtime.md.
package main

import (
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/triggers-dev/triggers/internal/archive"
	"github.com/triggers-dev/triggers/internal/awsenv"
	"github.com/triggers-dev/triggers/internal/ddb"
	"github.com/triggers-dev/triggers/internal/streamconsumer"
	"github.com/triggers-dev/triggers/lambda/fnconfig"
)

func main() {
	cfg, err := fnconfig.LoadArchiver(os.Getenv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "archiver: configuration: %v\n", err)
		os.Exit(1)
	}
	log := fnconfig.Logger(os.Stdout, cfg.LogLevel)
	// The project's one AWS configuration (bounded attempts, each with a
	// timeout), from the environment Lambda sets; its endpoint override is
	// DynamoDB's, so S3 and SQS set their own.
	awsCfg := awsenv.Config(os.Getenv, ddb.Options{})
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
			o.UsePathStyle = true
		}
	})
	ac := archive.Config{Putter: client, Bucket: cfg.Bucket, Prefix: cfg.Prefix, Logger: log}
	if cfg.DeadLetterQueueURL != "" {
		queue := sqs.NewFromConfig(awsCfg, func(o *sqs.Options) {
			if cfg.SQSEndpoint != "" {
				o.BaseEndpoint = aws.String(cfg.SQSEndpoint)
			}
		})
		ac.DeadLetter = streamconsumer.SQSDeadLetter{Client: queue, QueueURL: cfg.DeadLetterQueueURL}
	}
	a, err := archive.New(ac)
	if err != nil {
		fmt.Fprintf(os.Stderr, "archiver: %v\n", err)
		os.Exit(1)
	}
	lambda.Start(a.HandleJSON)
}
