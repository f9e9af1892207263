package motolocal_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/dev/motolocal"
	"github.com/triggers-dev/triggers/internal/dev/motolocal/mototest"
)

// The conformance test of the SQS engine: every queue feature webhook
// delivery and the event source mapping driver (internal/dev/sqsesm) rely
// on, through our SDK version with its MD5 checks on. It runs on the
// engine motolocal starts, or on the one at TRIGGERS_MOTO_ENDPOINT
// (docs/testing.md records which engines pass).

var engine *mototest.Engine

func TestMain(m *testing.M) { os.Exit(mototest.Main(m, &engine)) }

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

func receive(t *testing.T, url string, in sqs.ReceiveMessageInput) []types.Message {
	t.Helper()
	in.QueueUrl = aws.String(url)
	in.MessageSystemAttributeNames = []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}
	in.MessageAttributeNames = []string{"All"}
	out, err := engine.SQS.ReceiveMessage(ctx(t), &in)
	require.NoError(t, err)
	return out.Messages
}

// receiveEventually long-polls until a message arrives (at most 30 s).
func receiveEventually(t *testing.T, url string) types.Message {
	t.Helper()
	for range 15 {
		if got := receive(t, url, sqs.ReceiveMessageInput{WaitTimeSeconds: 2, MaxNumberOfMessages: 1}); len(got) > 0 {
			return got[0]
		}
	}
	t.Fatalf("no message on %s in 30 s; engine output:\n%s", url, engine.Output())
	return types.Message{}
}

func counts(t *testing.T, url string) (visible, inFlight, delayed int) {
	t.Helper()
	out, err := engine.SQS.GetQueueAttributes(ctx(t), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
	require.NoError(t, err)
	n := func(k string) int { v, _ := strconv.Atoi(out.Attributes[k]); return v }
	return n("ApproximateNumberOfMessages"), n("ApproximateNumberOfMessagesNotVisible"), n("ApproximateNumberOfMessagesDelayed")
}

func md5hex(s string) string {
	h := md5.Sum([]byte(s))
	return hex.EncodeToString(h[:])
}

func TestCreateQueueAttributes(t *testing.T) {
	t.Parallel()
	dlq := engine.CreateQueue(t, nil)
	redrive, _ := json.Marshal(map[string]any{"deadLetterTargetArn": engine.QueueARN(t, dlq), "maxReceiveCount": 3})
	url := engine.CreateQueue(t, map[string]string{
		"VisibilityTimeout": "7", "DelaySeconds": "2", "MessageRetentionPeriod": "345600", "RedrivePolicy": string(redrive),
	})
	out, err := engine.SQS.GetQueueAttributes(ctx(t), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
	require.NoError(t, err)
	assert.Equal(t, "7", out.Attributes["VisibilityTimeout"])
	assert.Equal(t, "2", out.Attributes["DelaySeconds"])
	assert.Equal(t, "345600", out.Attributes["MessageRetentionPeriod"])
	assert.Regexp(t, `^arn:aws:sqs:[a-z0-9-]+:\d{12}:`, out.Attributes["QueueArn"])
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(out.Attributes["RedrivePolicy"]), &got), out.Attributes["RedrivePolicy"])
	assert.Equal(t, engine.QueueARN(t, dlq), got["deadLetterTargetArn"])
	assert.EqualValues(t, 3, got["maxReceiveCount"])

	// Creating it again with the same attributes returns the same URL.
	again, err := engine.SQS.CreateQueue(ctx(t), &sqs.CreateQueueInput{QueueName: aws.String(lastSegment(url)), Attributes: map[string]string{
		"VisibilityTimeout": "7", "DelaySeconds": "2", "MessageRetentionPeriod": "345600", "RedrivePolicy": string(redrive),
	}})
	require.NoError(t, err)
	assert.Equal(t, url, aws.ToString(again.QueueUrl))
}

func lastSegment(url string) string {
	for i := len(url) - 1; i >= 0; i-- {
		if url[i] == '/' {
			return url[i+1:]
		}
	}
	return url
}

// SendMessage with message attributes of each data type; the SDK checks
// the MD5 of the body and of the attributes on send and on receive.
func TestSendReceiveAttributes(t *testing.T) {
	t.Parallel()
	url := engine.CreateQueue(t, nil)
	body := `{"event_id":"e1","payload":{"x":"é ✓"}}`
	attrs := map[string]types.MessageAttributeValue{
		"tenant": {DataType: aws.String("String"), StringValue: aws.String("acme")},
		"n":      {DataType: aws.String("Number"), StringValue: aws.String("42")},
		"raw":    {DataType: aws.String("Binary"), BinaryValue: []byte{0, 1, 2, 255}},
	}
	sent, err := engine.SQS.SendMessage(ctx(t), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body), MessageAttributes: attrs})
	require.NoError(t, err)
	assert.Equal(t, md5hex(body), aws.ToString(sent.MD5OfMessageBody))
	assert.NotEmpty(t, aws.ToString(sent.MD5OfMessageAttributes))

	m := receiveEventually(t, url)
	assert.Equal(t, aws.ToString(sent.MessageId), aws.ToString(m.MessageId))
	assert.Equal(t, body, aws.ToString(m.Body))
	assert.Equal(t, md5hex(body), aws.ToString(m.MD5OfBody))
	assert.Equal(t, aws.ToString(sent.MD5OfMessageAttributes), aws.ToString(m.MD5OfMessageAttributes))
	assert.NotEmpty(t, aws.ToString(m.ReceiptHandle))
	require.Len(t, m.MessageAttributes, 3)
	assert.Equal(t, "acme", aws.ToString(m.MessageAttributes["tenant"].StringValue))
	assert.Equal(t, "String", aws.ToString(m.MessageAttributes["tenant"].DataType))
	assert.Equal(t, "42", aws.ToString(m.MessageAttributes["n"].StringValue))
	assert.Equal(t, "Number", aws.ToString(m.MessageAttributes["n"].DataType))
	assert.Equal(t, []byte{0, 1, 2, 255}, m.MessageAttributes["raw"].BinaryValue)
	assert.Equal(t, "1", m.Attributes["ApproximateReceiveCount"])
	for _, k := range []string{"SentTimestamp", "ApproximateFirstReceiveTimestamp"} {
		ms, err := strconv.ParseInt(m.Attributes[k], 10, 64)
		require.NoError(t, err, "%s=%q", k, m.Attributes[k])
		assert.Greater(t, ms, int64(1_600_000_000_000), "%s is epoch milliseconds", k)
	}
}

func TestSendMessageBatchAndDeleteMessageBatch(t *testing.T) {
	t.Parallel()
	url := engine.CreateQueue(t, nil)
	var entries []types.SendMessageBatchRequestEntry
	for i := range 10 {
		entries = append(entries, types.SendMessageBatchRequestEntry{
			Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(`{"n":` + strconv.Itoa(i) + `}`),
			MessageAttributes: map[string]types.MessageAttributeValue{"tenant": {DataType: aws.String("String"), StringValue: aws.String("t" + strconv.Itoa(i))}},
		})
	}
	out, err := engine.SQS.SendMessageBatch(ctx(t), &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
	require.NoError(t, err)
	assert.Len(t, out.Successful, 10)
	assert.Empty(t, out.Failed)

	// MaxNumberOfMessages bounds each receive.
	got := receive(t, url, sqs.ReceiveMessageInput{MaxNumberOfMessages: 3, WaitTimeSeconds: 1})
	require.NotEmpty(t, got)
	assert.LessOrEqual(t, len(got), 3)
	seen := map[string]bool{}
	for len(seen) < 10 {
		for _, m := range got {
			seen[aws.ToString(m.Body)] = true
			var body struct{ N int }
			require.NoError(t, json.Unmarshal([]byte(aws.ToString(m.Body)), &body))
			assert.Equal(t, "t"+strconv.Itoa(body.N), aws.ToString(m.MessageAttributes["tenant"].StringValue))
			_, err := engine.SQS.ChangeMessageVisibility(ctx(t), &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 60})
			require.NoError(t, err)
		}
		var del []types.DeleteMessageBatchRequestEntry
		for i, m := range got {
			del = append(del, types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle})
		}
		if len(del) > 0 {
			dout, err := engine.SQS.DeleteMessageBatch(ctx(t), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: del})
			require.NoError(t, err)
			assert.Len(t, dout.Successful, len(del))
			assert.Empty(t, dout.Failed)
		}
		if len(seen) < 10 {
			got = receive(t, url, sqs.ReceiveMessageInput{MaxNumberOfMessages: 10, WaitTimeSeconds: 2})
			require.NotEmpty(t, got, "%d of 10 received", len(seen))
		}
	}
	visible, inFlight, _ := counts(t, url)
	assert.Equal(t, [2]int{0, 0}, [2]int{visible, inFlight}, "every message deleted")

	// An invalid receipt handle fails its entry, not the call.
	dout, err := engine.SQS.DeleteMessageBatch(ctx(t), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: []types.DeleteMessageBatchRequestEntry{{Id: aws.String("x"), ReceiptHandle: aws.String("not-a-receipt-handle")}}})
	require.NoError(t, err)
	require.Len(t, dout.Failed, 1)
	assert.Equal(t, "x", aws.ToString(dout.Failed[0].Id))
}

// WaitTimeSeconds: a receive waiting on an empty queue returns the
// message sent while it waits.
func TestLongPoll(t *testing.T) {
	t.Parallel()
	url := engine.CreateQueue(t, nil)
	got := make(chan []types.Message, 1)
	go func() {
		out, err := engine.SQS.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 20})
		if err != nil {
			got <- nil
			return
		}
		got <- out.Messages
	}()
	time.Sleep(300 * time.Millisecond) // let the receive start waiting
	_, err := engine.SQS.SendMessage(ctx(t), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("late")})
	require.NoError(t, err)
	select {
	case msgs := <-got:
		require.Len(t, msgs, 1)
		assert.Equal(t, "late", aws.ToString(msgs[0].Body))
	case <-time.After(30 * time.Second):
		t.Fatal("the long poll did not return")
	}
}

// One attempt of the SQS client outlasts the longest wait a receive may
// ask for (20 s), so a long poll is never cut short and retried. Its
// attempt timeout is read from the client's configuration; that the
// timeout is what bounds a long poll is shown at a small scale: an empty
// 1 s long poll fits in one attempt of the client, and fails in one of a
// client whose attempts last less than the wait.
func TestAttemptOutlastsLongestWait(t *testing.T) {
	t.Parallel()
	timeout := func(c *sqs.Client) time.Duration {
		hc, ok := c.Options().HTTPClient.(*awshttp.BuildableClient)
		require.True(t, ok, "HTTPClient is %T", c.Options().HTTPClient)
		return hc.GetTimeout()
	}
	assert.Greater(t, timeout(engine.SQS), motolocal.MaxWaitTime, "the attempt timeout of the tests' client")
	assert.Greater(t, timeout(motolocal.NewSQSClient(engine.Endpoint)), motolocal.MaxWaitTime, "the attempt timeout of motolocal.NewSQSClient")
	assert.Equal(t, 20*time.Second, motolocal.MaxWaitTime, "SQS's longest WaitTimeSeconds")

	url := engine.CreateQueue(t, nil)
	poll := func(c *sqs.Client) error {
		out, err := c.ReceiveMessage(ctx(t), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 1},
			func(o *sqs.Options) { o.RetryMaxAttempts = 1 })
		if err == nil {
			assert.Empty(t, out.Messages)
		}
		return err
	}
	require.NoError(t, poll(engine.SQS), "an empty 1 s long poll in one attempt")

	short := motolocal.NewSQSClient(engine.Endpoint, func(o *sqs.Options) {
		o.HTTPClient = o.HTTPClient.(*awshttp.BuildableClient).WithTimeout(200 * time.Millisecond)
	})
	err := poll(short)
	require.Error(t, err, "an attempt shorter than the wait")
	var netErr net.Error
	assert.True(t, errors.As(err, &netErr) && netErr.Timeout(), "a client timeout, not %v", err)
}

// Queue DelaySeconds and a message's DelaySeconds keep it invisible for
// that long.
func TestDelay(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		queue map[string]string
		delay int32
	}{
		// 10 s: the two checks after the send must come before the
		// delay ends, on a busy machine too.
		"queue delay":   {map[string]string{"DelaySeconds": "10"}, 0},
		"message delay": {nil, 10},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			url := engine.CreateQueue(t, tc.queue)
			_, err := engine.SQS.SendMessage(ctx(t), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("later"), DelaySeconds: tc.delay})
			require.NoError(t, err)
			assert.Empty(t, receive(t, url, sqs.ReceiveMessageInput{}), "not visible before its delay")
			_, _, delayed := counts(t, url)
			assert.Equal(t, 1, delayed, "counted as delayed")
			m := receiveEventually(t, url)
			assert.Equal(t, "later", aws.ToString(m.Body))
		})
	}
}

// A received message is invisible for the visibility timeout (the
// queue's, or the one the receive asks for), then visible again with its
// receive count raised; ChangeMessageVisibility 0 releases it at once.
func TestVisibility(t *testing.T) {
	t.Parallel()
	url := engine.CreateQueue(t, map[string]string{"VisibilityTimeout": "1"})
	_, err := engine.SQS.SendMessage(ctx(t), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("m")})
	require.NoError(t, err)
	first := receiveEventually(t, url)
	assert.Equal(t, "1", first.Attributes["ApproximateReceiveCount"])
	second := receiveEventually(t, url) // after the queue's 1 s
	assert.Equal(t, aws.ToString(first.MessageId), aws.ToString(second.MessageId))
	assert.Equal(t, "2", second.Attributes["ApproximateReceiveCount"])
	assert.Equal(t, first.Attributes["ApproximateFirstReceiveTimestamp"], second.Attributes["ApproximateFirstReceiveTimestamp"])

	// A receive's own VisibilityTimeout overrides the queue's.
	third := receive(t, url, sqs.ReceiveMessageInput{WaitTimeSeconds: 5, VisibilityTimeout: 60})
	require.Len(t, third, 1)
	assert.Equal(t, "3", third[0].Attributes["ApproximateReceiveCount"])
	assert.Empty(t, receive(t, url, sqs.ReceiveMessageInput{WaitTimeSeconds: 2}), "still invisible after the queue's timeout")

	_, err = engine.SQS.ChangeMessageVisibility(ctx(t), &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: third[0].ReceiptHandle, VisibilityTimeout: 0})
	require.NoError(t, err)
	fourth := receive(t, url, sqs.ReceiveMessageInput{})
	require.Len(t, fourth, 1, "visible at once after ChangeMessageVisibility 0")
	assert.Equal(t, "4", fourth[0].Attributes["ApproximateReceiveCount"])
}

// After maxReceiveCount receives, the next receive moves the message to
// the dead-letter queue, body and attributes intact.
func TestRedriveToDeadLetterQueue(t *testing.T) {
	t.Parallel()
	dlq := engine.CreateQueue(t, nil)
	redrive, _ := json.Marshal(map[string]any{"deadLetterTargetArn": engine.QueueARN(t, dlq), "maxReceiveCount": 2})
	url := engine.CreateQueue(t, map[string]string{"VisibilityTimeout": "30", "RedrivePolicy": string(redrive)})
	_, err := engine.SQS.SendMessage(ctx(t), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(`{"poison":true}`),
		MessageAttributes: map[string]types.MessageAttributeValue{"kind": {DataType: aws.String("String"), StringValue: aws.String("task")}}})
	require.NoError(t, err)
	for i := 1; i <= 2; i++ {
		got := receive(t, url, sqs.ReceiveMessageInput{WaitTimeSeconds: 2})
		require.Len(t, got, 1, "receive %d", i)
		assert.Equal(t, strconv.Itoa(i), got[0].Attributes["ApproximateReceiveCount"])
		_, err := engine.SQS.ChangeMessageVisibility(ctx(t), &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: got[0].ReceiptHandle, VisibilityTimeout: 0})
		require.NoError(t, err)
	}
	assert.Empty(t, receive(t, url, sqs.ReceiveMessageInput{WaitTimeSeconds: 1}), "moved, not received a third time")
	m := receiveEventually(t, dlq)
	assert.Equal(t, `{"poison":true}`, aws.ToString(m.Body))
	assert.Equal(t, "task", aws.ToString(m.MessageAttributes["kind"].StringValue))
	visible, inFlight, _ := counts(t, url)
	assert.Equal(t, [2]int{0, 0}, [2]int{visible, inFlight}, "gone from the source queue")
}
