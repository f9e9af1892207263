package main

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/testkit/lambdatest"
)

func TestMain(m *testing.M) { lambdatest.Main(m) }

func TestConfigurationError(t *testing.T) {
	stderr := lambdatest.StartFails(t, "LOG_LEVEL=loud")
	for _, want := range []string{"streamconsumer: configuration:", "DELIVERY_QUEUE_URL is not set", "LOG_LEVEL"} {
		assert.Contains(t, stderr, want)
	}
}

// TestBinaryEndToEnd runs the built function against a fake Lambda
// Runtime API and a fake SQS endpoint speaking the SQS JSON protocol: one
// invocation with a stream event goes in, SendMessageBatch goes out with
// the body and attributes, the partial batch response comes back.
func TestBinaryEndToEnd(t *testing.T) {
	bin := lambdatest.Build(t)

	type entry struct {
		ID                string `json:"Id"`
		MessageBody       string `json:"MessageBody"`
		MessageAttributes map[string]struct {
			DataType    string `json:"DataType"`
			StringValue string `json:"StringValue"`
		} `json:"MessageAttributes"`
	}
	var mu sync.Mutex
	var sqsCalls []struct {
		QueueURL string  `json:"QueueUrl"`
		Entries  []entry `json:"Entries"`
	}
	sqsSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Amz-Target") != "AmazonSQS.SendMessageBatch" {
			http.Error(w, "unexpected "+r.Header.Get("X-Amz-Target"), http.StatusBadRequest)
			return
		}
		var in struct {
			QueueURL string  `json:"QueueUrl"`
			Entries  []entry `json:"Entries"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		sqsCalls = append(sqsCalls, in)
		mu.Unlock()
		type ok struct {
			ID               string `json:"Id"`
			MessageID        string `json:"MessageId"`
			MD5OfMessageBody string `json:"MD5OfMessageBody"`
		}
		out := struct {
			Successful []ok  `json:"Successful"`
			Failed     []any `json:"Failed"`
		}{Failed: []any{}}
		for _, e := range in.Entries {
			sum := md5.Sum([]byte(e.MessageBody)) // the SDK checks it
			out.Successful = append(out.Successful, ok{ID: e.ID, MessageID: "m-" + e.ID, MD5OfMessageBody: hex.EncodeToString(sum[:])})
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		_ = json.NewEncoder(w).Encode(out)
	}))
	defer sqsSrv.Close()

	const event = `{"Records":[{"eventID":"a","eventName":"INSERT","eventVersion":"1.1","eventSource":"aws:dynamodb","awsRegion":"us-east-1",
	"dynamodb":{"Keys":{"user_id":{"S":"acme"}},"NewImage":{"user_id":{"S":"acme"},"timestamp#event_id":{"S":"2026-11-22T10:00:00.000000Z#e1"},
	"event_id":{"S":"e1"},"event_type":{"S":"user.created"},"payload":{"M":{"n":{"N":"12345678901234567890"},"s":{"S":"Zoë <&>"}}},"status":{"S":"received"},
	"timestamp":{"S":"2026-11-22T10:00:00.000000Z"},"ttl":{"N":"1797978553"},"retry_count":{"N":"0"},"metadata":{"M":{"source_ip":{"S":"192.0.2.1"},"api_version":{"S":"v1"}}}},
	"SequenceNumber":"100","SizeBytes":300,"StreamViewType":"NEW_IMAGE"},"eventSourceARN":"arn:aws:dynamodb:us-east-1:123456789012:table/events/stream/x"},
	{"eventID":"b","eventName":"MODIFY","dynamodb":{"SequenceNumber":"101","NewImage":{"user_id":{"S":"acme"}}},"eventSourceARN":"arn"}]}`
	_, body := lambdatest.Invoke(t, bin, event,
		"DELIVERY_QUEUE_URL="+sqsSrv.URL+"/123456789012/delivery",
		"SQS_ENDPOINT="+sqsSrv.URL,
	)
	assert.JSONEq(t, `{"batchItemFailures":[]}`, body)

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, sqsCalls, 1)
	call := sqsCalls[0]
	assert.Equal(t, sqsSrv.URL+"/123456789012/delivery", call.QueueURL)
	require.Len(t, call.Entries, 1, "the MODIFY record is not sent")
	e := call.Entries[0]
	assert.Equal(t, `{"event_id":"e1","event_type":"user.created","payload":{"n":12345678901234567890,"s":"Zoë <&>"},"status":"received","timestamp":"2026-11-22T10:00:00.000000Z","retry_count":0,"metadata":{"source_ip":"192.0.2.1","api_version":"v1"}}`, e.MessageBody)
	assert.Equal(t, "String", e.MessageAttributes["tenant"].DataType)
	assert.Equal(t, "acme", e.MessageAttributes["tenant"].StringValue)
	assert.Equal(t, "String", e.MessageAttributes["event_type"].DataType)
	assert.Equal(t, "user.created", e.MessageAttributes["event_type"].StringValue)
}
