package streamconsumer

import (
	"errors"
	"fmt"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ErrMalformed marks a stream record that can never be delivered: an
// image that does not convert, or an item that is not a well-formed event.
var ErrMalformed = errors.New("malformed stream record")

// AttributeValue converts one attribute value of a Lambda stream event
// (aws-lambda-go) into the aws-sdk-go-v2 DynamoDB type, recursively. It
// covers S, N, B, BOOL, NULL, M, L, SS, NS and BS, and copies byte slices.
// A value aws-lambda-go cannot represent consistently (the zero
// DynamoDBAttributeValue, say) is an error, never a panic.
func AttributeValue(av events.DynamoDBAttributeValue) (types.AttributeValue, error) {
	return attributeValue(av, 0)
}

// maxDepth bounds the nesting the converter follows; DynamoDB itself
// stops at 32 levels.
const maxDepth = 64

func attributeValue(av events.DynamoDBAttributeValue, depth int) (out types.AttributeValue, err error) {
	// aws-lambda-go's accessors panic when a value's content does not
	// match its data type; turn that into an error at the level where it
	// happens, so the error names the path.
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("attribute value of data type %d is inconsistent: %v", av.DataType(), r)
		}
	}()
	if depth > maxDepth {
		return nil, fmt.Errorf("attribute value nested deeper than %d levels", maxDepth)
	}
	switch av.DataType() {
	case events.DataTypeString:
		return &types.AttributeValueMemberS{Value: av.String()}, nil
	case events.DataTypeNumber:
		return &types.AttributeValueMemberN{Value: av.Number()}, nil
	case events.DataTypeBinary:
		// The zero DynamoDBAttributeValue claims to be binary but holds
		// nothing: Binary panics, and the deferred recover reports it.
		return &types.AttributeValueMemberB{Value: append([]byte{}, av.Binary()...)}, nil
	case events.DataTypeBoolean:
		return &types.AttributeValueMemberBOOL{Value: av.Boolean()}, nil
	case events.DataTypeNull:
		return &types.AttributeValueMemberNULL{Value: true}, nil
	case events.DataTypeMap:
		src := av.Map()
		m := make(map[string]types.AttributeValue, len(src))
		for k, v := range src {
			c, err := attributeValue(v, depth+1)
			if err != nil {
				return nil, fmt.Errorf("map key %q: %w", k, err)
			}
			m[k] = c
		}
		return &types.AttributeValueMemberM{Value: m}, nil
	case events.DataTypeList:
		src := av.List()
		l := make([]types.AttributeValue, len(src))
		for i, v := range src {
			c, err := attributeValue(v, depth+1)
			if err != nil {
				return nil, fmt.Errorf("list index %d: %w", i, err)
			}
			l[i] = c
		}
		return &types.AttributeValueMemberL{Value: l}, nil
	case events.DataTypeStringSet:
		return &types.AttributeValueMemberSS{Value: append([]string{}, av.StringSet()...)}, nil
	case events.DataTypeNumberSet:
		return &types.AttributeValueMemberNS{Value: append([]string{}, av.NumberSet()...)}, nil
	case events.DataTypeBinarySet:
		src := av.BinarySet()
		bs := make([][]byte, len(src))
		for i, b := range src {
			bs[i] = append([]byte{}, b...)
		}
		return &types.AttributeValueMemberBS{Value: bs}, nil
	}
	return nil, fmt.Errorf("unknown attribute data type %d", av.DataType())
}

// Item converts a stream image (NewImage, OldImage or Keys) into a
// DynamoDB item, as item.EventFromItem takes it.
func Item(image map[string]events.DynamoDBAttributeValue) (map[string]types.AttributeValue, error) {
	item := make(map[string]types.AttributeValue, len(image))
	for name, av := range image {
		v, err := AttributeValue(av)
		if err != nil {
			return nil, fmt.Errorf("attribute %q: %w", name, err)
		}
		item[name] = v
	}
	return item, nil
}
