package store

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/triggers-dev/triggers/internal/item"
)

// ToAttributeValue converts decoded JSON (map[string]any, []any, string,
// json.Number, bool, nil) to a DynamoDB attribute value. Numbers go to N
// as their original digits, so nothing is lost to float64.
func ToAttributeValue(v any) (types.AttributeValue, error) {
	switch x := v.(type) {
	case nil:
		return &types.AttributeValueMemberNULL{Value: true}, nil
	case bool:
		return &types.AttributeValueMemberBOOL{Value: x}, nil
	case string:
		return &types.AttributeValueMemberS{Value: x}, nil
	case json.Number:
		return &types.AttributeValueMemberN{Value: string(x)}, nil
	case map[string]any:
		m := make(map[string]types.AttributeValue, len(x))
		for k, e := range x {
			av, err := ToAttributeValue(e)
			if err != nil {
				return nil, err
			}
			m[k] = av
		}
		return &types.AttributeValueMemberM{Value: m}, nil
	case []any:
		l := make([]types.AttributeValue, len(x))
		for i, e := range x {
			av, err := ToAttributeValue(e)
			if err != nil {
				return nil, err
			}
			l[i] = av
		}
		return &types.AttributeValueMemberL{Value: l}, nil
	}
	return nil, fmt.Errorf("cannot store JSON value of type %T", v)
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func n(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

func getS(it map[string]types.AttributeValue, name string) string { return item.GetS(it, name) }

func getN(it map[string]types.AttributeValue, name string) int64 { return item.GetN(it, name) }

// AttributeValue is the SDK's attribute value type, re-exported so that
// callers of Item and EventFromItem need not import the SDK's types.
type AttributeValue = types.AttributeValue
