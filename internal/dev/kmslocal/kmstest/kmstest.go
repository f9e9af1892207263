// Package kmstest runs local-kms (package kmslocal) for tests: one process
// per test package, started by the first test that needs it and stopped
// by the package's TestMain. Typical use:
//
//	func TestMain(m *testing.M) {
//		code := m.Run()
//		kmstest.Stop()
//		os.Exit(code)
//	}
//
//	func TestSomething(t *testing.T) {
//		kms := kmstest.Shared(t)
//		key := kms.Key(t) // a new key of its own
//		// use kms.Client with key
//	}
//
// The binary is built from tools/go.mod on first use (kmslocal.Binary), so
// a fresh machine needs only Go and the module proxy.
package kmstest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/triggers-dev/triggers/internal/dev/kmslocal"
)

// Local is a running local-kms.
type Local struct {
	*kmslocal.Process
}

var (
	mu      sync.Mutex
	shared  *Local
	started error
	keySeq  atomic.Int64
)

// Shared returns the test package's local-kms, starting it on first use.
// It fails the test when local-kms cannot start.
func Shared(t testing.TB) *Local {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if shared == nil && started == nil {
		p, err := kmslocal.Start(context.Background(), kmslocal.Options{Install: true})
		if err != nil {
			started = err
		} else {
			shared = &Local{p}
		}
	}
	if started != nil {
		t.Fatalf("kmstest: %v", started)
	}
	return shared
}

// Start starts a local-kms of the test's own (to stop or pause it without
// disturbing other tests); it is stopped when the test ends.
func Start(t testing.TB) *Local {
	t.Helper()
	p, err := kmslocal.Start(context.Background(), kmslocal.Options{Install: true})
	if err != nil {
		t.Fatalf("kmstest: %v", err)
	}
	t.Cleanup(func() {
		if err := p.Stop(); err != nil {
			t.Errorf("kmstest: %v", err)
		}
	})
	return &Local{p}
}

// Stop stops the shared local-kms, if one was started. Call it from
// TestMain after m.Run.
func Stop() {
	mu.Lock()
	defer mu.Unlock()
	if shared != nil {
		if err := shared.Process.Stop(); err != nil {
			fmt.Printf("kmstest: %v\n", err)
		}
		shared = nil
	}
}

// Key creates a new symmetric key and returns its ARN, so that tests never
// share keys. It fails the test on error.
func (l *Local) Key(t testing.TB) string {
	t.Helper()
	out, err := l.Client.CreateKey(context.Background(), &kms.CreateKeyInput{
		Description: aws.String(fmt.Sprintf("%s #%d", t.Name(), keySeq.Add(1))),
	})
	if err != nil {
		t.Fatalf("kmstest: create a key: %v", err)
	}
	return aws.ToString(out.KeyMetadata.Arn)
}

// Client returns a KMS client for endpoint that tries each call once, so
// a test of an engine that is down fails fast.
func Client(endpoint string) *kms.Client {
	return kmslocal.NewClient(endpoint, func(o *kms.Options) { o.RetryMaxAttempts = 1 })
}
