package streampoll

import (
	"fmt"

	"github.com/aws/aws-lambda-go/events"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// LambdaAttributeValue converts an attribute value read with the DynamoDB
// Streams API into the aws-lambda-go form Lambda delivers, so that records
// read locally (see StreamReader) take the same path as in Lambda.
//
// A nil value becomes an empty map: DynamoDB Local's Streams API writes an
// empty map as a type-less {} (not {"M":{}}), which the SDK decodes as
// nil; real DynamoDB Streams never yields nil.
func LambdaAttributeValue(av streamtypes.AttributeValue) (events.DynamoDBAttributeValue, error) {
	switch x := av.(type) {
	case nil:
		return events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{}), nil
	case *streamtypes.AttributeValueMemberS:
		return events.NewStringAttribute(x.Value), nil
	case *streamtypes.AttributeValueMemberN:
		return events.NewNumberAttribute(x.Value), nil
	case *streamtypes.AttributeValueMemberB:
		return events.NewBinaryAttribute(append([]byte{}, x.Value...)), nil
	case *streamtypes.AttributeValueMemberBOOL:
		return events.NewBooleanAttribute(x.Value), nil
	case *streamtypes.AttributeValueMemberNULL:
		return events.NewNullAttribute(), nil
	case *streamtypes.AttributeValueMemberM:
		m, err := LambdaImage(x.Value)
		if err != nil {
			return events.DynamoDBAttributeValue{}, err
		}
		return events.NewMapAttribute(m), nil
	case *streamtypes.AttributeValueMemberL:
		l := make([]events.DynamoDBAttributeValue, len(x.Value))
		for i, v := range x.Value {
			c, err := LambdaAttributeValue(v)
			if err != nil {
				return events.DynamoDBAttributeValue{}, fmt.Errorf("list index %d: %w", i, err)
			}
			l[i] = c
		}
		return events.NewListAttribute(l), nil
	case *streamtypes.AttributeValueMemberSS:
		return events.NewStringSetAttribute(append([]string{}, x.Value...)), nil
	case *streamtypes.AttributeValueMemberNS:
		return events.NewNumberSetAttribute(append([]string{}, x.Value...)), nil
	case *streamtypes.AttributeValueMemberBS:
		bs := make([][]byte, len(x.Value))
		for i, b := range x.Value {
			bs[i] = append([]byte{}, b...)
		}
		return events.NewBinarySetAttribute(bs), nil
	}
	return events.DynamoDBAttributeValue{}, fmt.Errorf("unsupported stream attribute value %T", av)
}

// LambdaImage converts a whole image read with the DynamoDB Streams API
// into the aws-lambda-go form; nil stays nil.
func LambdaImage(image map[string]streamtypes.AttributeValue) (map[string]events.DynamoDBAttributeValue, error) {
	if image == nil {
		return nil, nil
	}
	out := make(map[string]events.DynamoDBAttributeValue, len(image))
	for name, av := range image {
		v, err := LambdaAttributeValue(av)
		if err != nil {
			return nil, fmt.Errorf("attribute %q: %w", name, err)
		}
		out[name] = v
	}
	return out, nil
}
