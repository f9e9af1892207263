package main

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

func TestHandleLogsAndReportsUnreadableRecords(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	s := events.NewStringAttribute
	e := events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{
		{EventName: "INSERT", Change: events.DynamoDBStreamRecord{SequenceNumber: "1", NewImage: map[string]events.DynamoDBAttributeValue{
			"user_id": s("tenant-a"), "event_id": s("evt_1"), "event_type": s("user.created"), "status": s("received"),
		}}},
		{EventName: "MODIFY", Change: events.DynamoDBStreamRecord{SequenceNumber: "2", NewImage: map[string]events.DynamoDBAttributeValue{
			"user_id": s("tenant-a"), "event_id": events.NewNumberAttribute("7"),
		}}},
	}}
	resp := handle(context.Background(), log, e)
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "2" {
		t.Errorf("handle(...).BatchItemFailures = %+v, want only record 2", resp.BatchItemFailures)
	}
	if got := buf.String(); !strings.Contains(got, `"event_id":"evt_1"`) || !strings.Contains(got, `"event_type":"user.created"`) || !strings.Contains(got, `"msg":"unreadable record"`) {
		t.Errorf("log = %s, want the audit line of evt_1 and one unreadable record", got)
	}
}

// A sharded tenant's event (user_id "<tenant>~<k>") is logged under its
// tenant.
func TestHandleNamesTheTenantOfAShard(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	s := events.NewStringAttribute
	e := events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{
		{EventName: "INSERT", Change: events.DynamoDBStreamRecord{SequenceNumber: "1", NewImage: map[string]events.DynamoDBAttributeValue{
			"user_id": s("tenant-a~7"), "event_id": s("evt_1"), "event_type": s("user.created"), "status": s("received"),
		}}},
	}}
	if resp := handle(context.Background(), log, e); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("handle(...).BatchItemFailures = %+v, want none", resp.BatchItemFailures)
	}
	if got := buf.String(); !strings.Contains(got, `"tenant":"tenant-a"`) {
		t.Errorf("log = %s, want tenant-a", got)
	}
}
