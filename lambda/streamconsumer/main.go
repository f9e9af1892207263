// Command streamconsumer is the Lambda function consuming the events
// table's DynamoDB stream (NEW_AND_OLD_IMAGES; it reads the new image): it forwards every newly
// inserted event to the SQS delivery queue and reports partial batch
// failures. Configuration: see lambda/fnconfig and docs/delivery.md.
package main

import (
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/triggers-dev/triggers/internal/awsenv"
	"github.com/triggers-dev/triggers/internal/ddb"
	"github.com/triggers-dev/triggers/internal/streamconsumer"
	"github.com/triggers-dev/triggers/lambda/fnconfig"
)

func main() {
	cfg, err := fnconfig.LoadConsumer(os.Getenv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "streamconsumer: configuration: %v\n", err)
		os.Exit(1)
	}
	log := fnconfig.Logger(os.Stdout, cfg.LogLevel)
	// The project's one AWS configuration (bounded attempts, each with a
	// timeout), from the environment Lambda sets; its endpoint override is
	// DynamoDB's, so SQS sets its own.
	awsCfg := awsenv.Config(os.Getenv, ddb.Options{})
	client := sqs.NewFromConfig(awsCfg, func(o *sqs.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
	})
	// On a global table, records of events another region accepted are
	// that region's to deliver (streamconsumer.Foreign).
	dc := streamconsumer.Config{Sender: client, QueueURL: cfg.QueueURL, Logger: log, Region: os.Getenv("AWS_REGION")}
	if cfg.DeadLetterQueueURL != "" {
		dc.DeadLetter = streamconsumer.SQSDeadLetter{Client: client, QueueURL: cfg.DeadLetterQueueURL}
	}
	consumer, err := streamconsumer.New(dc)
	if err != nil {
		fmt.Fprintf(os.Stderr, "streamconsumer: %v\n", err)
		os.Exit(1)
	}
	lambda.Start(consumer.HandleJSON)
}
