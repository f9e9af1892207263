package store

import (
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/triggers-dev/triggers/internal/item"
)

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func n(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

func getS(it map[string]types.AttributeValue, name string) string { return item.GetS(it, name) }

func getN(it map[string]types.AttributeValue, name string) int64 { return item.GetN(it, name) }

// AttributeValue is the SDK's attribute value type, re-exported so that
// callers of Item and EventFromItem need not import the SDK's types.
type AttributeValue = types.AttributeValue
