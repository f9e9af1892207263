// Package sqslocal starts and stops the SQS-compatible engine that tests
// (internal/dev/sqsesm, internal/dev/devenv, cmd/triggers-dev) and local
// development (`make dev`) run the queues on: moto_server, moto's
// stand-alone server, as a process on a free loopback port.
//
// moto 5.2.1 is preinstalled in the machines' Python (moto_server on
// PATH). It speaks the AWS JSON protocol (x-amz-json-1.0) the SQS client
// of aws-sdk-go-v2 uses, keeps its queues in memory, and implements the
// queue semantics webhook delivery relies on: visibility timeouts, delays,
// receive counts and the redrive to a dead-letter queue after
// maxReceiveCount. goaws v0.4.5, the Go alternative, only speaks the older
// query protocol, so our SDK cannot talk to it (docs/testing.md, "SQS").
//
// Start-up problems are reported as errors wrapping ErrNotInstalled or
// ErrPortInUse, each with a message that says what to do.
package sqslocal

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
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/triggers-dev/triggers/internal/ddb"
	"github.com/triggers-dev/triggers/internal/dev/syncio"
)

// StartTimeout bounds how long Start waits for the engine to answer.
const StartTimeout = 60 * time.Second

// Account and region of the queues moto makes: its default account, and
// the region of the local clients (ddb.LocalRegion).
const (
	AccountID = "123456789012"
	Region    = ddb.LocalRegion
)

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
}

// Process is a running engine.
type Process struct {
	// Endpoint is the base URL, such as http://127.0.0.1:41234.
	Endpoint string
	// Port is the port it listens on.
	Port int
	// Client is an SQS client for Endpoint (NewClient).
	Client *sqs.Client

	cmd  *exec.Cmd
	out  *syncio.Buffer
	done chan struct{}
	once sync.Once
}

// Start starts the engine and waits until it answers. Stop it with Stop.
// On Linux the process is also killed when this process dies, so nothing
// is left behind.
func Start(ctx context.Context, o Options) (*Process, error) {
	command, err := resolveCommand(o.Command)
	if err != nil {
		return nil, err
	}
	port := o.Port
	if port == 0 {
		if port, err = freePort(); err != nil {
			return nil, err
		}
	} else if err := checkPort(port); err != nil {
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
		return nil, fmt.Errorf("start the SQS engine (%s): %w", strings.Join(command, " "), err)
	}
	p := &Process{
		Endpoint: "http://127.0.0.1:" + strconv.Itoa(port),
		Port:     port,
		cmd:      cmd,
		out:      out,
		done:     make(chan struct{}),
	}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	p.Client = NewClient(p.Endpoint)
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
	return nil, fmt.Errorf("%w: the local SQS engine is moto's server (moto 5.2.1): install it with pip install 'moto[server]==5.2.1', or point make dev at an SQS-compatible engine you run (-sqs-endpoint-url)", ErrNotInstalled)
}

// AttemptTimeout bounds one HTTP attempt of NewClient's clients: longer
// than the longest ReceiveMessage long poll (20 s).
const AttemptTimeout = 20*time.Second + ddb.LocalAttemptTimeout

// NewClient returns an SQS client for the engine at endpoint: the local
// configuration of the DynamoDB clients (ddb.LocalConfig: static
// credentials, region Region, bounded attempts, each up to
// AttemptTimeout) with that endpoint. The SDK's MD5 checks of message
// bodies and attributes stay on.
func NewClient(endpoint string, optFns ...func(*sqs.Options)) *sqs.Client {
	return sqs.NewFromConfig(ddb.LocalConfig(ddb.Options{AttemptTimeout: AttemptTimeout}), append([]func(*sqs.Options){func(o *sqs.Options) {
		o.BaseEndpoint = aws.String(endpoint)
	}}, optFns...)...)
}

func (p *Process) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()
	var lastErr error
	for {
		select {
		case <-p.done:
			return fmt.Errorf("the SQS engine exited before answering: %s", strings.TrimSpace(p.out.String()))
		default:
		}
		actx, acancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := p.Client.ListQueues(actx, &sqs.ListQueuesInput{}, func(o *sqs.Options) {
			o.RetryMaxAttempts = 1
		})
		acancel()
		if err == nil {
			return nil
		}
		lastErr = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("the SQS engine did not answer on %s within %s: %w (output: %s)", p.Endpoint, StartTimeout, lastErr, strings.TrimSpace(p.out.String()))
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
// SIGKILL after 5 seconds. Its queues are gone. Calling it again is a
// no-op.
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
			err = fmt.Errorf("the SQS engine (pid %d) did not exit within 30s of SIGKILL", p.cmd.Process.Pid)
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
func checkPort(port int) error {
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return fmt.Errorf("%w: the SQS engine cannot listen on 127.0.0.1:%d (%v): stop what uses it, or choose another port", ErrPortInUse, port, err)
	}
	return ln.Close()
}
