package ddbtest

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/triggers-dev/triggers/internal/ddb"
)

// FaultProxy is an HTTP proxy in front of a DynamoDB endpoint that can lose
// responses and stall, so tests can put the real SDK client (its retries,
// its timeouts) through the network failures DynamoDB clients meet:
//
//	p := ddbtest.NewFaultProxy(t, db.Endpoint)
//	p.LoseResponse("PutItem", 1) // the next PutItem succeeds, its answer is lost
//	client := ... with BaseEndpoint p.URL
type FaultProxy struct {
	// URL is the proxy's base URL, to use as the client's endpoint.
	URL string

	upstream string
	srv      *httptest.Server

	mu      sync.Mutex
	lose    map[string]int
	skip    map[string]int    // calls answered before the next lost one
	then    map[string]func() // run once a lost call took effect
	stalled chan struct{}     // non-nil while stalled; closed to release
	seen    map[string]int
	late    map[string]chan struct{} // the next call of an operation to hold (LateCall)
	landed  chan struct{}            // closed once the held call took effect
	// closing is closed as the test ends: a call LateCall still holds
	// then is dropped, not landed.
	closing chan struct{}
}

// NewFaultProxy starts a proxy to upstream (a DynamoDB endpoint URL); it
// stops with the test.
func NewFaultProxy(t testing.TB, upstream string) *FaultProxy {
	t.Helper()
	p := &FaultProxy{upstream: strings.TrimSuffix(upstream, "/"), lose: map[string]int{}, skip: map[string]int{}, then: map[string]func(){}, seen: map[string]int{},
		late: map[string]chan struct{}{}, closing: make(chan struct{})}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	p.URL = p.srv.URL
	t.Cleanup(func() {
		// A test that ended between LateCall and its land (a failed
		// require) left the held call's handler waiting: Close waits
		// for handlers, and the test hung until the package's timeout.
		close(p.closing)
		p.Release()
		p.srv.CloseClientConnections()
		p.srv.Close()
	})
	return p
}

// LoseResponse makes the next n calls of operation (the X-Amz-Target
// suffix, such as "PutItem") reach DynamoDB and take effect, but drops the
// connection instead of returning their responses.
func (p *FaultProxy) LoseResponse(operation string, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lose[operation] += n
}

// LoseResponseAfter is LoseResponse for one call of operation: the one
// after the next n, which are answered. It sets the count of calls to
// answer first (it does not add to one set before), and a loss queued
// before for operation waits for those calls as well.
func (p *FaultProxy) LoseResponseAfter(operation string, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lose[operation]++
	p.skip[operation] = n
}

// LoseResponseThen is LoseResponse for the next call of operation, and
// runs then after that call took effect and before its connection is
// dropped: what another writer does while the client still waits for its
// answer (before the SDK's retry, or the caller's next step).
func (p *FaultProxy) LoseResponseThen(operation string, then func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lose[operation]++
	p.then[operation] = then
}

// LoseResponseAfterThen is LoseResponseAfter and LoseResponseThen at
// once: the call of operation after the next n is lost, and then runs
// once it took effect.
func (p *FaultProxy) LoseResponseAfterThen(operation string, n int, then func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lose[operation]++
	p.skip[operation] = n
	p.then[operation] = then
}

// Stall holds every request from now on without forwarding it, as a
// DynamoDB that accepts connections and never answers, until Release.
func (p *FaultProxy) Stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stalled == nil {
		p.stalled = make(chan struct{})
	}
}

// Release forwards the held requests and stops stalling.
func (p *FaultProxy) Release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stalled != nil {
		close(p.stalled)
		p.stalled = nil
	}
}

// LateCall holds the next call of operation without forwarding it (the
// client's attempt times out, and the SDK sends the call again, which
// goes through), until land is called: the held call then reaches
// DynamoDB and takes effect, late, after whatever happened meanwhile
// (a request delayed on the network past its retry). land returns once
// it has taken effect; its answer goes nowhere. A call still held when
// the test ends is dropped.
func (p *FaultProxy) LateCall(operation string) (land func()) {
	release, landed := make(chan struct{}), make(chan struct{})
	p.mu.Lock()
	p.late[operation] = release
	p.landed = landed
	p.mu.Unlock()
	return func() {
		close(release)
		<-landed
	}
}

// Calls returns how many calls of operation the proxy has received.
func (p *FaultProxy) Calls(operation string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen[operation]
}

func (p *FaultProxy) serve(w http.ResponseWriter, r *http.Request) {
	target := r.Header.Get("X-Amz-Target")
	op := target[strings.LastIndexByte(target, '.')+1:]
	p.mu.Lock()
	p.seen[op]++
	stalled := p.stalled
	lose := p.lose[op] > 0 && p.skip[op] == 0
	if p.lose[op] > 0 && p.skip[op] > 0 {
		p.skip[op]--
	}
	var then func()
	if lose {
		p.lose[op]--
		then = p.then[op]
		delete(p.then, op)
	}
	release, landed := p.late[op], p.landed
	delete(p.late, op)
	p.mu.Unlock()
	if release != nil {
		p.land(r, release, landed)
		return
	}
	if stalled != nil {
		select {
		case <-stalled:
		case <-r.Context().Done():
			return
		}
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, p.upstream+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	req.Header = r.Header.Clone()
	res, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	if lose {
		// DynamoDB has done the work; the client never hears of it.
		if then != nil {
			then()
		}
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
				return
			}
		}
		panic(http.ErrAbortHandler)
	}
	for k, vs := range res.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(res.StatusCode)
	_, _ = w.Write(out)
}

// land forwards r, a call LateCall holds, once release is closed, and
// closes landed when it has taken effect. The client has given up on
// it: its context is not the request's.
func (p *FaultProxy) land(r *http.Request, release, landed chan struct{}) {
	defer close(landed)
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	header := r.Header.Clone()
	uri := r.URL.RequestURI()
	select {
	case <-release:
	case <-p.closing:
		return
	}
	req, err := http.NewRequest(r.Method, p.upstream+uri, bytes.NewReader(body))
	if err != nil {
		return
	}
	req.Header = header
	if res, err := http.DefaultTransport.RoundTrip(req); err == nil {
		_, _ = io.Copy(io.Discard, res.Body)
		_ = res.Body.Close()
	}
}

// Faulty returns a FaultProxy in front of l and a client through it with
// the transport the Lambda functions use (ddb.Options.Transport with
// ddb.DefaultAttemptTimeout: the SDK's retries, the per-attempt timeout),
// so that a test sees what production code does when DynamoDB loses
// responses or hangs. Its credentials are LocalConfig's, whatever the
// environment holds.
func (l *Local) Faulty(t testing.TB) (*FaultProxy, *dynamodb.Client) {
	t.Helper()
	proxy := NewFaultProxy(t, l.Endpoint)
	o := ddb.Options{EndpointURL: proxy.URL, AttemptTimeout: ddb.DefaultAttemptTimeout}
	return proxy, ddb.ClientFromConfig(ddb.LocalConfig(o), o)
}
