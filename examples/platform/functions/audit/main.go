// Command audit is the platform team's own consumer of the Triggers events
// stream: it writes one JSON log line per new event or status change
// (tenant, event id, type, status) and reports the records it cannot read
// as partial batch failures, so that only those are retried.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/schema"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	lambda.Start(func(ctx context.Context, e events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		return handle(ctx, log, e), nil
	})
}

// handle logs each record and returns the ones it could not read.
func handle(ctx context.Context, log *slog.Logger, e events.DynamoDBEvent) events.DynamoDBEventResponse {
	var resp events.DynamoDBEventResponse
	for _, r := range e.Records {
		img := r.Change.NewImage
		id, okID := str(img, schema.AttrEventID)
		partition, okTenant := str(img, schema.AttrUserID)
		tenant, _ := contract.TenantOfPartition(partition) // a sharded tenant's events are in "<tenant>~<k>"
		if !okID || !okTenant {
			log.ErrorContext(ctx, "unreadable record", "event_name", r.EventName, "sequence_number", r.Change.SequenceNumber)
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: r.Change.SequenceNumber})
			continue
		}
		typ, _ := str(img, schema.AttrEventType)
		status, _ := str(img, schema.AttrStatus)
		log.InfoContext(ctx, "audit", "change", r.EventName, "tenant", tenant, "event_id", id, "event_type", typ, "status", status)
	}
	return resp
}

// str returns the string attribute name of img.
func str(img map[string]events.DynamoDBAttributeValue, name string) (string, bool) {
	v, ok := img[name]
	if !ok || v.DataType() != events.DataTypeString {
		return "", false
	}
	return v.String(), true
}
