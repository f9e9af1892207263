package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/testkit/lambdatest"
	"github.com/triggers-dev/triggers/internal/testkit/motoserver"
)

func TestMain(m *testing.M) { lambdatest.Main(m) }

func TestConfigurationError(t *testing.T) {
	stderr := lambdatest.StartFails(t, "LOG_LEVEL=loud", "ARCHIVE_PREFIX=expired")
	for _, want := range []string{"archiver: configuration:", "ARCHIVE_BUCKET is not set", "ARCHIVE_PREFIX", "LOG_LEVEL"} {
		assert.Contains(t, stderr, want)
	}
}

// TestBinaryEndToEnd runs the built function against a fake Lambda
// Runtime API and a fake S3 endpoint (S3_ENDPOINT, path-style): one
// invocation with a TTL deletion and a user deletion goes in, one
// PutObject of the expired event's gzip JSON line goes out, the partial
// batch response comes back.
func TestBinaryEndToEnd(t *testing.T) {
	bin := lambdatest.Build(t)

	var mu sync.Mutex
	puts := map[string][]byte{}
	s3Srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPut {
			http.Error(w, "unexpected "+r.Method, http.StatusBadRequest)
			return
		}
		mu.Lock()
		puts[r.URL.Path] = body
		mu.Unlock()
		w.Header().Set("ETag", `"e"`)
	}))
	defer s3Srv.Close()

	const event = `{"Records":[
	{"eventID":"a","eventName":"REMOVE","eventVersion":"1.1","eventSource":"aws:dynamodb","awsRegion":"us-east-1",
	 "userIdentity":{"type":"Service","principalId":"dynamodb.amazonaws.com"},
	 "dynamodb":{"Keys":{"user_id":{"S":"acme"}},"OldImage":{"user_id":{"S":"acme"},"timestamp#event_id":{"S":"2026-10-22T10:00:00.000000Z#e1"},
	 "event_id":{"S":"e1"},"event_type":{"S":"user.created"},"payload":{"M":{"n":{"N":"12345678901234567890123456789012345678"},"s":{"S":"Zoë <&>"}}},"status":{"S":"delivered"},
	 "timestamp":{"S":"2026-10-22T10:00:00.000000Z"},"ttl":{"N":"1795000000"},"retry_count":{"N":"0"},"metadata":{"M":{"source_ip":{"S":"192.0.2.1"},"api_version":{"S":"v1"}}}},
	 "SequenceNumber":"100","SizeBytes":300,"StreamViewType":"NEW_AND_OLD_IMAGES"},"eventSourceARN":"arn:aws:dynamodb:us-east-1:123456789012:table/events/stream/x"},
	{"eventID":"b","eventName":"REMOVE","dynamodb":{"SequenceNumber":"101","Keys":{"user_id":{"S":"acme"}},"OldImage":{"user_id":{"S":"acme"}}},"eventSourceARN":"arn"}]}`
	_, body := lambdatest.Invoke(t, bin, event,
		"ARCHIVE_BUCKET=archive-bucket",
		"S3_ENDPOINT="+s3Srv.URL,
	)
	assert.JSONEq(t, `{"batchItemFailures":[]}`, body)

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, puts, 1, "the user deletion is not archived")
	for path, body := range puts {
		assert.Regexp(t, `^/archive-bucket/expired/tenant=acme/date=2026-10-22/100-[0-9a-f]{16}\.jsonl\.gz$`, path)
		zr, err := gzip.NewReader(bytes.NewReader(body))
		require.NoError(t, err)
		lines, err := io.ReadAll(zr)
		require.NoError(t, err)
		assert.Equal(t, `{"event_id":"e1","event_type":"user.created","payload":{"n":12345678901234567890123456789012345678,"s":"Zoë <&>"},"status":"delivered","timestamp":"2026-10-22T10:00:00.000000Z","retry_count":0,"metadata":{"source_ip":"192.0.2.1","api_version":"v1"}}`+"\n", string(lines))
	}
}

// TestBinaryParksMalformedRecords runs the built function against moto
// (S3 and SQS): the TTL deletion is archived, the TTL record that is no
// event (no payload) is parked on DEAD_LETTER_QUEUE_URL with its content,
// and the batch reports no failure, so the shard moves on.
func TestBinaryParksMalformedRecords(t *testing.T) {
	bin := lambdatest.Build(t)
	ctx := context.Background()
	srv := motoserver.ForTest(t)
	bucket, queue := srv.CreateBucket(t), srv.CreateQueue(t)

	const event = `{"Records":[
	{"eventID":"a","eventName":"REMOVE","userIdentity":{"type":"Service","principalId":"dynamodb.amazonaws.com"},
	 "dynamodb":{"Keys":{"user_id":{"S":"acme"}},"OldImage":{"user_id":{"S":"acme"},"event_id":{"S":"e1"},"event_type":{"S":"t"},"payload":{"M":{}},"status":{"S":"received"},
	 "timestamp":{"S":"2026-10-22T10:00:00.000000Z"}},"SequenceNumber":"100","StreamViewType":"NEW_AND_OLD_IMAGES"},"eventSourceARN":"arn"},
	{"eventID":"b","eventName":"REMOVE","userIdentity":{"type":"Service","principalId":"dynamodb.amazonaws.com"},
	 "dynamodb":{"Keys":{"user_id":{"S":"acme"}},"OldImage":{"user_id":{"S":"acme"},"event_id":{"S":"e2"},"event_type":{"S":"t"},"status":{"S":"received"},
	 "timestamp":{"S":"2026-10-22T10:00:00.000000Z"}},"SequenceNumber":"101","StreamViewType":"NEW_AND_OLD_IMAGES"},"eventSourceARN":"arn"}]}`
	_, body := lambdatest.Invoke(t, bin, event,
		"ARCHIVE_BUCKET="+bucket,
		"S3_ENDPOINT="+srv.Endpoint,
		"DEAD_LETTER_QUEUE_URL="+queue,
		"SQS_ENDPOINT="+srv.Endpoint,
	)
	assert.JSONEq(t, `{"batchItemFailures":[]}`, body)

	objs, err := srv.S3Client().ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	require.NoError(t, err)
	require.Len(t, objs.Contents, 1)
	assert.Regexp(t, `^expired/tenant=acme/date=2026-10-22/100-[0-9a-f]{16}\.jsonl\.gz$`, aws.ToString(objs.Contents[0].Key))

	msgs, err := srv.SQSClient().ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queue), MaxNumberOfMessages: 10})
	require.NoError(t, err)
	require.Len(t, msgs.Messages, 1)
	var parked struct {
		Reason string `json:"reason"`
		Record struct {
			EventID string `json:"eventID"`
		} `json:"record"`
	}
	require.NoError(t, json.Unmarshal([]byte(aws.ToString(msgs.Messages[0].Body)), &parked))
	assert.Equal(t, "b", parked.Record.EventID)
	assert.Contains(t, parked.Reason, "payload")
}
