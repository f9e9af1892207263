package motoserver

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
)

// FaultClient is the HTTP client of an SDK client of the server (its
// HTTPClient option) that can answer the next calls of an operation with
// an error instead of forwarding them: S3's 503 SlowDown, which the SDK
// retries, as an S3 outage looks from a client. Operations are named as
// the SDK names them: the x-id query parameter of S3 ("PutObject") or the
// X-Amz-Target suffix of JSON protocols ("SendMessage").
type FaultClient struct {
	// Next sends the requests that are not failed. Default:
	// http.DefaultClient.
	Next aws.HTTPClient

	mu     sync.Mutex
	fail   map[string]int
	failed map[string]int
	seen   map[string]int
}

// Fail makes the next n calls of op fail with 503 SlowDown; a negative n
// fails every call until Recover.
func (c *FaultClient) Fail(op string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fail == nil {
		c.fail = map[string]int{}
	}
	c.fail[op] = n
}

// Recover stops failing op.
func (c *FaultClient) Recover(op string) { c.Fail(op, 0) }

// Failed returns how many calls of op were failed so far.
func (c *FaultClient) Failed(op string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.failed[op]
}

// Seen returns how many calls of op were made so far, failed or not.
func (c *FaultClient) Seen(op string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen[op]
}

// Operation returns the operation of an SDK request: S3's x-id query
// parameter, else the X-Amz-Target suffix, else "<method> <path>".
func Operation(r *http.Request) string {
	if id := r.URL.Query().Get("x-id"); id != "" {
		return id
	}
	if t := r.Header.Get("X-Amz-Target"); t != "" {
		return t[strings.LastIndexByte(t, '.')+1:]
	}
	return r.Method + " " + r.URL.Path
}

// Do implements aws.HTTPClient.
func (c *FaultClient) Do(r *http.Request) (*http.Response, error) {
	op := Operation(r)
	c.mu.Lock()
	if c.seen == nil {
		c.seen, c.failed = map[string]int{}, map[string]int{}
	}
	c.seen[op]++
	fail := c.fail[op] != 0
	if c.fail[op] > 0 {
		c.fail[op]--
	}
	if fail {
		c.failed[op]++
	}
	c.mu.Unlock()
	if !fail {
		next := c.Next
		if next == nil {
			next = http.DefaultClient
		}
		return next.Do(r)
	}
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	body := `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message><RequestId>fault</RequestId></Error>`
	return &http.Response{
		Status:     "503 Slow Down",
		StatusCode: http.StatusServiceUnavailable,
		Proto:      "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"application/xml"}},
		Body:          io.NopCloser(bytes.NewReader([]byte(body))),
		ContentLength: int64(len(body)),
		Request:       r,
	}, nil
}

// FastRetryer is the SDK's standard retryer with maxAttempts attempts and
// backoff capped at 5 ms, so a test's outage costs milliseconds, not the
// seconds of production backoff.
func FastRetryer(maxAttempts int) func() aws.Retryer {
	return func() aws.Retryer {
		return retry.NewStandard(func(so *retry.StandardOptions) {
			so.MaxAttempts = maxAttempts
			so.MaxBackoff = 5 * time.Millisecond
		})
	}
}
