package streampoll

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/triggers-dev/triggers/internal/streamconsumer"
)

// SinkFunc is a streamconsumer.Publisher that hands every message to a
// function instead of SQS: local development plugs it in where Lambda
// uses SQS. A non-nil error fails that message as retryable, so the
// consumer retries it like an SQS server error.
type SinkFunc func(ctx context.Context, m streamconsumer.Message) error

// Publish calls f once per message, in order.
func (f SinkFunc) Publish(ctx context.Context, msgs []streamconsumer.Entry) ([]error, error) {
	if len(msgs) == 0 || len(msgs) > streamconsumer.MaxBatchEntries {
		return nil, fmt.Errorf("sink: %d messages: want 1 to %d", len(msgs), streamconsumer.MaxBatchEntries)
	}
	errs := make([]error, len(msgs))
	for i, m := range msgs {
		if err := f(ctx, m.Message); err != nil {
			errs[i] = fmt.Errorf("%w: %w", streamconsumer.ErrRetryable, err)
		}
	}
	return errs, nil
}

// WriterSink returns a Publisher that writes one JSON line per delivered
// message to w, safe for concurrent use:
//
//	{"tenant":"acme","event_type":"user.created","event":{...the body...}}
//
// The event field is the message body (compact JSON, as sent). A write error fails the
// entry (retryable).
func WriterSink(w io.Writer) SinkFunc {
	var mu sync.Mutex
	return func(_ context.Context, m streamconsumer.Message) error {
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
