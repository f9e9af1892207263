package main

import (
	"bytes"
	"compress/gzip"
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
		dir, err := os.MkdirTemp("", "archiver-test-")
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
	cmd.Env = isolatedEnv(t, "LOG_LEVEL=loud", "ARCHIVE_PREFIX=expired")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 1, exit.ExitCode())
	for _, want := range []string{"archiver: configuration:", "ARCHIVE_BUCKET is not set", "ARCHIVE_PREFIX", "LOG_LEVEL"} {
		assert.Contains(t, stderr.String(), want)
	}
}

// TestBinaryEndToEnd runs the built function against a fake Lambda
// Runtime API and a fake S3 endpoint (S3_ENDPOINT, path-style): one
// invocation with a TTL deletion and a user deletion goes in, one
// PutObject of the expired event's gzip JSON line goes out, the partial
// batch response comes back.
func TestBinaryEndToEnd(t *testing.T) {
	bin := buildBinary(t)

	var mu sync.Mutex
	puts := map[string][]byte{}
	s3Srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPut {
			http.Error(w, "unexpected "+r.Method, http.StatusBadRequest)
			return
		}
		mu.Lock()
		puts[r.URL.Path] = body
		mu.Unlock()
		w.Header().Set("ETag", `"e"`)
	}))
	defer s3Srv.Close()

	const event = `{"Records":[
	{"eventID":"a","eventName":"REMOVE","eventVersion":"1.1","eventSource":"aws:dynamodb","awsRegion":"us-east-1",
	 "userIdentity":{"type":"Service","principalId":"dynamodb.amazonaws.com"},
	 "dynamodb":{"Keys":{"user_id":{"S":"acme"}},"OldImage":{"user_id":{"S":"acme"},"timestamp#event_id":{"S":"2026-10-22T10:00:00.000000Z#e1"},
	 "event_id":{"S":"e1"},"event_type":{"S":"user.created"},"payload":{"M":{"n":{"N":"12345678901234567890123456789012345678"},"s":{"S":"Zoë <&>"}}},"status":{"S":"delivered"},
	 "timestamp":{"S":"2026-10-22T10:00:00.000000Z"},"ttl":{"N":"1795000000"},"retry_count":{"N":"0"},"metadata":{"M":{"source_ip":{"S":"192.0.2.1"},"api_version":{"S":"v1"}}}},
	 "SequenceNumber":"100","SizeBytes":300,"StreamViewType":"NEW_AND_OLD_IMAGES"},"eventSourceARN":"arn:aws:dynamodb:us-east-1:123456789012:table/events/stream/x"},
	{"eventID":"b","eventName":"REMOVE","dynamodb":{"SequenceNumber":"101","Keys":{"user_id":{"S":"acme"}},"OldImage":{"user_id":{"S":"acme"}}},"eventSourceARN":"arn"}]}`
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
			w.Header().Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:us-east-1:123456789012:function:archiver")
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
		"ARCHIVE_BUCKET=archive-bucket",
		"S3_ENDPOINT="+s3Srv.URL,
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
	require.Len(t, puts, 1, "the user deletion is not archived")
	for path, body := range puts {
		assert.Regexp(t, `^/archive-bucket/expired/tenant=acme/date=2026-10-22/100-[0-9a-f]{16}\.jsonl\.gz$`, path)
		zr, err := gzip.NewReader(bytes.NewReader(body))
		require.NoError(t, err)
		lines, err := io.ReadAll(zr)
		require.NoError(t, err)
		assert.Equal(t, `{"event_id":"e1","event_type":"user.created","payload":{"n":12345678901234567890123456789012345678,"s":"Zoë <&>"},"status":"delivered","timestamp":"2026-10-22T10:00:00.000000Z","retry_count":0,"metadata":{"source_ip":"192.0.2.1","api_version":"v1"}}`+"\n", string(lines))
	}
}
