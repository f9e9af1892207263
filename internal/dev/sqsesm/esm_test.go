package sqsesm_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/dev/motolocal/mototest"
	"github.com/triggers-dev/triggers/internal/dev/sqsesm"
)

var engine *mototest.Engine

func TestMain(m *testing.M) { os.Exit(mototest.Main(m, &engine)) }

// start runs a driver until the test ends (or stop is called) and
// returns stop, which waits for Run to return.
func start(t *testing.T, cfg sqsesm.Config) (stop func()) {
	t.Helper()
	cfg.Client = engine.SQS
	d, err := sqsesm.New(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				assert.NoError(t, err)
			case <-time.After(time.Minute):
				t.Error("Run did not return within a minute of the stop")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func send(t *testing.T, url, body string, delay int32) string {
	t.Helper()
	out, err := engine.SQS.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body), DelaySeconds: delay})
	require.NoError(t, err)
	return aws.ToString(out.MessageId)
}

// sendBatch sends the bodies before a driver starts, so that its first
// receive finds them all.
func sendBatch(t *testing.T, url string, bodies ...string) {
	t.Helper()
	for len(bodies) > 0 {
		n := min(10, len(bodies))
		var entries []types.SendMessageBatchRequestEntry
		for i, b := range bodies[:n] {
			entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(b)})
		}
		out, err := engine.SQS.SendMessageBatch(context.Background(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
		require.NoError(t, err)
		require.Empty(t, out.Failed)
		bodies = bodies[n:]
	}
}

// drained reports whether the queue holds no message, visible, in flight
// or delayed.
//
// Two reads, both empty: moto_server computes the counts one after the
// other, so a message whose visibility timeout ends between the two
// counts is in neither, once. It runs in require.Eventually's goroutine:
// a failed read is not drained (a require there would end that goroutine
// and leave Eventually waiting out its time).
func drained(t *testing.T, url string) bool {
	t.Helper()
	empty := func() bool {
		out, err := engine.SQS.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
		if err != nil {
			t.Logf("queue attributes: %v", err)
			return false
		}
		return out.Attributes["ApproximateNumberOfMessages"] == "0" && out.Attributes["ApproximateNumberOfMessagesNotVisible"] == "0" && out.Attributes["ApproximateNumberOfMessagesDelayed"] == "0"
	}
	return empty() && empty()
}

// invocations records every invocation's records, safely.
type invocations struct {
	mu    sync.Mutex
	calls [][]events.SQSMessage
}

func (in *invocations) add(ev events.SQSEvent) int {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.calls = append(in.calls, ev.Records)
	return len(in.calls)
}

func (in *invocations) all() [][]events.SQSMessage {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([][]events.SQSMessage{}, in.calls...)
}

// byBody returns the receive counts each body was invoked with, in order.
func (in *invocations) byBody() map[string][]string {
	out := map[string][]string{}
	for _, c := range in.all() {
		for _, r := range c {
			out[r.Body] = append(out[r.Body], r.Attributes["ApproximateReceiveCount"])
		}
	}
	return out
}

func (in *invocations) count() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.calls)
}

const wait = 60 * time.Second

// The invoke payload is the JSON Lambda sends, decoded by the handler's
// own signature into events.SQSEvent, with the function's deadline and a
// lambdacontext.
func TestInvokePayload(t *testing.T) {
	t.Parallel()
	url := engine.CreateQueue(t, nil)
	arn := engine.QueueARN(t, url)
	body := `{"event_id":"e1"}`
	sent, err := engine.SQS.SendMessage(context.Background(), &sqs.SendMessageInput{
		QueueUrl: aws.String(url), MessageBody: aws.String(body),
		MessageAttributes: map[string]types.MessageAttributeValue{
			"tenant": {DataType: aws.String("String"), StringValue: aws.String("acme")},
			"blob":   {DataType: aws.String("Binary"), BinaryValue: []byte{1, 2, 3}},
		},
	})
	require.NoError(t, err)

	type seen struct {
		ev       events.SQSEvent
		raw      json.RawMessage
		deadline time.Duration
		hasDL    bool
		lc       *lambdacontext.LambdaContext
	}
	got := make(chan seen, 1)
	start(t, sqsesm.Config{QueueURL: url, FunctionName: "webhooks", Settings: sqsesm.Settings{FunctionTimeout: 7 * time.Second},
		Handler: func(ctx context.Context, raw json.RawMessage) error {
			var s seen
			s.raw = raw
			if err := json.Unmarshal(raw, &s.ev); err != nil {
				return err
			}
			dl, ok := ctx.Deadline()
			s.deadline, s.hasDL = time.Until(dl), ok
			s.lc, _ = lambdacontext.FromContext(ctx)
			got <- s
			return nil
		}})
	var s seen
	select {
	case s = <-got:
	case <-time.After(wait):
		t.Fatalf("no invocation; engine output:\n%s", engine.Output())
	}
	require.Len(t, s.ev.Records, 1)
	r := s.ev.Records[0]
	assert.Equal(t, aws.ToString(sent.MessageId), r.MessageId)
	assert.NotEmpty(t, r.ReceiptHandle)
	assert.Equal(t, body, r.Body)
	sum := md5.Sum([]byte(body))
	assert.Equal(t, hex.EncodeToString(sum[:]), r.Md5OfBody)
	assert.Equal(t, aws.ToString(sent.MD5OfMessageAttributes), r.Md5OfMessageAttributes)
	assert.Equal(t, "aws:sqs", r.EventSource)
	assert.Equal(t, arn, r.EventSourceARN)
	assert.Equal(t, "us-east-1", r.AWSRegion)
	assert.Equal(t, "1", r.Attributes["ApproximateReceiveCount"])
	assert.NotEmpty(t, r.Attributes["SentTimestamp"])
	assert.NotEmpty(t, r.Attributes["ApproximateFirstReceiveTimestamp"])
	assert.Equal(t, "acme", aws.ToString(r.MessageAttributes["tenant"].StringValue))
	assert.Equal(t, "String", r.MessageAttributes["tenant"].DataType)
	assert.Equal(t, []byte{1, 2, 3}, r.MessageAttributes["blob"].BinaryValue)
	assert.Equal(t, "Binary", r.MessageAttributes["blob"].DataType)

	// The wire form: Lambda's member names, the list fields present.
	var wire struct {
		Records []map[string]json.RawMessage
	}
	require.NoError(t, json.Unmarshal(s.raw, &wire))
	var keys []string
	for k := range wire.Records[0] {
		keys = append(keys, k)
	}
	assert.ElementsMatch(t, []string{"messageId", "receiptHandle", "body", "attributes", "messageAttributes", "md5OfMessageAttributes", "md5OfBody", "eventSource", "eventSourceARN", "awsRegion"}, keys)
	assert.JSONEq(t, `{"stringValue":"acme","stringListValues":[],"binaryListValues":[],"dataType":"String"}`,
		string(mustGet(t, wire.Records[0]["messageAttributes"], "tenant")))
	assert.JSONEq(t, `{"binaryValue":"AQID","stringListValues":[],"binaryListValues":[],"dataType":"Binary"}`,
		string(mustGet(t, wire.Records[0]["messageAttributes"], "blob")))

	require.True(t, s.hasDL, "the context has the function's deadline")
	assert.Positive(t, s.deadline)
	assert.LessOrEqual(t, s.deadline, 7*time.Second)
	require.NotNil(t, s.lc, "the context has a lambdacontext")
	assert.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, s.lc.AwsRequestID)
	assert.Equal(t, "arn:aws:lambda:us-east-1:"+arnAccount(arn)+":function:webhooks", s.lc.InvokedFunctionArn)

	require.Eventually(t, func() bool { return drained(t, url) }, wait, 50*time.Millisecond, "the message is deleted after success")
}

func mustGet(t *testing.T, obj json.RawMessage, key string) json.RawMessage {
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(obj, &m))
	require.Contains(t, m, key)
	return m[key]
}

func arnAccount(arn string) string {
	var parts [6]string
	for i, p := 0, 0; i < len(arn) && p < 6; i++ {
		if arn[i] == ':' {
			p++
			continue
		}
		parts[p] += string(arn[i])
	}
	return parts[4]
}

// With ReportBatchItemFailures, the messages the response lists are
// received again after the visibility timeout, and only they: the others
// were deleted.
func TestPartialBatchFailure(t *testing.T) {
	t.Parallel()
	// 5 s, not 1: a busy machine's delete of the batch's messages could
	// come after 1 s, and they were received again.
	url := engine.CreateQueue(t, map[string]string{"VisibilityTimeout": "5"})
	sendBatch(t, url, "a", "b", "c", "d")
	var in invocations
	var failedOnce atomic.Bool
	start(t, sqsesm.Config{QueueURL: url, Settings: sqsesm.Settings{BatchSize: 10, ReportBatchItemFailures: true},
		Handler: func(ev events.SQSEvent) (events.SQSEventResponse, error) {
			in.add(ev)
			var resp events.SQSEventResponse
			for _, r := range ev.Records {
				if r.Body == "b" && failedOnce.CompareAndSwap(false, true) {
					resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
				}
			}
			return resp, nil
		}})
	require.Eventually(t, func() bool { return len(in.byBody()["b"]) == 2 && drained(t, url) }, wait, 50*time.Millisecond, "%v", in.byBody())
	assert.Equal(t, map[string][]string{"a": {"1"}, "b": {"1", "2"}, "c": {"1"}, "d": {"1"}}, in.byBody())
}

// A handler error, a panic, a timeout or an invalid partial response
// fails the whole batch: every message is received again.
func TestWholeBatchFailure(t *testing.T) {
	t.Parallel()
	for name, fail := range map[string]func(ev events.SQSEvent) (events.SQSEventResponse, error){
		"handler error": func(events.SQSEvent) (events.SQSEventResponse, error) {
			return events.SQSEventResponse{}, errors.New("DynamoDB is down")
		},
		"panic": func(events.SQSEvent) (events.SQSEventResponse, error) { panic("bug") },
		"timeout": func(events.SQSEvent) (events.SQSEventResponse, error) {
			time.Sleep(3 * time.Second) // past the 1 s function timeout, ignoring the context
			return events.SQSEventResponse{}, nil
		},
		"unknown itemIdentifier": func(events.SQSEvent) (events.SQSEventResponse, error) {
			return events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{{ItemIdentifier: "not-in-the-batch"}}}, nil
		},
		"empty itemIdentifier": func(events.SQSEvent) (events.SQSEventResponse, error) {
			return events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{{ItemIdentifier: ""}}}, nil
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			url := engine.CreateQueue(t, map[string]string{"VisibilityTimeout": "5"}) // as above
			sendBatch(t, url, "x", "y", "z")
			var in invocations
			start(t, sqsesm.Config{QueueURL: url, Settings: sqsesm.Settings{BatchSize: 10, ReportBatchItemFailures: true, FunctionTimeout: time.Second},
				Handler: func(ev events.SQSEvent) (events.SQSEventResponse, error) {
					if in.add(ev) == 1 {
						return fail(ev)
					}
					return events.SQSEventResponse{}, nil
				}})
			require.Eventually(t, func() bool { return drained(t, url) && in.count() >= 2 }, wait, 50*time.Millisecond)
			first := in.all()[0]
			require.NotEmpty(t, first)
			counts := in.byBody()
			for _, r := range first {
				assert.Equal(t, []string{"1", "2"}, counts[r.Body], "message %s of the failed batch", r.Body)
			}
		})
	}
}

// Without ReportBatchItemFailures the response is ignored: a batch that
// returns without error is deleted whole.
func TestResponseIgnoredWithoutReportBatchItemFailures(t *testing.T) {
	t.Parallel()
	url := engine.CreateQueue(t, map[string]string{"VisibilityTimeout": "5"}) // as above
	sendBatch(t, url, "p", "q")
	var in invocations
	start(t, sqsesm.Config{QueueURL: url, Settings: sqsesm.Settings{BatchSize: 10},
		Handler: func(ev events.SQSEvent) (events.SQSEventResponse, error) {
			in.add(ev)
			return events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{{ItemIdentifier: ev.Records[0].MessageId}}}, nil
		}})
	require.Eventually(t, func() bool { return drained(t, url) }, wait, 50*time.Millisecond)
	assert.Equal(t, map[string][]string{"p": {"1"}, "q": {"1"}}, in.byBody())
}

// A message that keeps failing is received maxReceiveCount times, then
// the engine moves it to the dead-letter queue with its body intact.
func TestMaxReceiveCountToDeadLetterQueue(t *testing.T) {
	t.Parallel()
	dlq := engine.CreateQueue(t, nil)
	redrive, _ := json.Marshal(map[string]any{"deadLetterTargetArn": engine.QueueARN(t, dlq), "maxReceiveCount": 3})
	url := engine.CreateQueue(t, map[string]string{"VisibilityTimeout": "1", "RedrivePolicy": string(redrive)})
	body := `{"poison":"é ✓"}`
	id := send(t, url, body, 0)
	var in invocations
	start(t, sqsesm.Config{QueueURL: url, Settings: sqsesm.Settings{ReportBatchItemFailures: true},
		Handler: func(ev events.SQSEvent) (events.SQSEventResponse, error) {
			in.add(ev)
			return events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{{ItemIdentifier: ev.Records[0].MessageId}}}, nil
		}})
	var dead []types.Message
	require.Eventually(t, func() bool {
		out, err := engine.SQS.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(dlq), WaitTimeSeconds: 1})
		if err != nil { // in Eventually's goroutine: no require
			t.Logf("receive from the dead-letter queue: %v", err)
			return false
		}
		dead = out.Messages
		return len(dead) > 0
	}, wait, 10*time.Millisecond)
	require.Len(t, dead, 1)
	assert.Equal(t, id, aws.ToString(dead[0].MessageId))
	assert.Equal(t, body, aws.ToString(dead[0].Body))
	assert.Equal(t, map[string][]string{body: {"1", "2", "3"}}, in.byBody(), "invoked maxReceiveCount times")
	assert.True(t, drained(t, url))
}

// A delayed message is invoked no sooner than its delay after it was
// sent; one sent later without delay is invoked too. (Not their order:
// on a busy machine the driver's first receive could come after the
// delay, and find both visible.)
func TestDelayHonoured(t *testing.T) {
	t.Parallel()
	url := engine.CreateQueue(t, nil)
	sent := time.Now()
	send(t, url, "delayed", 2)
	send(t, url, "now", 0)
	var mu sync.Mutex
	invoked := map[string]time.Time{}
	start(t, sqsesm.Config{QueueURL: url, Settings: sqsesm.Settings{BatchSize: 1},
		Handler: func(ev events.SQSEvent) error {
			mu.Lock()
			defer mu.Unlock()
			invoked[ev.Records[0].Body] = time.Now()
			return nil
		}})
	require.Eventually(t, func() bool { return drained(t, url) }, wait, 50*time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	require.Contains(t, invoked, "now")
	require.Contains(t, invoked, "delayed")
	assert.GreaterOrEqual(t, invoked["delayed"].Sub(sent), 2*time.Second, "the delayed message was invoked before its delay")
}

// At most MaximumConcurrency invocations run at once, and that many do.
func TestMaximumConcurrency(t *testing.T) {
	t.Parallel()
	url := engine.CreateQueue(t, nil)
	var bodies []string
	for i := range 12 {
		bodies = append(bodies, strconv.Itoa(i))
	}
	sendBatch(t, url, bodies...)
	var inFlight, peak, calls atomic.Int32
	reached := make(chan struct{})
	var once sync.Once
	// A minute's function timeout: the slots are held until the third
	// invocation starts, which takes two receives (a busy machine could
	// take longer than the default 3 s, and the first timed out).
	start(t, sqsesm.Config{QueueURL: url, Settings: sqsesm.Settings{BatchSize: 1, MaximumConcurrency: 3, FunctionTimeout: time.Minute},
		Handler: func(ctx context.Context, ev events.SQSEvent) error {
			n := inFlight.Add(1)
			defer inFlight.Add(-1)
			calls.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			if n == 3 {
				once.Do(func() { close(reached) })
			}
			// Hold the slot until the limit was reached once, so a
			// driver without a bound would show a fourth.
			select {
			case <-reached:
				time.Sleep(20 * time.Millisecond)
			case <-ctx.Done():
			}
			return nil
		}})
	require.Eventually(t, func() bool { return drained(t, url) }, wait, 50*time.Millisecond)
	assert.Equal(t, int32(3), peak.Load(), "peak of concurrent invocations")
	assert.Equal(t, int32(12), calls.Load())
}

// Batches never exceed BatchSize; with a batching window a batch gathers
// more than one receive returns (10).
func TestBatchSize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		size, messages int
		window         time.Duration
	}{
		{3, 10, time.Second},
		{25, 25, 20 * time.Second}, // closed when full: the window only bounds a slow receive
	} {
		t.Run(strconv.Itoa(tc.size), func(t *testing.T) {
			t.Parallel()
			url := engine.CreateQueue(t, nil)
			var bodies []string
			for i := range tc.messages {
				bodies = append(bodies, strconv.Itoa(i))
			}
			sendBatch(t, url, bodies...)
			var in invocations
			start(t, sqsesm.Config{QueueURL: url, Settings: sqsesm.Settings{BatchSize: tc.size, MaximumBatchingWindow: tc.window, MaximumConcurrency: 2},
				Handler: func(ev events.SQSEvent) error { in.add(ev); return nil }})
			require.Eventually(t, func() bool { return drained(t, url) }, wait, 50*time.Millisecond)
			largest, total := 0, 0
			for _, c := range in.all() {
				assert.LessOrEqual(t, len(c), tc.size)
				largest = max(largest, len(c))
				total += len(c)
			}
			assert.Equal(t, tc.messages, total, "each message once")
			assert.Equal(t, tc.size, largest, "full batches when the messages are there")
		})
	}
}

// A batching window longer than the visibility timeout receives a
// message more than once while the batch gathers: the batch holds it
// once, with its newest receipt handle, so the delete succeeds.
func TestWindowLongerThanVisibility(t *testing.T) {
	t.Parallel()
	url := engine.CreateQueue(t, map[string]string{"VisibilityTimeout": "1"})
	send(t, url, "once", 0)
	var in invocations
	start(t, sqsesm.Config{QueueURL: url, Settings: sqsesm.Settings{BatchSize: 10, MaximumBatchingWindow: 3 * time.Second},
		Handler: func(ev events.SQSEvent) error { in.add(ev); return nil }})
	require.Eventually(t, func() bool { return drained(t, url) }, wait, 50*time.Millisecond)
	// (A batch gathering it again once the first's window closed may run
	// too, as a second delivery: at least once.)
	calls := in.all()
	require.NotEmpty(t, calls)
	require.Len(t, calls[0], 1)
	n, err := strconv.Atoi(calls[0][0].Attributes["ApproximateReceiveCount"])
	require.NoError(t, err)
	assert.Greater(t, n, 1, "received again during the window")
}

// A stop waits for the running invocation, which then deletes its
// message; nothing is received after it.
func TestGracefulStop(t *testing.T) {
	t.Parallel()
	url := engine.CreateQueue(t, nil)
	send(t, url, "in-flight", 0)
	entered, release := make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	stop := start(t, sqsesm.Config{QueueURL: url, Settings: sqsesm.Settings{FunctionTimeout: time.Minute},
		Handler: func(ev events.SQSEvent) error {
			if calls.Add(1) == 1 {
				close(entered)
				<-release
			}
			return nil
		}})
	select {
	case <-entered:
	case <-time.After(wait):
		t.Fatal("no invocation")
	}
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	select {
	case <-stopped:
		t.Fatal("the stop did not wait for the running invocation")
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	<-stopped
	assert.True(t, drained(t, url), "the finished invocation's message is deleted")
	send(t, url, "after-stop", 0)
	time.Sleep(1500 * time.Millisecond)
	assert.Equal(t, int32(1), calls.Load(), "nothing invoked after the stop")
}

func TestNewRejectsBadSettings(t *testing.T) {
	h := func(events.SQSEvent) error { return nil }
	for name, cfg := range map[string]sqsesm.Config{
		"no client":       {QueueURL: "u", Handler: h},
		"no queue":        {Client: engine.SQS, Handler: h},
		"no handler":      {Client: engine.SQS, QueueURL: "u"},
		"batch over 10":   {Client: engine.SQS, QueueURL: "u", Handler: h, Settings: sqsesm.Settings{BatchSize: 11}},
		"batch too large": {Client: engine.SQS, QueueURL: "u", Handler: h, Settings: sqsesm.Settings{BatchSize: 10001, MaximumBatchingWindow: time.Second}},
		"window too long": {Client: engine.SQS, QueueURL: "u", Handler: h, Settings: sqsesm.Settings{MaximumBatchingWindow: 301 * time.Second}},
		"poll wait":       {Client: engine.SQS, QueueURL: "u", Handler: h, PollWait: 1500 * time.Millisecond},
	} {
		_, err := sqsesm.New(cfg)
		assert.Error(t, err, name)
	}
}
