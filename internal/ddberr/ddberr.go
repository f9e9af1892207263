// Package ddberr classifies DynamoDB errors for the HTTP contract: which
// failures are "try again later" (503) and which blame the item (400).
package ddberr

import (
	"context"
	"errors"
	"net"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"
)

// throttleCodes are the error codes of throttling and of DynamoDB's own
// transient failures.
var throttleCodes = map[string]bool{
	"ProvisionedThroughputExceededException": true,
	"ThrottlingException":                    true,
	"RequestLimitExceeded":                   true,
	"LimitExceededException":                 true,
	"TransactionInProgressException":         true,
	"InternalServerError":                    true,
	"ServiceUnavailable":                     true,
}

// itemProblems are fragments of ValidationException messages that blame
// the item rather than the request the code built.
var itemProblems = []string{"item size", "nesting levels", "number overflow", "number underflow", "precision", "empty attribute name", "maximum allowed size"}

// Unavailable reports whether err means DynamoDB could not serve the call
// for now: throttling that outlasted the SDK's retries, an exhausted retry
// quota, DynamoDB's transient errors, network failures and timeouts.
func Unavailable(err error) bool {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return throttleCodes[apiErr.ErrorCode()]
	}
	var quota *ratelimit.QuotaExceededError
	var maxAttempts *retry.MaxAttemptsError
	var netErr net.Error
	return errors.As(err, &quota) || errors.As(err, &maxAttempts) || errors.As(err, &netErr) || errors.Is(err, context.DeadlineExceeded)
}

// InvalidItem reports whether err is a ValidationException about the item
// itself (too large, too deep, bad numbers, empty attribute names), and
// returns DynamoDB's message.
func InvalidItem(err error) (string, bool) {
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "ValidationException" {
		return "", false
	}
	msg := strings.ToLower(apiErr.ErrorMessage())
	for _, p := range itemProblems {
		if strings.Contains(msg, p) {
			return apiErr.ErrorMessage(), true
		}
	}
	return "", false
}
