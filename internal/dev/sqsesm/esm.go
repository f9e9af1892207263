// Package sqsesm runs Lambda's SQS event source mapping on this machine:
// it polls a queue on an SQS-compatible engine (internal/dev/sqslocal) and
// invokes a Lambda handler through its Lambda entry point
// (lambda.NewHandler(handler).Invoke) with the JSON Lambda sends for SQS,
// a context with the function's deadline and a lambdacontext, the way the
// deployed mapping does:
//
//   - batches of up to BatchSize messages, gathered for up to
//     MaximumBatchingWindow and at most 6 MB of payload;
//   - at most MaximumConcurrency invocations at once;
//   - a successful invocation deletes its messages; with
//     ReportBatchItemFailures only those the response does not list; a
//     handler error, a timeout or an invalid response (an itemIdentifier
//     that is empty, missing or not in the batch) deletes none;
//   - a message left undeleted reappears after the queue's visibility
//     timeout and, after the queue's maxReceiveCount receives, moves to
//     its dead-letter queue: the engine does both, as SQS does;
//   - a queue's delay is the engine's too.
//
// The settings come from the synthesized template (ParseTemplate), so
// changing the construct changes what runs locally; CreateQueues makes the
// template's queues on the engine. make dev (internal/dev/devenv) runs the
// webhook function this way; it ships in no Lambda binary.
package sqsesm

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Limits and defaults of the driver.
const (
	// MaxPayload is Lambda's limit on a synchronous invocation's payload
	// (6 MB): a batch stops growing before it.
	MaxPayload = 6 * 1024 * 1024
	// DefaultConcurrency bounds the concurrent invocations of a mapping
	// whose template sets no ScalingConfig.MaximumConcurrency and whose
	// function has no reserved concurrency: the five concurrent batches
	// Lambda starts an SQS source with.
	DefaultConcurrency = 5
	// DefaultPollWait is how long one ReceiveMessage waits for messages
	// (WaitTimeSeconds) when the queue is idle; it also bounds how long a
	// stop waits for the poller.
	DefaultPollWait = time.Second
)

// Settings are an event source mapping's settings, with the timeout of
// the function it invokes.
type Settings struct {
	// BatchSize is the most messages per invocation, 1 to 10000 (over 10
	// needs a MaximumBatchingWindow). Default: DefaultBatchSize.
	BatchSize int
	// MaximumBatchingWindow is how long a batch may wait to fill up once
	// its first message arrived; 0 invokes with what one receive
	// returned. Honoured to the second: ReceiveMessage waits whole
	// seconds.
	MaximumBatchingWindow time.Duration
	// ReportBatchItemFailures is FunctionResponseTypes
	// [ReportBatchItemFailures]: the response lists the failed messages.
	ReportBatchItemFailures bool
	// MaximumConcurrency is ScalingConfig.MaximumConcurrency: the most
	// invocations at once. Default: DefaultConcurrency.
	MaximumConcurrency int
	// FunctionTimeout is the function's timeout, the invocation's
	// deadline. Default: DefaultFunctionTimeout.
	FunctionTimeout time.Duration
}

// Concurrency returns the concurrency the driver uses for m: the
// mapping's MaximumConcurrency, else the function's reserved concurrency,
// else DefaultConcurrency.
func (m Mapping) Concurrency() int {
	switch {
	case m.Settings.MaximumConcurrency > 0:
		return m.Settings.MaximumConcurrency
	case m.Function.ReservedConcurrency > 0:
		return m.Function.ReservedConcurrency
	}
	return DefaultConcurrency
}

// API is the part of the SQS client the driver uses.
type API interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
	ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

// Config configures a Driver.
type Config struct {
	// Client reaches the engine. Required.
	Client API
	// QueueURL is the source queue. Required.
	QueueURL string
	// QueueARN is the source queue's ARN, the records' eventSourceARN.
	// Default: the queue's QueueArn attribute.
	QueueARN string
	// Settings are the mapping's (Mapping.Settings; see Mapping.Concurrency
	// for MaximumConcurrency).
	Settings Settings
	// Handler is the function's handler, as its main passes it to
	// lambda.Start (a func taking a context and an events.SQSEvent, say).
	// Required.
	Handler any
	// FunctionName names the function in the lambdacontext's
	// InvokedFunctionArn and in log lines. Default: "function".
	FunctionName string
	// Logger receives a line per failed invocation or delete. Default:
	// none.
	Logger *slog.Logger
	// PollWait is the WaitTimeSeconds of a receive on an idle queue, 1 to
	// 20 seconds. Default: DefaultPollWait.
	PollWait time.Duration
}

// Driver polls one queue and invokes one handler: one event source
// mapping.
type Driver struct {
	cfg    Config
	log    *slog.Logger
	region string
	fnARN  string
}

// New checks cfg and returns its driver.
func New(cfg Config) (*Driver, error) {
	s := &cfg.Settings
	if s.BatchSize == 0 {
		s.BatchSize = DefaultBatchSize
	}
	if s.MaximumConcurrency == 0 {
		s.MaximumConcurrency = DefaultConcurrency
	}
	if s.FunctionTimeout == 0 {
		s.FunctionTimeout = DefaultFunctionTimeout
	}
	if cfg.PollWait == 0 {
		cfg.PollWait = DefaultPollWait
	}
	if cfg.FunctionName == "" {
		cfg.FunctionName = "function"
	}
	switch {
	case cfg.Client == nil:
		return nil, errors.New("sqsesm: Config.Client is nil")
	case cfg.QueueURL == "":
		return nil, errors.New("sqsesm: Config.QueueURL is empty")
	case cfg.Handler == nil:
		return nil, errors.New("sqsesm: Config.Handler is nil: pass the function's handler as its main passes it to lambda.Start")
	case s.BatchSize < 1 || s.BatchSize > 10000:
		return nil, fmt.Errorf("sqsesm: BatchSize %d: want 1 to 10000", s.BatchSize)
	case s.BatchSize > 10 && s.MaximumBatchingWindow < time.Second:
		return nil, fmt.Errorf("sqsesm: BatchSize %d is over 10: it needs a MaximumBatchingWindow of at least 1 s, as in Lambda", s.BatchSize)
	case s.MaximumBatchingWindow < 0 || s.MaximumBatchingWindow > 300*time.Second:
		return nil, fmt.Errorf("sqsesm: MaximumBatchingWindow %s: want 0 to 300 s", s.MaximumBatchingWindow)
	case s.MaximumConcurrency < 1:
		return nil, fmt.Errorf("sqsesm: MaximumConcurrency %d: want at least 1", s.MaximumConcurrency)
	case s.FunctionTimeout < 0:
		return nil, fmt.Errorf("sqsesm: FunctionTimeout %s is negative", s.FunctionTimeout)
	case cfg.PollWait < time.Second || cfg.PollWait > 20*time.Second || cfg.PollWait%time.Second != 0:
		return nil, fmt.Errorf("sqsesm: PollWait %s: want whole seconds from 1 to 20", cfg.PollWait)
	}
	d := &Driver{cfg: cfg, log: cfg.Logger}
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	return d, nil
}

// pending is a received message and its record in the invoke payload.
type pending struct {
	msg    types.Message
	record []byte
}

// Run polls and invokes until ctx ends, then stops gracefully: no new
// receive starts, the messages already received are invoked or released
// (made visible again), and Run returns once every invocation has
// finished and its messages are deleted. An invocation that outlives the
// function timeout counts as failed at the deadline, as in Lambda (its
// goroutine cannot be killed and may still be running). Run returns an
// error only when it cannot start (the queue's ARN cannot be read).
func (d *Driver) Run(ctx context.Context) error {
	if d.cfg.QueueARN == "" {
		out, err := d.cfg.Client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(d.cfg.QueueURL), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
		if err != nil {
			return fmt.Errorf("sqsesm: read the ARN of %s: %w", d.cfg.QueueURL, err)
		}
		d.cfg.QueueARN = out.Attributes[string(types.QueueAttributeNameQueueArn)]
	}
	// arn:aws:sqs:<region>:<account>:<name>
	parts := strings.SplitN(d.cfg.QueueARN, ":", 6)
	account := "000000000000"
	if len(parts) == 6 {
		d.region, account = parts[3], parts[4]
	}
	d.fnARN = fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s", d.region, account, d.cfg.FunctionName)

	slots := make(chan struct{}, d.cfg.Settings.MaximumConcurrency)
	var wg sync.WaitGroup
	var carry []pending
	for ctx.Err() == nil {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			continue
		}
		batch, rest, err := d.collect(ctx, carry)
		carry = rest
		if err != nil {
			<-slots
			d.log.ErrorContext(ctx, "sqs poll failed", "queue", d.cfg.QueueURL, "error", err.Error())
			select { // the engine may be restarting: no tight loop
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		if len(batch) == 0 {
			<-slots
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			d.invoke(ctx, batch)
		}()
	}
	d.release(carry)
	wg.Wait()
	return nil
}

// collect returns the next batch, starting with carry, and what was
// received past the payload limit.
func (d *Driver) collect(ctx context.Context, carry []pending) (batch, rest []pending, err error) {
	s := d.cfg.Settings
	size := len(`{"Records":[]}`)
	add := func(ps []pending) {
		for i, p := range ps {
			// A message received again while the batch gathers (its
			// visibility timeout is shorter than the window) replaces
			// its older copy: the newest receipt handle is the valid one.
			if j := slices.IndexFunc(batch, func(b pending) bool { return aws.ToString(b.msg.MessageId) == aws.ToString(p.msg.MessageId) }); j >= 0 {
				size += len(p.record) - len(batch[j].record)
				batch[j] = p
				continue
			}
			if len(batch) >= s.BatchSize || (len(batch) > 0 && size+len(p.record)+1 > MaxPayload) {
				rest = append(rest, ps[i:]...)
				return
			}
			batch = append(batch, p)
			size += len(p.record) + 1
		}
	}
	add(carry)
	var windowEnd time.Time
	if len(batch) > 0 {
		windowEnd = time.Now().Add(s.MaximumBatchingWindow)
	}
	for len(rest) == 0 && len(batch) < s.BatchSize {
		wait := d.cfg.PollWait
		if len(batch) > 0 {
			remaining := time.Until(windowEnd)
			if remaining <= 0 || ctx.Err() != nil {
				break
			}
			wait = min(wait, time.Duration(math.Ceil(remaining.Seconds()))*time.Second)
		}
		got, err := d.receive(ctx, min(10, s.BatchSize-len(batch)), wait)
		if err != nil {
			if len(batch) > 0 {
				break // invoke what was received
			}
			return nil, nil, err
		}
		if len(batch) == 0 {
			if len(got) == 0 {
				return nil, nil, nil // idle: let Run check ctx
			}
			windowEnd = time.Now().Add(s.MaximumBatchingWindow)
		}
		add(got)
		if s.MaximumBatchingWindow == 0 {
			break
		}
	}
	return batch, rest, nil
}

// receive runs one ReceiveMessage. It is not cancelled by ctx (a
// cancelled receive may have taken messages that would then stay
// invisible for the visibility timeout): a stop waits for it, at most
// wait.
func (d *Driver) receive(ctx context.Context, n int, wait time.Duration) ([]pending, error) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), wait+30*time.Second)
	defer cancel()
	out, err := d.cfg.Client.ReceiveMessage(rctx, &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(d.cfg.QueueURL),
		MaxNumberOfMessages:         int32(n),
		WaitTimeSeconds:             int32(wait / time.Second),
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		MessageAttributeNames:       []string{"All"},
	})
	if err != nil {
		return nil, fmt.Errorf("receive from %s: %w", d.cfg.QueueURL, err)
	}
	ps := make([]pending, 0, len(out.Messages))
	for _, m := range out.Messages {
		rec, err := json.Marshal(d.record(m))
		if err != nil {
			return nil, fmt.Errorf("message %s: %w", aws.ToString(m.MessageId), err)
		}
		ps = append(ps, pending{msg: m, record: rec})
	}
	return ps, nil
}

// Record is one message of an SQS event as Lambda sends it.
type Record struct {
	MessageID              string                      `json:"messageId"`
	ReceiptHandle          string                      `json:"receiptHandle"`
	Body                   string                      `json:"body"`
	Attributes             map[string]string           `json:"attributes"`
	MessageAttributes      map[string]MessageAttribute `json:"messageAttributes"`
	MD5OfMessageAttributes string                      `json:"md5OfMessageAttributes,omitempty"`
	MD5OfBody              string                      `json:"md5OfBody"`
	EventSource            string                      `json:"eventSource"`
	EventSourceARN         string                      `json:"eventSourceARN"`
	AWSRegion              string                      `json:"awsRegion"`
}

// MessageAttribute is a message attribute as Lambda sends it: the list
// fields are always present (empty), binary values are base64.
type MessageAttribute struct {
	StringValue      *string  `json:"stringValue,omitempty"`
	BinaryValue      []byte   `json:"binaryValue,omitempty"`
	StringListValues []string `json:"stringListValues"`
	BinaryListValues [][]byte `json:"binaryListValues"`
	DataType         string   `json:"dataType"`
}

func (d *Driver) record(m types.Message) Record {
	r := Record{
		MessageID:              aws.ToString(m.MessageId),
		ReceiptHandle:          aws.ToString(m.ReceiptHandle),
		Body:                   aws.ToString(m.Body),
		Attributes:             map[string]string{},
		MessageAttributes:      map[string]MessageAttribute{},
		MD5OfMessageAttributes: aws.ToString(m.MD5OfMessageAttributes),
		MD5OfBody:              aws.ToString(m.MD5OfBody),
		EventSource:            "aws:sqs",
		EventSourceARN:         d.cfg.QueueARN,
		AWSRegion:              d.region,
	}
	for k, v := range m.Attributes {
		r.Attributes[k] = v
	}
	for k, v := range m.MessageAttributes {
		a := MessageAttribute{StringValue: v.StringValue, BinaryValue: v.BinaryValue, StringListValues: v.StringListValues, BinaryListValues: v.BinaryListValues, DataType: aws.ToString(v.DataType)}
		if a.StringListValues == nil {
			a.StringListValues = []string{}
		}
		if a.BinaryListValues == nil {
			a.BinaryListValues = [][]byte{}
		}
		r.MessageAttributes[k] = a
	}
	return r
}

// Payload returns the invoke payload of records: {"Records":[...]}.
func Payload(records ...[]byte) []byte {
	b := []byte(`{"Records":[`)
	for i, r := range records {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, r...)
	}
	return append(b, "]}"...)
}

// invoke runs one batch through the handler and deletes the messages
// that succeeded.
func (d *Driver) invoke(ctx context.Context, batch []pending) {
	recs := make([][]byte, len(batch))
	for i, p := range batch {
		recs[i] = p.record
	}
	reqID := newRequestID()
	out, err := d.call(ctx, reqID, Payload(recs...))
	failed, reason := d.failures(batch, out, err)
	if len(failed) > 0 {
		d.log.WarnContext(ctx, "sqs batch failed", "function", d.cfg.FunctionName, "request_id", reqID, "queue", d.cfg.QueueURL,
			"messages", len(batch), "failed", len(failed), "reason", reason)
	}
	var done []pending
	for _, p := range batch {
		if !failed[aws.ToString(p.msg.MessageId)] {
			done = append(done, p)
		}
	}
	d.delete(ctx, done)
}

// call invokes the handler through its Lambda entry point with the
// function's deadline and a lambdacontext.
func (d *Driver) call(ctx context.Context, reqID string, payload []byte) ([]byte, error) {
	timeout := d.cfg.Settings.FunctionTimeout
	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	ictx = lambdacontext.NewContext(ictx, &lambdacontext.LambdaContext{AwsRequestID: reqID, InvokedFunctionArn: d.fnARN})
	type result struct {
		out []byte
		err error
	}
	ch := make(chan result, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				ch <- result{err: fmt.Errorf("the handler panicked: %v", p)}
			}
		}()
		// A handler per invocation: the one lambda.NewHandler returns
		// reuses its output buffer, so concurrent invocations must not
		// share it.
		out, err := lambda.NewHandler(d.cfg.Handler).Invoke(ictx, payload)
		ch <- result{append([]byte(nil), out...), err}
	}()
	select {
	case r := <-ch:
		return r.out, r.err
	case <-ictx.Done():
		return nil, fmt.Errorf("task timed out after %s", timeout)
	}
}

// failures returns the messages of batch to keep (not delete) and why.
func (d *Driver) failures(batch []pending, out []byte, err error) (map[string]bool, string) {
	all := func() map[string]bool {
		m := map[string]bool{}
		for _, p := range batch {
			m[aws.ToString(p.msg.MessageId)] = true
		}
		return m
	}
	if err != nil {
		return all(), "the function failed: " + err.Error()
	}
	if !d.cfg.Settings.ReportBatchItemFailures {
		return nil, ""
	}
	ids, err := batchItemFailures(out, all())
	if err != nil {
		return all(), "invalid batch item failures response: " + err.Error()
	}
	if len(ids) == 0 {
		return nil, ""
	}
	return ids, "the function reported batch item failures"
}

// batchItemFailures reads a partial batch response. Like Lambda, it takes
// an empty or null response, or an empty or null batchItemFailures, as
// complete success, and fails the whole batch (an error) for a response
// that is not a JSON object, or an entry whose itemIdentifier is missing,
// empty, not a string or not a message of the batch.
func batchItemFailures(out []byte, inBatch map[string]bool) (map[string]bool, error) {
	s := strings.TrimSpace(string(out))
	if s == "" || s == "null" {
		return nil, nil
	}
	var resp map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &resp); err != nil {
		return nil, fmt.Errorf("not a JSON object: %s", truncate(s, 200))
	}
	raw, ok := resp["batchItemFailures"]
	if !ok || string(raw) == "null" {
		return nil, nil
	}
	var entries []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &entries); err != nil {
		return nil, fmt.Errorf("batchItemFailures is not a list of objects: %s", truncate(string(raw), 200))
	}
	ids := map[string]bool{}
	for _, e := range entries {
		var id string
		v, ok := e["itemIdentifier"]
		if !ok || json.Unmarshal(v, &id) != nil || id == "" {
			return nil, fmt.Errorf("an entry without a non-empty itemIdentifier string: %s", truncate(string(raw), 200))
		}
		if !inBatch[id] {
			return nil, fmt.Errorf("itemIdentifier %q is not a messageId of the batch", id)
		}
		ids[id] = true
	}
	return ids, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// delete deletes ps, 10 at a time. It is not cancelled by a stop: the
// work is done, only its record remains.
func (d *Driver) delete(ctx context.Context, ps []pending) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	for len(ps) > 0 {
		n := min(10, len(ps))
		entries := make([]types.DeleteMessageBatchRequestEntry, n)
		for i, p := range ps[:n] {
			entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: p.msg.ReceiptHandle}
		}
		out, err := d.cfg.Client.DeleteMessageBatch(dctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(d.cfg.QueueURL), Entries: entries})
		switch {
		case err != nil:
			d.log.ErrorContext(ctx, "sqs delete failed: the messages will be received again", "queue", d.cfg.QueueURL, "messages", n, "error", err.Error())
		case len(out.Failed) > 0:
			d.log.ErrorContext(ctx, "sqs delete failed: the messages will be received again", "queue", d.cfg.QueueURL, "messages", len(out.Failed),
				"error", aws.ToString(out.Failed[0].Code)+": "+aws.ToString(out.Failed[0].Message))
		}
		ps = ps[n:]
	}
}

// release makes messages received but not invoked visible again at once.
func (d *Driver) release(ps []pending) {
	for _, p := range ps {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := d.cfg.Client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(d.cfg.QueueURL), ReceiptHandle: p.msg.ReceiptHandle, VisibilityTimeout: 0})
		cancel()
		if err != nil {
			d.log.Warn("sqs release failed: the message reappears after the visibility timeout", "queue", d.cfg.QueueURL, "message_id", aws.ToString(p.msg.MessageId), "error", err.Error())
		}
	}
}

// newRequestID returns a random request id in the UUID form Lambda uses.
func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
