package streamconsumer_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/httpapi"
	"github.com/triggers-dev/triggers/internal/store"
	"github.com/triggers-dev/triggers/internal/streamconsumer"
	"github.com/triggers-dev/triggers/schema"
)

// region is one region of a simulated global table: its replica (a table
// of its own on the shared DynamoDB Local) and its API, which names the
// writer region as the deployed function does (WRITER_REGION).
type region struct {
	name, table string
	api         *httpapi.API
}

func newRegion(t *testing.T, name, writer, table string) *region {
	t.Helper()
	st := store.New(db.Client, table, store.WithOriginRegion(name))
	api, err := httpapi.New(httpapi.Config{
		Store: st, CursorSecret: []byte("0123456789abcdef0123456789abcdef-delivery-test"),
		Logger:       slog.New(slog.NewJSONHandler(&logBuffer{}, nil)),
		WriterRegion: writer, Region: name,
	})
	require.NoError(t, err)
	return &region{name: name, table: table, api: api}
}

func (r *region) post(t *testing.T, tenant, body string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/v1/events", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req = req.WithContext(httpapi.WithTenant(req.Context(), tenant))
	rec := httptest.NewRecorder()
	r.api.ServeHTTP(rec, req)
	return rec
}

// replicate copies every item of from into to, as DynamoDB global table
// replication does: the receiving replica's stream gets an INSERT with
// the item as written, its origin attribute included.
func replicate(t *testing.T, from, to string) {
	t.Helper()
	out, err := db.Client.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(from), ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	for _, it := range out.Items {
		_, err := db.Client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(to), Item: it})
		require.NoError(t, err)
	}
}

func itemCount(t *testing.T, table string) int32 {
	t.Helper()
	out, err := db.Client.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true), Select: "COUNT"})
	require.NoError(t, err)
	return out.Count
}

// deliver runs a consumer of region on batch and returns the event ids it
// sent.
func deliver(t *testing.T, region string, batch events.DynamoDBEvent) []string {
	t.Helper()
	fake := &fakeSQS{}
	c, _ := newConsumer(t, fake, func(cfg *streamconsumer.Config) { cfg.Region = region })
	resp, err := c.Handle(context.Background(), batch)
	require.NoError(t, err)
	require.Empty(t, resp.BatchItemFailures)
	return fake.eventIDs(t)
}

// TestOneWriterRegion runs the service on a global table with one writer
// region, against DynamoDB Local. DynamoDB Local has no global tables: the
// two replicas are two tables of one DynamoDB Local, and replication is
// simulated by copying the writer's items into the other table (which
// puts them in its stream, as replication does). It checks that the
// passive region refuses writes (503 unavailable with Retry-After, the
// writer region named, nothing stored), that an event replicated to the
// other region is delivered once (by the region that accepted it, not
// by the replica's consumer), and that after a failover (WRITER_REGION
// flipped) the new writer accepts and delivers its own events.
func TestOneWriterRegion(t *testing.T) {
	east := newRegion(t, "us-east-1", "us-east-1", db.CreateTable(t, schema.Events()))
	west := newRegion(t, "eu-west-1", "us-east-1", db.CreateTable(t, schema.Events()))

	rec := west.post(t, "tenant-a", `{"event_type":"order.created","payload":{"n":1}}`)
	require.Equal(t, http.StatusServiceUnavailable, rec.Code, "POST in the passive region: %s", rec.Body)
	assert.NotEmpty(t, rec.Header().Get("Retry-After"))
	var body struct {
		Error struct{ Code, Message string }
	}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
	assert.Equal(t, "unavailable", body.Error.Code)
	assert.Contains(t, body.Error.Message, "writer region us-east-1")
	assert.Zero(t, itemCount(t, west.table), "the passive region stored nothing")

	rec = east.post(t, "tenant-a", `{"event_type":"order.created","payload":{"n":2}}`)
	require.Equal(t, http.StatusCreated, rec.Code, "POST in the writer region: %s", rec.Body)
	var ev struct {
		ID string `json:"event_id"`
	}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &ev))
	replicate(t, east.table, west.table)

	eastBatch, westBatch := readStream(t, east.table, 1), readStream(t, west.table, 1)
	assert.Equal(t, "us-east-1", westBatch.Records[0].Change.NewImage[schema.AttrOriginRegion].String(), "the replica's record names the origin")
	assert.Equal(t, []string{ev.ID}, deliver(t, "us-east-1", eastBatch), "the writer region delivers its event")
	assert.Empty(t, deliver(t, "eu-west-1", westBatch), "the replica does not deliver it a second time")

	// Failover: eu-west-1 becomes the writer, us-east-1 passive.
	west = newRegion(t, "eu-west-1", "eu-west-1", west.table)
	east = newRegion(t, "us-east-1", "eu-west-1", east.table)
	assert.Equal(t, http.StatusServiceUnavailable, east.post(t, "tenant-a", `{"event_type":"order.created","payload":{"n":3}}`).Code, "the old writer is passive")
	rec = west.post(t, "tenant-a", `{"event_type":"order.created","payload":{"n":4}}`)
	require.Equal(t, http.StatusCreated, rec.Code, "POST in the new writer region: %s", rec.Body)
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &ev))
	westBatch = readStream(t, west.table, 2)
	assert.Equal(t, []string{ev.ID}, deliver(t, "eu-west-1", westBatch), "the new writer delivers its own event, not the replicated one")
}

// Foreign decides by the record's own image: NewImage, or OldImage for a
// REMOVE (a TTL expiry has no NewImage); no attribute or no region is
// local.
func TestForeign(t *testing.T) {
	img := func(origin string) map[string]events.DynamoDBAttributeValue {
		m := map[string]events.DynamoDBAttributeValue{schema.AttrEventID: events.NewStringAttribute("e")}
		if origin != "" {
			m[schema.AttrOriginRegion] = events.NewStringAttribute(origin)
		}
		return m
	}
	rec := func(name string, newImg, oldImg map[string]events.DynamoDBAttributeValue) events.DynamoDBEventRecord {
		return events.DynamoDBEventRecord{EventName: name, Change: events.DynamoDBStreamRecord{NewImage: newImg, OldImage: oldImg}}
	}
	tests := []struct {
		name   string
		r      events.DynamoDBEventRecord
		region string
		want   bool
	}{
		{"insert from here", rec("INSERT", img("us-east-1"), nil), "us-east-1", false},
		{"insert from elsewhere", rec("INSERT", img("eu-west-1"), nil), "us-east-1", true},
		{"insert without origin", rec("INSERT", img(""), nil), "us-east-1", false},
		{"modify from elsewhere", rec("MODIFY", img("eu-west-1"), img("eu-west-1")), "us-east-1", true},
		{"ttl remove from elsewhere", rec("REMOVE", nil, img("eu-west-1")), "us-east-1", true},
		{"ttl remove from here", rec("REMOVE", nil, img("us-east-1")), "us-east-1", false},
		{"no region configured", rec("INSERT", img("eu-west-1"), nil), "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := streamconsumer.Foreign(tt.r, tt.region); got != tt.want {
				t.Errorf("Foreign(%s, %q) = %v, want %v", tt.name, tt.region, got, tt.want)
			}
		})
	}
}
