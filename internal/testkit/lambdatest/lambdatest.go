// Package lambdatest runs a Lambda main as deployed, for its package's
// tests: built once with the deployed tags, started as a process against a
// fake Lambda Runtime API that serves one invocation, in an environment
// without the caller's AWS settings. Test-only.
package lambdatest

import (
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

	"github.com/triggers-dev/triggers/internal/syncio"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	buildOut  []byte
)

// Build builds the main package in the working directory once per test
// binary, as deployed (-tags lambda.norpc, CGO off), for the host.
func Build(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "lambdatest-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "bootstrap")
		cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", binPath, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		buildOut, buildErr = cmd.CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("go build: %v\n%s", buildErr, buildOut)
	}
	return binPath
}

// Main is a TestMain that removes the built binary after the tests.
func Main(m interface{ Run() int }) {
	code := m.Run()
	if binPath != "" {
		_ = os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// IsolatedEnv is an environment without the caller's AWS settings (no
// profile, no shared files, no instance metadata), plus extra.
func IsolatedEnv(t testing.TB, extra ...string) []string {
	dir := t.TempDir()
	return append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + dir,
		"AWS_CONFIG_FILE=" + filepath.Join(dir, "config"),
		"AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(dir, "credentials"),
		"AWS_EC2_METADATA_DISABLED=true",
	}, extra...)
}

// Invoke starts bin with env (IsolatedEnv is added, and
// AWS_LAMBDA_RUNTIME_API pointing at a fake Runtime API), hands it event
// as its one invocation (request id "req-1") and returns the path the
// function posted its answer to and the answer's body. The process is
// killed when the test ends.
func Invoke(t testing.TB, bin, event string, env ...string) (path, body string) {
	t.Helper()
	responses := make(chan string, 1)
	var mu sync.Mutex
	served := false
	runtime := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
			w.Header().Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:us-east-1:123456789012:function:test")
			_, _ = io.WriteString(w, event)
		case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/2018-06-01/runtime/"):
			b, _ := io.ReadAll(r.Body)
			w.WriteHeader(http.StatusAccepted)
			responses <- r.URL.Path + " " + string(b)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(runtime.Close)

	cmd := exec.Command(bin)
	cmd.Env = IsolatedEnv(t, append([]string{
		"AWS_LAMBDA_RUNTIME_API=" + strings.TrimPrefix(runtime.URL, "http://"),
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test",
	}, env...)...)
	var stdout, stderr syncio.Buffer // read while the process runs
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	select {
	case got := <-responses:
		path, body, _ = strings.Cut(got, " ")
		if path != "/2018-06-01/runtime/invocation/req-1/response" {
			t.Fatalf("the function answered %s %s; stderr %s", path, body, stderr.String())
		}
		return path, body
	case <-time.After(60 * time.Second):
		t.Fatalf("no answer from the function; stdout %s; stderr %s", stdout.String(), stderr.String())
	}
	return "", ""
}

// StartFails builds the main package, starts it in IsolatedEnv plus env,
// fails the test unless it exits with status 1 before serving anything,
// and returns what it wrote to stderr: a function must refuse a bad
// configuration at start, naming it.
func StartFails(t testing.TB, env ...string) string {
	t.Helper()
	cmd := exec.Command(Build(t))
	cmd.Env = IsolatedEnv(t, env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	exit, ok := err.(*exec.ExitError)
	if !ok || exit.ExitCode() != 1 {
		t.Fatalf("the function did not exit with status 1 on a bad configuration: %v\nstderr: %s", err, stderr.String())
	}
	return stderr.String()
}
