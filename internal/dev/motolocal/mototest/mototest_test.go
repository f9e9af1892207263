package mototest_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/dev/motolocal/mototest"
)

var moto *mototest.Engine

func TestMain(m *testing.M) { os.Exit(mototest.Main(m, &moto)) }

// The engine stores objects and messages, and the fault client fails
// exactly the calls it is told to: the SDK's retries ride out fewer
// failures than attempts, and report more.
func TestS3Faults(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bucket := moto.CreateBucket(t)
	faults := &mototest.FaultClient{}
	client := moto.S3Client(func(o *s3.Options) {
		o.HTTPClient = faults
		o.Retryer = mototest.FastRetryer(3)()
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
		out, err := moto.S3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		require.NoError(t, err, key)
		got, err := io.ReadAll(out.Body)
		require.NoError(t, err)
		assert.Equal(t, want, string(got), key)
	}
}

// SQS operations are named by their X-Amz-Target: a failed SendMessage
// sends nothing, the next one arrives.
func TestSQSFaults(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	queue := moto.CreateQueue(t, nil)
	faults := &mototest.FaultClient{}
	q := moto.SQSClient(func(o *sqs.Options) {
		o.HTTPClient = faults
		o.Retryer = mototest.FastRetryer(1)()
	})
	send := func(body string) error {
		_, err := q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queue), MessageBody: aws.String(body)})
		return err
	}
	faults.Fail("SendMessage", 1)
	require.Error(t, send(`{"x":0}`))
	require.NoError(t, send(`{"x":1}`))
	assert.Equal(t, 1, faults.Failed("SendMessage"))
	assert.Equal(t, 2, faults.Seen("SendMessage"))
	assert.Zero(t, faults.Seen("ReceiveMessage"))

	msgs, err := moto.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queue), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
	require.NoError(t, err)
	require.Len(t, msgs.Messages, 1)
	assert.Equal(t, `{"x":1}`, aws.ToString(msgs.Messages[0].Body))
}

// Queue and bucket names are valid for SQS and S3 whatever the test is
// called, and never repeat.
func TestNames(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("TestA/b c", 20)
	for _, prefix := range []string{"TestX/sub_case#01", long, "-", ""} {
		q1, q2 := mototest.QueueName(prefix), mototest.QueueName(prefix)
		assert.NotEqual(t, q1, q2)
		assert.Regexp(t, regexp.MustCompile(`^[A-Za-z0-9_-]{1,80}$`), q1, "QueueName(%q)", prefix)
		b1, b2 := mototest.BucketName(prefix), mototest.BucketName(prefix)
		assert.NotEqual(t, b1, b2)
		assert.Regexp(t, regexp.MustCompile(`^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$`), b1, "BucketName(%q)", prefix)
		assert.NotContains(t, b1, "--", "BucketName(%q)", prefix)
	}
	assert.True(t, strings.HasPrefix(mototest.BucketName("TestX/sub_case"), "testx-sub-case-"), mototest.BucketName("TestX/sub_case"))

	// Created through the engine, with a subtest's name.
	t.Run("sub test/with spaces", func(t *testing.T) {
		assert.Contains(t, moto.CreateQueue(t, nil), "sub_test_with_spaces")
		bucket := moto.CreateBucket(t)
		_, err := moto.S3.HeadBucket(context.Background(), &s3.HeadBucketInput{Bucket: aws.String(bucket)})
		require.NoError(t, err, bucket)
	})
}
