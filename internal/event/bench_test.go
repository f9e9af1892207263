package event_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/event/eventtest"
	"github.com/triggers-dev/triggers/internal/httpapi"
	"github.com/triggers-dev/triggers/internal/item"
	"github.com/triggers-dev/triggers/schema"
)

// BenchmarkIngest measures what the API does per event before DynamoDB:
// parse and validate the body straight into attribute values
// (event.ParseCreate's fast path), build the event, build the item, and
// write the 201 response's JSON.
func BenchmarkIngest(b *testing.B) {
	for _, size := range []int{1 << 10, 64 << 10} {
		data := eventtest.Body(size)
		b.Run(fmt.Sprintf("%dKB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			now := time.Now()
			var out []byte
			for i := 0; i < b.N; i++ {
				req, err := event.ParseCreate(data)
				if err != nil {
					b.Fatal(err)
				}
				e, err := event.New(req, now, event.DefaultRetention, event.Metadata{SourceIP: "203.0.113.7", CorrelationID: "c"})
				if err != nil {
					b.Fatal(err)
				}
				_ = item.FromEvent("tenant-a", e, schema.ProfileSeed)
				if out, err = e.AppendJSON(out[:0]); err != nil {
					b.Fatal(err)
				}
				out = append(out, '\n')
			}
		})
	}
}

// BenchmarkIngestReference is BenchmarkIngest on the reference path
// (encoding/json into map[string]any, converted to attribute values, and
// encoding/json of the decoded payload), for ratios within one run.
func BenchmarkIngestReference(b *testing.B) {
	for _, size := range []int{1 << 10, 64 << 10} {
		data := eventtest.Body(size)
		b.Run(fmt.Sprintf("%dKB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			now := time.Now()
			var out bytes.Buffer
			for i := 0; i < b.N; i++ {
				typ, p, err := event.DecodeCreateReference(data)
				if err != nil {
					b.Fatal(err)
				}
				req := event.CreateRequest{EventType: typ, Payload: event.PayloadOf(p)}
				e, err := event.New(req, now, event.DefaultRetention, event.Metadata{SourceIP: "203.0.113.7", CorrelationID: "c"})
				if err != nil {
					b.Fatal(err)
				}
				_ = item.FromEvent("tenant-a", e, schema.ProfileSeed)
				out.Reset()
				enc := json.NewEncoder(&out)
				enc.SetEscapeHTML(false)
				if err := enc.Encode(plainWith(e, p)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// pageItems returns a full page of DynamoDB items: 50 events of about
// 1 KB.
func pageItems(b *testing.B) []map[string]types.AttributeValue {
	req, err := event.ParseCreate(eventtest.Body(1 << 10))
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	var raw []map[string]types.AttributeValue
	for i := 0; i < event.DefaultLimit; i++ {
		e, err := event.New(req, now.Add(time.Duration(i)*time.Millisecond), event.DefaultRetention, event.Metadata{SourceIP: "203.0.113.7"})
		if err != nil {
			b.Fatal(err)
		}
		it := item.FromEvent("tenant-a", e, schema.ProfileSeed)
		raw = append(raw, it)
	}
	return raw
}

// BenchmarkInboxPage measures turning a full page of DynamoDB items (50
// events of about 1 KB) into the JSON body of GET /v1/inbox, as the API
// does: events whose payloads stay the items' attribute values
// (item.EventFromItem), written by httpapi.InboxPage.AppendJSON.
func BenchmarkInboxPage(b *testing.B) {
	raw := pageItems(b)
	b.ReportAllocs()
	var out []byte
	for i := 0; i < b.N; i++ {
		page := httpapi.InboxPage{Events: make([]event.Event, 0, len(raw))}
		for _, it := range raw {
			page.Events = append(page.Events, item.EventFromItem(it))
		}
		c := "cursor"
		page.NextCursor = &c
		var err error
		if out, err = page.AppendJSON(out[:0]); err != nil {
			b.Fatal(err)
		}
		out = append(out, '\n')
	}
	b.SetBytes(int64(len(out)))
}

// BenchmarkInboxPageReference is BenchmarkInboxPage on the reference path
// (payloads decoded to map[string]any, encoding/json).
func BenchmarkInboxPageReference(b *testing.B) {
	raw := pageItems(b)
	b.ReportAllocs()
	var out bytes.Buffer
	type refPage struct {
		Events     []plain `json:"events"`
		NextCursor *string `json:"next_cursor"`
	}
	for i := 0; i < b.N; i++ {
		page := refPage{Events: make([]plain, 0, len(raw))}
		for _, it := range raw {
			page.Events = append(page.Events, plainOf(item.EventFromItem(it)))
		}
		c := "cursor"
		page.NextCursor = &c
		out.Reset()
		enc := json.NewEncoder(&out)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(page); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(out.Len()))
}
