// Error classification for the HTTP contract: which failures are "try
// again later" (503) and which blame the item (400).

package ddb

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
// the item rather than the request the code built (messages as DynamoDB
// and DynamoDB Local 3.3.1 word them).
var itemProblems = []string{
	"item size",                // Item size has exceeded the maximum allowed size
	"maximum allowed size",     // Item size to update has exceeded the maximum allowed size
	"nesting levels",           // Nesting Levels have exceeded supported limits
	"number overflow",          // Number overflow. Attempting to store a number with magnitude larger than supported range
	"number underflow",         // Number underflow. ...
	"precision",                // DynamoDB only supports precision up to 38 digits
	"converted into a number",  // A value provided cannot be converted into a number (0e2147483648)
	"empty attribute name",     // Empty attribute name
	"empty string value",       // ... cannot contain an empty string value (key attributes)
	"size limit",               // Aggregated size of all range keys has exceeded the size limit
	"key values must be under", // Hash primary key values must be under 2048 bytes
}

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

// requestProblems are fragments of ValidationException messages that blame
// the request or the table rather than the values of an item: a broken
// expression, or a table whose keys differ from the schema (a deployment
// error, which must stay a 500).
var requestProblems = []string{
	"expression",                // Invalid ConditionExpression, ExpressionAttributeNames ...
	"missing the key",           // Missing the key user_id in the item
	"does not match the schema", // The provided key element does not match the schema
	"type mismatch for",         // Type mismatch for key / for Index Key
	"table",                     // Cannot do operations on a non-existent table
}

// InvalidWrite reports whether err, returned by a write of items the
// caller built itself (PutItem, BatchWriteItem, TransactWriteItems), is a
// ValidationException about the item's values, and returns DynamoDB's
// message. It is wider than InvalidItem, whose list of messages cannot be
// complete: every ValidationException counts, except the few that blame
// the request's expressions or the table's key schema.
func InvalidWrite(err error) (string, bool) {
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "ValidationException" {
		return "", false
	}
	if msg, ok := InvalidItem(err); ok {
		return msg, true
	}
	msg := strings.ToLower(apiErr.ErrorMessage())
	for _, p := range requestProblems {
		if strings.Contains(msg, p) {
			return "", false
		}
	}
	return apiErr.ErrorMessage(), true
}
