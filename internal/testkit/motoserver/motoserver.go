// Package motoserver runs moto's server (moto_server, moto 5.2.1 in the
// image's Python) for tests: a real S3- and SQS-compatible engine, started
// as a child process on a free loopback port and killed when the test
// ends, as internal/ddb/ddblocal runs DynamoDB Local.
//
//	srv := motoserver.ForTest(t)
//	s3c := srv.S3Client()          // path-style, static credentials
//	bucket := srv.CreateBucket(t)  // a fresh bucket per test
//
// FaultClient sits between an SDK client and the server and answers the
// next calls of an operation with an error, so a test can put the real SDK
// (its retries) and the code above it through an S3 or SQS outage.
package motoserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/triggers-dev/triggers/internal/ddb"
	"github.com/triggers-dev/triggers/internal/dev/syncio"
)

// Command is the executable Start runs, found on PATH.
const Command = "moto_server"

// StartTimeout bounds how long Start waits for the server to answer.
const StartTimeout = 60 * time.Second

// ErrNotInstalled is wrapped by Start's error when moto_server is not on
// PATH.
var ErrNotInstalled = errors.New("moto_server is not installed")

// Server is a running moto_server.
type Server struct {
	// Endpoint is the base URL, such as http://127.0.0.1:41234.
	Endpoint string

	cmd  *exec.Cmd
	out  *syncio.Buffer
	done chan struct{}
	once sync.Once
}

// Start starts moto_server on a free loopback port and waits until it
// answers. Stop it with Stop; on Linux it is also killed when this process
// dies.
func Start(ctx context.Context) (*Server, error) {
	bin, err := exec.LookPath(Command)
	if err != nil {
		return nil, fmt.Errorf("%w: %v: the image's Python has moto 5.2.1 (pip install 'moto[server]==5.2.1' elsewhere)", ErrNotInstalled, err)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "-H", "127.0.0.1", "-p", strconv.Itoa(port))
	out := &syncio.Buffer{Max: 1 << 20}
	cmd.Stdout, cmd.Stderr = out, out
	setProcAttr(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	s := &Server{Endpoint: "http://127.0.0.1:" + strconv.Itoa(port), cmd: cmd, out: out, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(s.done)
	}()
	if err := s.waitReady(ctx); err != nil {
		_ = s.Stop()
		return nil, err
	}
	return s, nil
}

// ForTest starts a server for t and stops it when t ends; it fails t when
// the server cannot start.
func ForTest(t testing.TB) *Server {
	t.Helper()
	s, err := Start(context.Background())
	if err != nil {
		t.Fatalf("motoserver: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("motoserver: %v", err)
		}
	})
	return s
}

func (s *Server) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	var lastErr error
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.Endpoint+"/moto-api/", nil)
		res, err := client.Do(req)
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("status %d", res.StatusCode)
		}
		lastErr = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("moto_server did not answer on %s within %s: %w (output: %s)", s.Endpoint, StartTimeout, lastErr, strings.TrimSpace(s.out.String()))
		case <-s.done:
			return fmt.Errorf("moto_server exited before answering: %s", strings.TrimSpace(s.out.String()))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Stop kills the server and waits for it to exit. Calling it again is a
// no-op.
func (s *Server) Stop() error {
	var err error
	s.once.Do(func() {
		if s.cmd.Process == nil {
			return
		}
		terminate(s.cmd)
		select {
		case <-s.done:
			return
		case <-time.After(5 * time.Second):
		}
		killProcess(s.cmd)
		select {
		case <-s.done:
		case <-time.After(30 * time.Second):
			err = fmt.Errorf("moto_server (pid %d) did not exit within 30s of SIGKILL", s.cmd.Process.Pid)
		}
	})
	return err
}

// Output returns what the server printed so far; useful in failures.
func (s *Server) Output() string { return s.out.String() }

// Config is the AWS configuration of a client of the server: static
// credentials, region us-east-1, the module's transport (ddb.LocalConfig).
func (s *Server) Config() aws.Config { return ddb.LocalConfig(ddb.Options{}) }

// S3Client returns a path-style S3 client of the server; optFns adjust
// its options (a FaultClient as HTTPClient, say).
func (s *Server) S3Client(optFns ...func(*s3.Options)) *s3.Client {
	return s3.NewFromConfig(s.Config(), append([]func(*s3.Options){func(o *s3.Options) {
		o.BaseEndpoint = aws.String(s.Endpoint)
		o.UsePathStyle = true
	}}, optFns...)...)
}

// SQSClient returns an SQS client of the server; optFns adjust its
// options.
func (s *Server) SQSClient(optFns ...func(*sqs.Options)) *sqs.Client {
	return sqs.NewFromConfig(s.Config(), append([]func(*sqs.Options){func(o *sqs.Options) {
		o.BaseEndpoint = aws.String(s.Endpoint)
	}}, optFns...)...)
}

var seq atomic.Int64

// CreateBucket creates a bucket with a name unique to this process and
// returns it.
func (s *Server) CreateBucket(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("test-%d-%d", time.Now().UnixNano()%1e9, seq.Add(1))
	if _, err := s.S3Client().CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("create bucket %s: %v", name, err)
	}
	return name
}

// CreateQueue creates a standard queue with a name unique to this process
// and returns its URL.
func (s *Server) CreateQueue(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("test-%d-%d", time.Now().UnixNano()%1e9, seq.Add(1))
	out, err := s.SQSClient().CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatalf("create queue %s: %v", name, err)
	}
	return aws.ToString(out.QueueUrl)
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
