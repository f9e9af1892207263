package streampoll

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/triggers-dev/triggers/internal/delivery"
)

// SinkFunc is a Sender that hands every message of a batch to a function
// instead of SQS: local development plugs it in where Lambda uses the SQS
// client. A non-nil error fails that entry as retryable (SenderFault
// false), so the consumer retries it like an SQS server error.
type SinkFunc func(ctx context.Context, m delivery.Message) error

// SendMessageBatch calls f once per entry, in order, and reports each
// entry as successful or failed like SQS does.
func (f SinkFunc) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	if len(in.Entries) == 0 || len(in.Entries) > delivery.MaxBatchEntries {
		return nil, fmt.Errorf("sink: SendMessageBatch with %d entries: want 1 to %d", len(in.Entries), delivery.MaxBatchEntries)
	}
	out := &sqs.SendMessageBatchOutput{}
	for i, e := range in.Entries {
		m := delivery.Message{
			Tenant:    stringAttr(e.MessageAttributes, delivery.AttrTenant),
			EventType: stringAttr(e.MessageAttributes, delivery.AttrEventType),
			Body:      []byte(aws.ToString(e.MessageBody)),
		}
		var head struct {
			EventID string `json:"event_id"`
		}
		if json.Unmarshal(m.Body, &head) == nil {
			m.EventID = head.EventID
		}
		if err := f(ctx, m); err != nil {
			out.Failed = append(out.Failed, sqstypes.BatchResultErrorEntry{
				Id: e.Id, Code: aws.String("SinkError"), Message: aws.String(err.Error()), SenderFault: false,
			})
			continue
		}
		out.Successful = append(out.Successful, sqstypes.SendMessageBatchResultEntry{
			Id: e.Id, MessageId: aws.String(fmt.Sprintf("sink-%d-%s", i, aws.ToString(e.Id))),
		})
	}
	return out, nil
}

func stringAttr(attrs map[string]sqstypes.MessageAttributeValue, name string) string {
	if v, ok := attrs[name]; ok {
		return aws.ToString(v.StringValue)
	}
	return ""
}

// WriterSink returns a Sender that writes one JSON line per delivered
// message to w, safe for concurrent use:
//
//	{"tenant":"acme","event_type":"user.created","event":{...the body...}}
//
// The event field is the message body (compact JSON, as sent). A write error fails the
// entry (retryable).
func WriterSink(w io.Writer) SinkFunc {
	var mu sync.Mutex
	return func(_ context.Context, m delivery.Message) error {
		if !json.Valid(m.Body) {
			return errors.New("sink: message body is not JSON")
		}
		var line bytes.Buffer
		enc := json.NewEncoder(&line)
		enc.SetEscapeHTML(false)
		err := enc.Encode(struct {
			Tenant    string          `json:"tenant"`
			EventType string          `json:"event_type"`
			Event     json.RawMessage `json:"event"`
		}{m.Tenant, m.EventType, m.Body})
		if err != nil {
			return fmt.Errorf("sink: %w", err)
		}
		mu.Lock()
		defer mu.Unlock()
		_, err = w.Write(line.Bytes())
		return err
	}
}
