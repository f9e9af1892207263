package fnconfig

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/triggers-dev/triggers/contract"
)

// Consumer is the configuration of the stream consumer function.
type Consumer struct {
	// QueueURL is the delivery queue (an SQS queue URL).
	QueueURL string
	LogLevel slog.Level
	// Endpoint overrides the SQS endpoint; empty on AWS.
	Endpoint string
	// DeadLetterQueueURL is DEAD_LETTER_QUEUE_URL: where malformed records
	// are parked. Empty: they fail the batch (the event source mapping's
	// bisect and on-failure destination handle them).
	DeadLetterQueueURL string
}

// LoadConsumer reads the stream consumer's configuration (documented in
// docs/delivery.md):
// DELIVERY_QUEUE_URL (an absolute http or https URL) is required;
// LOG_LEVEL (debug, info, warn, error; default info) and SQS_ENDPOINT are
// optional.
func LoadConsumer(getenv func(string) string) (Consumer, error) {
	var errs []error
	c := Consumer{
		QueueURL: strings.TrimSpace(getenv(contract.EnvDeliveryQueueURL)),
		Endpoint: strings.TrimSpace(getenv(contract.EnvSQSEndpoint)),

		DeadLetterQueueURL: strings.TrimSpace(getenv(contract.EnvDeadLetterQueueURL)),
	}
	if c.QueueURL == "" {
		errs = append(errs, fmt.Errorf("%s is not set: set it to the delivery queue URL (https://sqs.<region>.amazonaws.com/<account>/<queue>)", contract.EnvDeliveryQueueURL))
	} else if err := checkQueueURL(contract.EnvDeliveryQueueURL, c.QueueURL, ""); err != nil {
		errs = append(errs, err)
	}
	if c.DeadLetterQueueURL != "" {
		if err := checkQueueURL(contract.EnvDeadLetterQueueURL, c.DeadLetterQueueURL, ", or leave it unset"); err != nil {
			errs = append(errs, err)
		}
	}
	lvl, err := parseLevel(getenv(contract.EnvLogLevel))
	if err != nil {
		errs = append(errs, err)
	}
	c.LogLevel = lvl
	return c, errors.Join(errs...)
}
