package motoserver_test

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/testkit/motoserver"
)

// The server stores objects and messages, and the fault client fails
// exactly the calls it is told to: the SDK's retries ride out fewer
// failures than attempts, and report more.
func TestServerAndFaults(t *testing.T) {
	ctx := context.Background()
	srv := motoserver.ForTest(t)
	bucket := srv.CreateBucket(t)
	faults := &motoserver.FaultClient{}
	client := srv.S3Client(func(o *s3.Options) {
		o.HTTPClient = faults
		o.Retryer = motoserver.FastRetryer(3)()
	})
	put := func(key, body string) error {
		_, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader([]byte(body))})
		return err
	}

	faults.Fail("PutObject", 2)
	require.NoError(t, put("a/b.txt", "hello"), "two failures, three attempts")
	assert.Equal(t, 2, faults.Failed("PutObject"))
	assert.Equal(t, 3, faults.Seen("PutObject"))

	faults.Fail("PutObject", 3)
	err := put("a/c.txt", "lost")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "SlowDown")
	assert.Equal(t, 5, faults.Failed("PutObject"))

	faults.Fail("PutObject", -1)
	require.Error(t, put("a/c.txt", "lost"))
	faults.Recover("PutObject")
	require.NoError(t, put("a/c.txt", "kept"))

	for key, want := range map[string]string{"a/b.txt": "hello", "a/c.txt": "kept"} {
		out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		require.NoError(t, err, key)
		got, err := io.ReadAll(out.Body)
		require.NoError(t, err)
		assert.Equal(t, want, string(got), key)
	}

	queue := srv.CreateQueue(t)
	q := srv.SQSClient()
	_, err = q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queue), MessageBody: aws.String(`{"x":1}`)})
	require.NoError(t, err)
	msgs, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queue), MaxNumberOfMessages: 10})
	require.NoError(t, err)
	require.Len(t, msgs.Messages, 1)
	assert.Equal(t, `{"x":1}`, aws.ToString(msgs.Messages[0].Body))
}

// Stop kills the server: its endpoint no longer answers.
func TestStop(t *testing.T) {
	srv, err := motoserver.Start(context.Background())
	require.NoError(t, err)
	require.NoError(t, srv.Stop())
	require.NoError(t, srv.Stop(), "a second Stop is a no-op")
	_, err = srv.S3Client(func(o *s3.Options) { o.Retryer = motoserver.FastRetryer(1)() }).ListBuckets(context.Background(), &s3.ListBucketsInput{})
	assert.Error(t, err)
}
