package devenv

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/streamconsumer"
)

func newLog(w io.Writer) *deliveryLog {
	return &deliveryLog{w: w, log: slog.New(slog.NewJSONHandler(io.Discard, nil))}
}

func get(t *testing.T, h http.Handler, method, target string) (int, map[string]any) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, target, nil))
	var body map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body), "body %s", rec.Body.String())
	return rec.Code, body
}

func TestDeliveriesEndpoint(t *testing.T) {
	var file bytes.Buffer
	d := newLog(&file)

	code, body := get(t, d, "GET", DeliveriesPath)
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, []any{}, body["deliveries"], "empty list, not null")

	for _, c := range []struct{ target, method string }{
		{DeliveriesPath + "?wait=31", "GET"}, {DeliveriesPath + "?wait=x", "GET"}, {DeliveriesPath + "?wait=-1", "GET"},
	} {
		code, body := get(t, d, c.method, c.target)
		assert.Equal(t, http.StatusBadRequest, code, c.target)
		assert.Equal(t, "invalid_parameter", body["error"].(map[string]any)["code"], c.target)
	}
	code, _ = get(t, d, "POST", DeliveriesPath)
	assert.Equal(t, http.StatusMethodNotAllowed, code)

	// wait=N returns as soon as a delivery arrives.
	done := make(chan map[string]any, 1)
	go func() { // no require here: not the test's goroutine
		rec := httptest.NewRecorder()
		d.ServeHTTP(rec, httptest.NewRequest("GET", DeliveriesPath+"?wait=10", nil))
		var body map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &body)
		done <- body
	}()
	time.Sleep(50 * time.Millisecond)
	require.NoError(t, d.deliver(context.Background(), streamconsumer.Message{Tenant: "acme", EventType: "a.b", EventID: "e1", Body: []byte(`{"event_id":"e1"}`)}))
	select {
	case body := <-done:
		got := body["deliveries"].([]any)
		require.Len(t, got, 1)
		assert.Equal(t, map[string]any{"tenant": "acme", "event_type": "a.b", "event": map[string]any{"event_id": "e1"}}, got[0])
	case <-time.After(5 * time.Second):
		t.Fatal("wait=10 did not return after a delivery")
	}
	assert.Equal(t, `{"tenant":"acme","event_type":"a.b","event":{"event_id":"e1"}}`+"\n", file.String(), "appended to the file")
}

// Only the last maxKept deliveries are kept in memory.
func TestDeliveriesBounded(t *testing.T) {
	d := newLog(io.Discard)
	for range maxKept + 5 {
		require.NoError(t, d.deliver(context.Background(), streamconsumer.Message{Body: []byte(`{}`)}))
	}
	assert.Len(t, d.kept, maxKept)
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, io.ErrShortWrite }

// A sink write error fails the delivery, so the consumer retries it.
func TestDeliveryFileErrorFails(t *testing.T) {
	d := newLog(failingWriter{})
	err := d.deliver(context.Background(), streamconsumer.Message{Body: []byte(`{}`)})
	assert.ErrorIs(t, err, io.ErrShortWrite)
	assert.Empty(t, d.kept)
}

func TestRunRejectsBadTenantBeforeStarting(t *testing.T) {
	err := Run(context.Background(), Options{Tenant: "bad tenant", Stdout: io.Discard})
	assert.ErrorContains(t, err, `tenant "bad tenant" is invalid`)
}
