package streamconsumer_test

import (
	"encoding/json"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/dev/streampoll"
	"github.com/triggers-dev/triggers/internal/streamconsumer"
)

// TestAttributeValue checks the converter on every attribute type, with
// nesting, and the way back from the Streams API's types.
func TestAttributeValue(t *testing.T) {
	bin := []byte{0, 1, 2, 0xff}
	tests := []struct {
		name   string
		lambda events.DynamoDBAttributeValue
		stream streamtypes.AttributeValue
		want   types.AttributeValue
	}{
		{"S", events.NewStringAttribute("héllo ✓ 𝄞"), &streamtypes.AttributeValueMemberS{Value: "héllo ✓ 𝄞"}, &types.AttributeValueMemberS{Value: "héllo ✓ 𝄞"}},
		{"S empty", events.NewStringAttribute(""), &streamtypes.AttributeValueMemberS{Value: ""}, &types.AttributeValueMemberS{Value: ""}},
		{"N big integer", events.NewNumberAttribute("12345678901234567890123456789012345678"), &streamtypes.AttributeValueMemberN{Value: "12345678901234567890123456789012345678"}, &types.AttributeValueMemberN{Value: "12345678901234567890123456789012345678"}},
		{"N decimal", events.NewNumberAttribute("-0.000000000000000000000000000000000001"), &streamtypes.AttributeValueMemberN{Value: "-0.000000000000000000000000000000000001"}, &types.AttributeValueMemberN{Value: "-0.000000000000000000000000000000000001"}},
		{"B", events.NewBinaryAttribute(bin), &streamtypes.AttributeValueMemberB{Value: bin}, &types.AttributeValueMemberB{Value: bin}},
		{"B empty", events.NewBinaryAttribute([]byte{}), &streamtypes.AttributeValueMemberB{Value: []byte{}}, &types.AttributeValueMemberB{Value: []byte{}}},
		{"BOOL true", events.NewBooleanAttribute(true), &streamtypes.AttributeValueMemberBOOL{Value: true}, &types.AttributeValueMemberBOOL{Value: true}},
		{"BOOL false", events.NewBooleanAttribute(false), &streamtypes.AttributeValueMemberBOOL{Value: false}, &types.AttributeValueMemberBOOL{Value: false}},
		{"NULL", events.NewNullAttribute(), &streamtypes.AttributeValueMemberNULL{Value: true}, &types.AttributeValueMemberNULL{Value: true}},
		{"SS", events.NewStringSetAttribute([]string{"a", "b"}), &streamtypes.AttributeValueMemberSS{Value: []string{"a", "b"}}, &types.AttributeValueMemberSS{Value: []string{"a", "b"}}},
		{"NS", events.NewNumberSetAttribute([]string{"1", "2.5", "-3E+10"}), &streamtypes.AttributeValueMemberNS{Value: []string{"1", "2.5", "-3E+10"}}, &types.AttributeValueMemberNS{Value: []string{"1", "2.5", "-3E+10"}}},
		{"BS", events.NewBinarySetAttribute([][]byte{{1}, {2, 3}}), &streamtypes.AttributeValueMemberBS{Value: [][]byte{{1}, {2, 3}}}, &types.AttributeValueMemberBS{Value: [][]byte{{1}, {2, 3}}}},
		{"L empty", events.NewListAttribute([]events.DynamoDBAttributeValue{}), &streamtypes.AttributeValueMemberL{Value: []streamtypes.AttributeValue{}}, &types.AttributeValueMemberL{Value: []types.AttributeValue{}}},
		{"M empty", events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{}), &streamtypes.AttributeValueMemberM{Value: map[string]streamtypes.AttributeValue{}}, &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{}}},
		{
			"M and L nested",
			events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{
				"list": events.NewListAttribute([]events.DynamoDBAttributeValue{
					events.NewNumberAttribute("1"),
					events.NewNullAttribute(),
					events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{"deep": events.NewStringSetAttribute([]string{"x"})}),
				}),
				"flag": events.NewBooleanAttribute(true),
			}),
			&streamtypes.AttributeValueMemberM{Value: map[string]streamtypes.AttributeValue{
				"list": &streamtypes.AttributeValueMemberL{Value: []streamtypes.AttributeValue{
					&streamtypes.AttributeValueMemberN{Value: "1"},
					&streamtypes.AttributeValueMemberNULL{Value: true},
					&streamtypes.AttributeValueMemberM{Value: map[string]streamtypes.AttributeValue{"deep": &streamtypes.AttributeValueMemberSS{Value: []string{"x"}}}},
				}},
				"flag": &streamtypes.AttributeValueMemberBOOL{Value: true},
			}},
			&types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
				"list": &types.AttributeValueMemberL{Value: []types.AttributeValue{
					&types.AttributeValueMemberN{Value: "1"},
					&types.AttributeValueMemberNULL{Value: true},
					&types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"deep": &types.AttributeValueMemberSS{Value: []string{"x"}}}},
				}},
				"flag": &types.AttributeValueMemberBOOL{Value: true},
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := streamconsumer.AttributeValue(tt.lambda)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got, "AttributeValue(%s)", tt.name)

			back, err := streampoll.LambdaAttributeValue(tt.stream)
			require.NoError(t, err)
			assert.Equal(t, tt.lambda, back, "LambdaAttributeValue(%s)", tt.name)

			// Through Lambda's JSON encoding too, as the runtime decodes it.
			raw, err := json.Marshal(tt.lambda)
			require.NoError(t, err)
			var decoded events.DynamoDBAttributeValue
			require.NoError(t, json.Unmarshal(raw, &decoded))
			got, err = streamconsumer.AttributeValue(decoded)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got, "AttributeValue(json %s)", raw)
		})
	}
}

// TestAttributeValueCopies checks that converted byte slices do not
// alias the input.
func TestAttributeValueCopies(t *testing.T) {
	b := []byte{1, 2}
	got, err := streamconsumer.AttributeValue(events.NewBinaryAttribute(b))
	require.NoError(t, err)
	b[0] = 9
	assert.Equal(t, []byte{1, 2}, got.(*types.AttributeValueMemberB).Value)
}

func TestAttributeValueErrors(t *testing.T) {
	tests := []struct {
		name string
		in   events.DynamoDBAttributeValue
		want string
	}{
		{"zero value", events.DynamoDBAttributeValue{}, "inconsistent"},
		{"zero value inside a map", events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{"k": {}}), `map key "k"`},
		{"zero value inside a list", events.NewListAttribute([]events.DynamoDBAttributeValue{events.NewNullAttribute(), {}}), "list index 1"},
	}
	for _, tt := range tests {
		got, err := streamconsumer.AttributeValue(tt.in)
		assert.Nil(t, got, tt.name)
		assert.ErrorContains(t, err, tt.want, tt.name)
	}

	deep := events.NewNullAttribute()
	for range 70 {
		deep = events.NewListAttribute([]events.DynamoDBAttributeValue{deep})
	}
	_, err := streamconsumer.AttributeValue(deep)
	assert.ErrorContains(t, err, "nested deeper")

	_, err = streampoll.LambdaAttributeValue(&streamtypes.UnknownUnionMember{Tag: "X"})
	assert.ErrorContains(t, err, "unsupported")
	// DynamoDB Local's stream writes an empty map as {}, which the SDK
	// decodes as a nil value.
	empty, err := streampoll.LambdaAttributeValue(nil)
	require.NoError(t, err)
	assert.Equal(t, events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{}), empty)
	img, err := streampoll.LambdaImage(nil)
	assert.NoError(t, err)
	assert.Nil(t, img)
}

// TestItemFromLambdaJSON decodes a stream record the way the Lambda
// runtime does (the JSON of the Lambda developer guide's example, with
// every type) and converts its image.
func TestItemFromLambdaJSON(t *testing.T) {
	const raw = `{"Records":[{"eventID":"1","eventName":"INSERT","eventVersion":"1.1","eventSource":"aws:dynamodb","awsRegion":"us-east-1",
	"dynamodb":{"ApproximateCreationDateTime":1700000000,"Keys":{"user_id":{"S":"acme"}},"SequenceNumber":"111","SizeBytes":26,"StreamViewType":"NEW_IMAGE",
	"NewImage":{"s":{"S":"x"},"n":{"N":"123456789012345678901234567890"},"b":{"B":"AAEC/w=="},"t":{"BOOL":true},"z":{"NULL":true},
	"m":{"M":{"l":{"L":[{"S":"a"},{"N":"1"}]}}},"ss":{"SS":["a","b"]},"ns":{"NS":["1","2"]},"bs":{"BS":["AQ==","AgM="]}}},
	"eventSourceARN":"arn:aws:dynamodb:us-east-1:123456789012:table/events/stream/2026-01-01T00:00:00.000"}]}`
	var ev events.DynamoDBEvent
	require.NoError(t, json.Unmarshal([]byte(raw), &ev))
	item, err := streamconsumer.Item(ev.Records[0].Change.NewImage)
	require.NoError(t, err)
	assert.Equal(t, map[string]types.AttributeValue{
		"s":  &types.AttributeValueMemberS{Value: "x"},
		"n":  &types.AttributeValueMemberN{Value: "123456789012345678901234567890"},
		"b":  &types.AttributeValueMemberB{Value: []byte{0, 1, 2, 0xff}},
		"t":  &types.AttributeValueMemberBOOL{Value: true},
		"z":  &types.AttributeValueMemberNULL{Value: true},
		"m":  &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"l": &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberS{Value: "a"}, &types.AttributeValueMemberN{Value: "1"}}}}},
		"ss": &types.AttributeValueMemberSS{Value: []string{"a", "b"}},
		"ns": &types.AttributeValueMemberNS{Value: []string{"1", "2"}},
		"bs": &types.AttributeValueMemberBS{Value: [][]byte{{1}, {2, 3}}},
	}, item)

	_, err = streamconsumer.Item(map[string]events.DynamoDBAttributeValue{"bad": {}})
	assert.ErrorContains(t, err, `attribute "bad"`)
}
