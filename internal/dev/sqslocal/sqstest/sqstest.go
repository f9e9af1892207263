// Package sqstest runs the local SQS engine (internal/dev/sqslocal) for
// tests.
//
// One engine serves a whole test package; every test creates its own
// uniquely named queues, so tests never share messages and may run in
// parallel. Typical use:
//
//	var sqsEngine *sqstest.Engine
//
//	func TestMain(m *testing.M) { os.Exit(sqstest.Main(m, &sqsEngine)) }
//
//	func TestSomething(t *testing.T) {
//		url := sqsEngine.CreateQueue(t, map[string]string{"VisibilityTimeout": "1"})
//		// use sqsEngine.Client with url
//	}
//
// With TRIGGERS_SQS_ENDPOINT set, Main uses the SQS-compatible engine
// serving there instead of starting one (how another engine is checked
// against the conformance test).
package sqstest

import (
	"context"
	"flag"
	"fmt"
	"os"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/triggers-dev/triggers/internal/dev/sqslocal"
)

// EnvEndpoint is the base URL of an SQS-compatible engine that Main uses
// instead of starting one, such as http://127.0.0.1:4100.
const EnvEndpoint = "TRIGGERS_SQS_ENDPOINT"

// Engine is the running engine.
type Engine struct {
	// Endpoint is the base URL, such as http://127.0.0.1:41234.
	Endpoint string
	// Client is an SQS client for Endpoint.
	Client *sqs.Client

	proc *sqslocal.Process // nil for an engine from EnvEndpoint
}

var seq atomic.Int64

// Main starts the engine, stores it in *e, runs the tests and stops it.
// It returns the exit code for os.Exit. When the engine cannot start,
// Main prints why and returns 1 without running any test; when the run
// selects no tests (-run '^$'), it starts nothing and *e stays nil.
func Main(m *testing.M, e **Engine) int {
	if !flag.Parsed() {
		flag.Parse()
	}
	if f := flag.Lookup("test.run"); f != nil && f.Value.String() == "^$" {
		return m.Run()
	}
	if ep := os.Getenv(EnvEndpoint); ep != "" {
		*e = &Engine{Endpoint: ep, Client: sqslocal.NewClient(ep)}
		return m.Run()
	}
	ctx, cancel := context.WithTimeout(context.Background(), sqslocal.StartTimeout+time.Minute)
	p, err := sqslocal.Start(ctx, sqslocal.Options{})
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "sqstest: %v\n", err)
		return 1
	}
	*e = &Engine{Endpoint: p.Endpoint, Client: p.Client, proc: p}
	defer func() {
		if err := p.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "sqstest: %v\n", err)
		}
	}()
	return m.Run()
}

// Output returns what the engine printed so far; useful in failures.
func (e *Engine) Output() string {
	if e.proc == nil {
		return "(output of the engine at " + e.Endpoint + " is not captured)"
	}
	return e.proc.Output()
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// QueueName returns a fresh queue name derived from prefix (sanitized to
// the characters SQS accepts), unique within the process.
func QueueName(prefix string) string {
	p := unsafeChars.ReplaceAllString(prefix, "_")
	if len(p) > 60 {
		p = p[:60]
	}
	return fmt.Sprintf("%s-%d-%d", p, os.Getpid(), seq.Add(1))
}

// CreateQueue creates a uniquely named queue, named after the test, with
// attrs and returns its URL; it fails the test on error.
func (e *Engine) CreateQueue(t testing.TB, attrs map[string]string) string {
	t.Helper()
	out, err := e.Client.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(QueueName(t.Name())), Attributes: attrs})
	if err != nil {
		t.Fatalf("sqstest: create queue: %v", err)
	}
	return aws.ToString(out.QueueUrl)
}

// QueueARN returns the ARN of the queue at url; it fails the test on
// error.
func (e *Engine) QueueARN(t testing.TB, url string) string {
	t.Helper()
	out, err := e.Client.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatalf("sqstest: queue ARN of %s: %v", url, err)
	}
	return out.Attributes["QueueArn"]
}
