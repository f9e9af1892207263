package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/apikey"
	"github.com/triggers-dev/triggers/internal/dynamotest"
)

var db *dynamotest.Local

func TestMain(m *testing.M) { os.Exit(dynamotest.Main(m, &db)) }

// TestServesOverHTTP runs the real server against DynamoDB Local and talks
// to it over TCP with an API key.
func TestServesOverHTTP(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	events, keys := dynamotest.TableName("events"), dynamotest.TableName("keys")
	ready := make(chan string, 1)
	done := make(chan int, 1)
	var out, errOut bytes.Buffer
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-endpoint-url", db.Endpoint, "-events-table", events, "-keys-table", keys, "-create-tables"},
			&out, &errOut, func(string) string { return "" }, ready)
	}()
	var addr string
	select {
	case addr = <-ready:
	case code := <-done:
		t.Fatalf("server exited with %d: %s", code, errOut.String())
	case <-time.After(60 * time.Second):
		t.Fatal("server did not start")
	}
	key, _, err := apikey.NewStore(db.Client, keys).Create(ctx, "tenant-a", "")
	require.NoError(t, err)

	do := func(method, path, body string, auth bool) (int, string) {
		r, err := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
		require.NoError(t, err)
		if body != "" {
			r.Header.Set("Content-Type", "application/json")
		}
		if auth {
			r.Header.Set("Authorization", "Bearer "+key)
		}
		res, err := http.DefaultClient.Do(r)
		require.NoError(t, err)
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	code, body := do("POST", "/v1/events", `{"event_type":"user.created","payload":{"x":1}}`, true)
	assert.Equal(t, http.StatusCreated, code, "%s", body)
	assert.Contains(t, body, `"source_ip":"127.0.0.1"`)
	code, body = do("GET", "/v1/inbox", "", true)
	assert.Equal(t, http.StatusOK, code, "%s", body)
	assert.Contains(t, body, "user.created")
	code, _ = do("GET", "/v1/inbox", "", false)
	assert.Equal(t, http.StatusUnauthorized, code)

	cancel()
	select {
	case code := <-done:
		assert.Equal(t, 0, code, "exit code; stderr: %s", errOut.String())
	case <-time.After(10 * time.Second):
		t.Fatal("server did not stop")
	}
	assert.Contains(t, out.String(), `"msg":"listening"`)
}
