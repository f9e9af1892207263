// Package motolocal starts and stops moto_server, moto's stand-alone
// server, as a process on a free loopback port: the local SQS engine of
// `make dev` (internal/dev/devenv) and the S3 and SQS engine of the tests
// (through motolocal/mototest), as internal/ddb/ddblocal runs DynamoDB
// Local.
//
// moto 5.2.1 is preinstalled in the machines' Python (moto_server on
// PATH). It keeps everything in memory, speaks the AWS JSON protocol
// (x-amz-json-1.0) the SQS client of aws-sdk-go-v2 uses and implements the
// queue semantics webhook delivery relies on: visibility timeouts, delays,
// receive counts and the redrive to a dead-letter queue after
// maxReceiveCount (conformance_test.go). goaws v0.4.5, the Go alternative,
// only speaks the older query protocol, so our SDK cannot talk to it
// (docs/testing.md, "SQS engine"). Its S3 takes path-style requests
// (NewS3Client).
//
// Start-up problems are reported as errors wrapping ErrNotInstalled or
// ErrPortInUse, each with a message that says what to do.
package motolocal

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/triggers-dev/triggers/internal/ddb"
	"github.com/triggers-dev/triggers/internal/syncio"
)

// StartTimeout bounds how long Start waits for the engine to answer.
const StartTimeout = 60 * time.Second

// Start-up failures; test with errors.Is.
var (
	ErrNotInstalled = errors.New("moto_server not found")
	ErrPortInUse    = errors.New("port in use")
)

// Options configure Start.
type Options struct {
	// Port is the loopback port to listen on. Default: a free port.
	Port int
	// Command is the engine's command line, to which Start appends
	// -H 127.0.0.1 -p PORT. Default: moto_server on PATH, or
	// `python3 -m moto.server` when only the module is installed.
	Command []string
	// Name names the engine in error messages, after the role it plays
	// for the caller ("the SQS engine" in make dev). Default: "moto_server".
	Name string
}

// Process is a running engine.
type Process struct {
	// Endpoint is the base URL, such as http://127.0.0.1:41234.
	Endpoint string
	// Port is the port it listens on.
	Port int

	name string
	cmd  *exec.Cmd
	out  *syncio.Buffer
	done chan struct{}
	once sync.Once
}

// Start starts the engine and waits until it answers. Stop it with Stop.
// On Linux the process is also killed when this process dies, so nothing
// is left behind.
func Start(ctx context.Context, o Options) (*Process, error) {
	name := o.Name
	if name == "" {
		name = "moto_server"
	}
	command, err := resolveCommand(o.Command)
	if err != nil {
		return nil, err
	}
	port := o.Port
	if port == 0 {
		if port, err = freePort(); err != nil {
			return nil, err
		}
	} else if err := checkPort(name, port); err != nil {
		return nil, err
	}
	args := append(append([]string{}, command[1:]...), "-H", "127.0.0.1", "-p", strconv.Itoa(port))
	cmd := exec.Command(command[0], args...)
	// Unbuffered, so the output captured for failures is complete.
	cmd.Env = append(os.Environ(), "PYTHONUNBUFFERED=1")
	out := &syncio.Buffer{Max: 1 << 20}
	cmd.Stdout = out
	cmd.Stderr = out
	setProcAttr(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s (%s): %w", name, strings.Join(command, " "), err)
	}
	p := &Process{
		Endpoint: "http://127.0.0.1:" + strconv.Itoa(port),
		Port:     port,
		name:     name,
		cmd:      cmd,
		out:      out,
		done:     make(chan struct{}),
	}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	if err := p.waitReady(ctx); err != nil {
		_ = p.Stop()
		return nil, err
	}
	return p, nil
}

// resolveCommand returns the command line to run, its program looked up.
func resolveCommand(command []string) ([]string, error) {
	if len(command) > 0 {
		path, err := exec.LookPath(command[0])
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrNotInstalled, command[0], err)
		}
		return append([]string{path}, command[1:]...), nil
	}
	if path, err := exec.LookPath("moto_server"); err == nil {
		return []string{path}, nil
	}
	if py, err := exec.LookPath("python3"); err == nil {
		if exec.Command(py, "-c", "import moto.server").Run() == nil {
			return []string{py, "-m", "moto.server"}, nil
		}
	}
	return nil, fmt.Errorf("%w: the local engine is moto's server (moto 5.2.1): install it with pip install 'moto[server]==5.2.1'", ErrNotInstalled)
}

// MaxWaitTime is the longest long poll SQS allows (ReceiveMessage's
// WaitTimeSeconds of 20).
const MaxWaitTime = 20 * time.Second

// SQSAttemptTimeout bounds one HTTP attempt of NewSQSClient's clients:
// the longest long poll (MaxWaitTime) plus the time any other local call
// may take (ddb.LocalAttemptTimeout), so that no wait a receive may ask
// for is cut short and retried.
const SQSAttemptTimeout = MaxWaitTime + ddb.LocalAttemptTimeout

// NewSQSClient returns an SQS client for the engine at endpoint: the
// local configuration of the DynamoDB clients (ddb.LocalConfig: static
// credentials, region ddb.LocalRegion, bounded attempts, each up to
// SQSAttemptTimeout) with that endpoint; optFns adjust its options. The
// SDK's MD5 checks of message bodies and attributes stay on.
func NewSQSClient(endpoint string, optFns ...func(*sqs.Options)) *sqs.Client {
	return sqs.NewFromConfig(ddb.LocalConfig(ddb.Options{AttemptTimeout: SQSAttemptTimeout}), append([]func(*sqs.Options){func(o *sqs.Options) {
		o.BaseEndpoint = aws.String(endpoint)
	}}, optFns...)...)
}

// NewS3Client returns a path-style S3 client for the engine at endpoint
// (ddb.LocalConfig: static credentials, region ddb.LocalRegion, bounded
// attempts, each up to ddb.LocalAttemptTimeout); optFns adjust its
// options.
func NewS3Client(endpoint string, optFns ...func(*s3.Options)) *s3.Client {
	return s3.NewFromConfig(ddb.LocalConfig(ddb.Options{}), append([]func(*s3.Options){func(o *s3.Options) {
		o.BaseEndpoint = aws.String(endpoint)
		o.UsePathStyle = true
	}}, optFns...)...)
}

// SQSClient returns an SQS client of the engine (NewSQSClient).
func (p *Process) SQSClient(optFns ...func(*sqs.Options)) *sqs.Client {
	return NewSQSClient(p.Endpoint, optFns...)
}

// S3Client returns a path-style S3 client of the engine (NewS3Client).
func (p *Process) S3Client(optFns ...func(*s3.Options)) *s3.Client {
	return NewS3Client(p.Endpoint, optFns...)
}

// waitReady polls until an SQS call succeeds, the process exits or
// StartTimeout passes.
func (p *Process) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()
	client := p.SQSClient(func(o *sqs.Options) { o.RetryMaxAttempts = 1 })
	var lastErr error
	for {
		select {
		case <-p.done:
			return fmt.Errorf("%s exited before answering: %s", p.name, strings.TrimSpace(p.out.String()))
		default:
		}
		actx, acancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := client.ListQueues(actx, &sqs.ListQueuesInput{})
		acancel()
		if err == nil {
			return nil
		}
		lastErr = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s did not answer on %s within %s: %w (output: %s)", p.name, p.Endpoint, StartTimeout, lastErr, strings.TrimSpace(p.out.String()))
		case <-p.done:
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Pid returns the engine's process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Output returns what the engine printed so far (its first MiB); useful in
// failures.
func (p *Process) Output() string { return p.out.String() }

// Stop stops the engine and waits for it to exit: SIGTERM first, then
// SIGKILL after 5 seconds. Its queues and buckets are gone. Calling it
// again is a no-op.
func (p *Process) Stop() error {
	var err error
	p.once.Do(func() {
		if p.cmd.Process == nil {
			return
		}
		terminate(p.cmd)
		select {
		case <-p.done:
			return
		case <-time.After(5 * time.Second):
		}
		killProcess(p.cmd)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			err = fmt.Errorf("%s (pid %d) did not exit within 30s of SIGKILL", p.name, p.cmd.Process.Pid)
		}
	})
	return err
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// checkPort fails with ErrPortInUse when port cannot be bound on loopback.
func checkPort(name string, port int) error {
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return fmt.Errorf("%w: %s cannot listen on 127.0.0.1:%d (%v): stop what uses it, or choose another port", ErrPortInUse, name, port, err)
	}
	return ln.Close()
}
