package ddb_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/aws/smithy-go"

	"github.com/triggers-dev/triggers/internal/ddb"
)

// TestInvalidItemMessages: every item-validation message DynamoDB Local
// 3.3.1 returns for a write (collected by writing bad items to it) blames
// the item. "cannot be converted into a number" (0e2147483648) used to be
// missed, which turned a client error into a 500.
func TestInvalidItemMessages(t *testing.T) {
	api := func(code, msg string) error {
		return fmt.Errorf("operation error DynamoDB: PutItem: %w", &smithy.GenericAPIError{Code: code, Message: msg})
	}
	item := []string{
		"A value provided cannot be converted into a number",
		"Empty attribute name",
		"Nesting Levels have exceeded supported limits: Attributes in the item have nested levels beyond supported limit",
		"Item size has exceeded the maximum allowed size",
		"Number overflow. Attempting to store a number with magnitude larger than supported range",
		"Number underflow. Attempting to store a number with magnitude smaller than supported range",
		"DynamoDB only supports precision up to 38 digits",
	}
	for _, m := range item {
		if _, ok := ddb.InvalidItem(api("ValidationException", m)); !ok {
			t.Errorf("InvalidItem(%q) = false, want true", m)
		}
		if got, ok := ddb.InvalidWrite(api("ValidationException", m)); !ok || got != m {
			t.Errorf("InvalidWrite(%q) = %q, %v, want the message, true", m, got, ok)
		}
	}
	// On a write, an unknown ValidationException blames the item too...
	if _, ok := ddb.InvalidWrite(api("ValidationException", "Some new wording about a bad value")); !ok {
		t.Errorf("InvalidWrite(unknown validation message) = false, want true")
	}
	// ...but not one about the request's expressions or the table's keys.
	for _, m := range []string{
		"Invalid ConditionExpression: Syntax error; token: \"<EOF>\"",
		"Value provided in ExpressionAttributeNames unused in expressions: keys: {#x}",
		"One or more parameter values were invalid: Missing the key user_id in the item",
		"The provided key element does not match the schema",
		"One or more parameter values were invalid: Type mismatch for key user_id expected: N actual: S",
	} {
		if _, ok := ddb.InvalidWrite(api("ValidationException", m)); ok {
			t.Errorf("InvalidWrite(%q) = true, want false", m)
		}
	}
	for _, err := range []error{api("ConditionalCheckFailedException", "The conditional request failed"), errors.New("boom"), nil} {
		if _, ok := ddb.InvalidWrite(err); ok {
			t.Errorf("InvalidWrite(%v) = true, want false", err)
		}
	}
}
