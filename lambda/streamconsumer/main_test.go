package main

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/dev/syncio"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	buildOut  []byte
)

// buildBinary builds this command once per test run, as deployed
// (lambda.norpc), for the host.
func buildBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "streamconsumer-test-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "bootstrap")
		cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", binPath, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		buildOut, buildErr = cmd.CombinedOutput()
	})
	require.NoError(t, buildErr, "go build: %s", buildOut)
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		_ = os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// isolatedEnv is an environment without the caller's AWS settings.
func isolatedEnv(t *testing.T, extra ...string) []string {
	dir := t.TempDir()
	return append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + dir,
		"AWS_CONFIG_FILE=" + filepath.Join(dir, "config"),
		"AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(dir, "credentials"),
		"AWS_EC2_METADATA_DISABLED=true",
	}, extra...)
}

func TestConfigurationError(t *testing.T) {
	bin := buildBinary(t)
	cmd := exec.Command(bin)
	cmd.Env = isolatedEnv(t, "LOG_LEVEL=loud")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 1, exit.ExitCode())
	assert.Contains(t, stderr.String(), "streamconsumer: configuration:")
	assert.Contains(t, stderr.String(), "DELIVERY_QUEUE_URL is not set")
	assert.Contains(t, stderr.String(), "LOG_LEVEL")
}

// TestBinaryEndToEnd runs the built function against a fake Lambda
// Runtime API and a fake SQS endpoint speaking the SQS JSON protocol: one
// invocation with a stream event goes in, SendMessageBatch goes out with
// the body and attributes, the partial batch response comes back.
func TestBinaryEndToEnd(t *testing.T) {
	bin := buildBinary(t)

	type entry struct {
		ID                string `json:"Id"`
		MessageBody       string `json:"MessageBody"`
		MessageAttributes map[string]struct {
			DataType    string `json:"DataType"`
			StringValue string `json:"StringValue"`
		} `json:"MessageAttributes"`
	}
	var mu sync.Mutex
	var sqsCalls []struct {
		QueueURL string  `json:"QueueUrl"`
		Entries  []entry `json:"Entries"`
	}
	sqsSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Amz-Target") != "AmazonSQS.SendMessageBatch" {
			http.Error(w, "unexpected "+r.Header.Get("X-Amz-Target"), http.StatusBadRequest)
			return
		}
		var in struct {
			QueueURL string  `json:"QueueUrl"`
			Entries  []entry `json:"Entries"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		sqsCalls = append(sqsCalls, in)
		mu.Unlock()
		type ok struct {
			ID               string `json:"Id"`
			MessageID        string `json:"MessageId"`
			MD5OfMessageBody string `json:"MD5OfMessageBody"`
		}
		out := struct {
			Successful []ok  `json:"Successful"`
			Failed     []any `json:"Failed"`
		}{Failed: []any{}}
		for _, e := range in.Entries {
			sum := md5.Sum([]byte(e.MessageBody)) // the SDK checks it
			out.Successful = append(out.Successful, ok{ID: e.ID, MessageID: "m-" + e.ID, MD5OfMessageBody: hex.EncodeToString(sum[:])})
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		_ = json.NewEncoder(w).Encode(out)
	}))
	defer sqsSrv.Close()

	const event = `{"Records":[{"eventID":"a","eventName":"INSERT","eventVersion":"1.1","eventSource":"aws:dynamodb","awsRegion":"us-east-1",
	"dynamodb":{"Keys":{"user_id":{"S":"acme"}},"NewImage":{"user_id":{"S":"acme"},"timestamp#event_id":{"S":"2026-11-22T10:00:00.000000Z#e1"},
	"event_id":{"S":"e1"},"event_type":{"S":"user.created"},"payload":{"M":{"n":{"N":"12345678901234567890"},"s":{"S":"Zoë <&>"}}},"status":{"S":"received"},
	"timestamp":{"S":"2026-11-22T10:00:00.000000Z"},"ttl":{"N":"1797978553"},"retry_count":{"N":"0"},"metadata":{"M":{"source_ip":{"S":"192.0.2.1"},"api_version":{"S":"v1"}}}},
	"SequenceNumber":"100","SizeBytes":300,"StreamViewType":"NEW_IMAGE"},"eventSourceARN":"arn:aws:dynamodb:us-east-1:123456789012:table/events/stream/x"},
	{"eventID":"b","eventName":"MODIFY","dynamodb":{"SequenceNumber":"101","NewImage":{"user_id":{"S":"acme"}}},"eventSourceARN":"arn"}]}`
	responses := make(chan string, 1)
	served := false
	runtimeSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/2018-06-01/runtime/invocation/next":
			mu.Lock()
			first := !served
			served = true
			mu.Unlock()
			if !first {
				<-r.Context().Done() // no second invocation
				return
			}
			w.Header().Set("Lambda-Runtime-Aws-Request-Id", "req-1")
			w.Header().Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(time.Now().Add(30*time.Second).UnixMilli(), 10))
			w.Header().Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:us-east-1:123456789012:function:streamconsumer")
			_, _ = io.WriteString(w, event)
		case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/2018-06-01/runtime/"):
			b, _ := io.ReadAll(r.Body)
			w.WriteHeader(http.StatusAccepted)
			responses <- r.URL.Path + " " + string(b)
		default:
			http.NotFound(w, r)
		}
	}))
	defer runtimeSrv.Close()

	cmd := exec.Command(bin)
	cmd.Env = isolatedEnv(t,
		"AWS_LAMBDA_RUNTIME_API="+strings.TrimPrefix(runtimeSrv.URL, "http://"),
		"AWS_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test",
		"DELIVERY_QUEUE_URL="+sqsSrv.URL+"/123456789012/delivery",
		"SQS_ENDPOINT="+sqsSrv.URL,
	)
	var stdout, stderr syncio.Buffer // read while the process runs
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Start())
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()

	select {
	case got := <-responses:
		path, body, _ := strings.Cut(got, " ")
		require.Equal(t, "/2018-06-01/runtime/invocation/req-1/response", path, "body %s; stderr %s", body, stderr.String())
		assert.JSONEq(t, `{"batchItemFailures":[]}`, body)
	case <-time.After(60 * time.Second):
		t.Fatalf("no response from the function; stdout %s; stderr %s", stdout.String(), stderr.String())
	}

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, sqsCalls, 1)
	call := sqsCalls[0]
	assert.Equal(t, sqsSrv.URL+"/123456789012/delivery", call.QueueURL)
	require.Len(t, call.Entries, 1, "the MODIFY record is not sent")
	e := call.Entries[0]
	assert.Equal(t, `{"event_id":"e1","event_type":"user.created","payload":{"n":12345678901234567890,"s":"Zoë <&>"},"status":"received","timestamp":"2026-11-22T10:00:00.000000Z","retry_count":0,"metadata":{"source_ip":"192.0.2.1","api_version":"v1"}}`, e.MessageBody)
	assert.Equal(t, "String", e.MessageAttributes["tenant"].DataType)
	assert.Equal(t, "acme", e.MessageAttributes["tenant"].StringValue)
	assert.Equal(t, "String", e.MessageAttributes["event_type"].DataType)
	assert.Equal(t, "user.created", e.MessageAttributes["event_type"].StringValue)
}
