package ddb_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/assert"

	"github.com/triggers-dev/triggers/internal/ddb"
)

func TestClassify(t *testing.T) {
	api := func(code, msg string) error {
		return fmt.Errorf("operation error: %w", &smithy.GenericAPIError{Code: code, Message: msg})
	}
	tests := []struct {
		name        string
		err         error
		unavailable bool
		invalid     bool
	}{
		{"throughput", api("ProvisionedThroughputExceededException", "x"), true, false},
		{"throttling", api("ThrottlingException", "x"), true, false},
		{"max attempts", &retry.MaxAttemptsError{Attempt: 3, Err: errors.New("x")}, true, false},
		{"deadline", fmt.Errorf("x: %w", context.DeadlineExceeded), true, false},
		{"item size", api("ValidationException", "Item size has exceeded the maximum allowed size"), false, true},
		{"nesting", api("ValidationException", "Nesting Levels have exceeded supported limits"), false, true},
		{"bad expression", api("ValidationException", "Invalid UpdateExpression: Syntax error"), false, false},
		{"missing table", api("ResourceNotFoundException", "Requested resource not found"), false, false},
		{"plain", errors.New("boom"), false, false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.unavailable, ddb.Unavailable(tt.err), "Unavailable(%s)", tt.name)
		_, invalid := ddb.InvalidItem(tt.err)
		assert.Equal(t, tt.invalid, invalid, "InvalidItem(%s)", tt.name)
	}
}
