// Package mototest runs moto_server (internal/dev/motolocal) for tests: a
// real SQS and S3 engine.
//
// One engine serves a whole test package; every test creates its own
// uniquely named queues and buckets, so tests never share messages or
// objects and may run in parallel. Typical use:
//
//	var moto *mototest.Engine
//
//	func TestMain(m *testing.M) { os.Exit(mototest.Main(m, &moto)) }
//
//	func TestSomething(t *testing.T) {
//		url := moto.CreateQueue(t, map[string]string{"VisibilityTimeout": "1"})
//		bucket := moto.CreateBucket(t)
//		// use moto.SQS with url, moto.S3 with bucket
//	}
//
// A package that also runs DynamoDB Local nests the two:
//
//	func TestMain(m *testing.M) {
//		os.Exit(mototest.Main(mototest.RunFunc(func() int { return ddbtest.Main(m, &db) }), &moto))
//	}
//
// With TRIGGERS_MOTO_ENDPOINT set, Main uses the engine serving there
// instead of starting one (how another SQS-compatible engine is checked
// against motolocal's conformance test).
//
// FaultClient sits between an SDK client and the engine and answers the
// next calls of an operation with an error, so a test can put the real SDK
// (its retries) and the code above it through an S3 or SQS outage.
package mototest

import (
	"context"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/triggers-dev/triggers/internal/dev/motolocal"
)

// EnvEndpoint is the base URL of an engine that Main uses instead of
// starting moto_server, such as http://127.0.0.1:4100. Tests that use S3
// need an engine that also serves S3.
const EnvEndpoint = "TRIGGERS_MOTO_ENDPOINT"

// Engine is the running engine.
type Engine struct {
	// Endpoint is the base URL, such as http://127.0.0.1:41234.
	Endpoint string
	// SQS is an SQS client for Endpoint (motolocal.NewSQSClient).
	SQS *sqs.Client
	// S3 is a path-style S3 client for Endpoint (motolocal.NewS3Client).
	S3 *s3.Client

	proc *motolocal.Process // nil for an engine from EnvEndpoint
}

// RunFunc adapts a function to the argument of Main, so that Main can wrap
// another harness's TestMain (ddbtest.Main, say) or be wrapped by one
// (lambdatest.Main).
type RunFunc func() int

// Run calls f.
func (f RunFunc) Run() int { return f() }

// Main starts the engine, stores it in *e, runs m (a *testing.M, or a
// RunFunc) and stops the engine. It returns the exit code for os.Exit.
// When the engine cannot start, Main prints why and returns 1 without
// running any test; when the run selects no tests (-run '^$'), it starts
// nothing and *e stays nil.
func Main(m interface{ Run() int }, e **Engine) int {
	if !flag.Parsed() {
		flag.Parse()
	}
	if f := flag.Lookup("test.run"); f != nil && f.Value.String() == "^$" {
		return m.Run()
	}
	if ep := os.Getenv(EnvEndpoint); ep != "" {
		*e = &Engine{Endpoint: ep, SQS: motolocal.NewSQSClient(ep), S3: motolocal.NewS3Client(ep)}
		return m.Run()
	}
	ctx, cancel := context.WithTimeout(context.Background(), motolocal.StartTimeout+time.Minute)
	p, err := motolocal.Start(ctx, motolocal.Options{})
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "mototest: %v\n", err)
		return 1
	}
	*e = &Engine{Endpoint: p.Endpoint, SQS: p.SQSClient(), S3: p.S3Client(), proc: p}
	defer func() {
		if err := p.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "mototest: %v\n", err)
		}
	}()
	return m.Run()
}

// SQSClient returns a new SQS client of the engine; optFns adjust its
// options (a FaultClient as HTTPClient, say).
func (e *Engine) SQSClient(optFns ...func(*sqs.Options)) *sqs.Client {
	return motolocal.NewSQSClient(e.Endpoint, optFns...)
}

// S3Client returns a new path-style S3 client of the engine; optFns adjust
// its options (a FaultClient as HTTPClient, say).
func (e *Engine) S3Client(optFns ...func(*s3.Options)) *s3.Client {
	return motolocal.NewS3Client(e.Endpoint, optFns...)
}

// Output returns what the engine printed so far; useful in failures.
func (e *Engine) Output() string {
	if e.proc == nil {
		return "(output of the engine at " + e.Endpoint + " is not captured)"
	}
	return e.proc.Output()
}

var (
	seq          atomic.Int64
	unsafeQueue  = regexp.MustCompile(`[^A-Za-z0-9_-]+`)
	unsafeBucket = regexp.MustCompile(`[^a-z0-9]+`)
)

// QueueName returns a fresh queue name derived from prefix (sanitized to
// the characters SQS accepts), unique among the processes that use the
// engine at the same time.
func QueueName(prefix string) string {
	return unique(unsafeQueue.ReplaceAllString(prefix, "_"), 60) // of 80
}

// BucketName returns a fresh bucket name derived from prefix (lowercased,
// sanitized to the characters S3 accepts), unique among the processes that
// use the engine at the same time.
func BucketName(prefix string) string {
	p := strings.Trim(unsafeBucket.ReplaceAllString(strings.ToLower(prefix), "-"), "-")
	if p == "" {
		p = "b"
	}
	return unique(p, 40) // of 63
}

// unique appends the process id and a sequence number to prefix, cut to
// limit characters.
func unique(prefix string, limit int) string {
	if len(prefix) > limit {
		prefix = strings.TrimRight(prefix[:limit], "-")
	}
	return fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), seq.Add(1))
}

// CreateQueue creates a uniquely named standard queue, named after the
// test, with attrs and returns its URL; it fails the test on error.
func (e *Engine) CreateQueue(t testing.TB, attrs map[string]string) string {
	t.Helper()
	out, err := e.SQS.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(QueueName(t.Name())), Attributes: attrs})
	if err != nil {
		t.Fatalf("mototest: create queue: %v", err)
	}
	return aws.ToString(out.QueueUrl)
}

// QueueARN returns the ARN of the queue at url; it fails the test on
// error.
func (e *Engine) QueueARN(t testing.TB, url string) string {
	t.Helper()
	out, err := e.SQS.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatalf("mototest: queue ARN of %s: %v", url, err)
	}
	return out.Attributes["QueueArn"]
}

// CreateBucket creates a uniquely named bucket, named after the test, and
// returns its name; it fails the test on error.
func (e *Engine) CreateBucket(t testing.TB) string {
	t.Helper()
	name := BucketName(t.Name())
	if _, err := e.S3.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("mototest: create bucket %s: %v", name, err)
	}
	return name
}
