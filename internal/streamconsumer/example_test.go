package streamconsumer_test

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/events"

	"github.com/triggers-dev/triggers/internal/dev/streampoll"
	"github.com/triggers-dev/triggers/internal/streamconsumer"
)

// A consumer with a WriterSink (internal/dev/streampoll) prints one JSON
// line per delivered event; the MODIFY record is skipped.
func ExampleConsumer_Handle() {
	c, err := streamconsumer.New(streamconsumer.Config{Publisher: streampoll.WriterSink(os.Stdout), QueueURL: "local"})
	if err != nil {
		panic(err)
	}
	image := map[string]events.DynamoDBAttributeValue{
		"user_id":            events.NewStringAttribute("acme"),
		"timestamp#event_id": events.NewStringAttribute("2026-11-22T10:00:00.000000Z#e1"),
		"event_id":           events.NewStringAttribute("e1"),
		"event_type":         events.NewStringAttribute("user.created"),
		"payload":            events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{"id": events.NewNumberAttribute("12345678901234567890")}),
		"status":             events.NewStringAttribute("received"),
		"timestamp":          events.NewStringAttribute("2026-11-22T10:00:00.000000Z"),
		"retry_count":        events.NewNumberAttribute("0"),
		"metadata":           events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{"source_ip": events.NewStringAttribute("192.0.2.1"), "api_version": events.NewStringAttribute("v1")}),
	}
	resp, err := c.Handle(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{
		{EventName: "INSERT", Change: events.DynamoDBStreamRecord{SequenceNumber: "1", NewImage: image}},
		{EventName: "MODIFY", Change: events.DynamoDBStreamRecord{SequenceNumber: "2", NewImage: image}},
	}})
	fmt.Println(len(resp.BatchItemFailures), err)
	// Output:
	// {"tenant":"acme","event_type":"user.created","event":{"event_id":"e1","event_type":"user.created","payload":{"id":12345678901234567890},"status":"received","timestamp":"2026-11-22T10:00:00.000000Z","retry_count":0,"metadata":{"source_ip":"192.0.2.1","api_version":"v1"}}}
	// 0 <nil>
}
