package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
)

// received is what a test server saw of one request.
type received struct {
	method string
	header http.Header
	body   []byte
}

// tlsServer starts an httptest TLS server with h and returns it with a
// delivery client that trusts it (AllowPrivate: it listens on loopback).
func tlsServer(t *testing.T, h http.Handler, timeout time.Duration) (*httptest.Server, *http.Client) {
	t.Helper()
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	client := NewHTTPClient(ClientOptions{
		Timeout:      timeout,
		AllowPrivate: true,
		TLSConfig:    srv.Client().Transport.(*http.Transport).TLSClientConfig,
	})
	return srv, client
}

// recordingHandler records each request and answers with status and body.
func recordingHandler(got chan<- received, status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- received{r.Method, r.Header.Clone(), b}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

var sendTime = time.Unix(1_700_000_000, 123_456_789)

func TestSendDelivered(t *testing.T) {
	got := make(chan received, 1)
	srv, client := tlsServer(t, recordingHandler(got, http.StatusOK, `{"ok":true}`), 0)
	oldS, newS := NewSecret(), NewSecret()
	body := []byte(`{"event_id":"e1","payload":{"name":"Zoë"}}`)

	a := Send(context.Background(), client, Request{URL: srv.URL + "/hooks?x=1", MsgID: "e1", Body: body, Secrets: []Secret{oldS, newS}, Now: sendTime})

	assert.Equal(t, Delivered, a.Outcome, "%+v", a)
	assert.Equal(t, http.StatusOK, a.StatusCode)
	assert.Equal(t, `{"ok":true}`, a.ResponseBody)
	assert.Empty(t, a.Error)
	assert.Equal(t, time.Unix(1_700_000_000, 0), a.Timestamp, "whole seconds")
	assert.Greater(t, a.Latency, time.Duration(0))

	r := <-got
	assert.Equal(t, http.MethodPost, r.method)
	assert.Equal(t, body, r.body)
	assert.Equal(t, "application/json", r.header.Get("Content-Type"))
	assert.Equal(t, UserAgent, r.header.Get("User-Agent"))
	assert.Equal(t, "e1", r.header.Get(HeaderID))
	assert.Equal(t, "1700000000", r.header.Get(HeaderTimestamp))
	assert.Len(t, strings.Split(r.header.Get(HeaderSignature), " "), 2)
	// What the receiver got verifies with either secret, at the sent time.
	for _, s := range []Secret{oldS, newS} {
		v := &Verifier{Secrets: []Secret{s}, Now: func() time.Time { return sendTime }}
		assert.NoError(t, v.Verify(r.header, r.body))
	}
	v := &Verifier{Secrets: []Secret{NewSecret()}, Now: func() time.Time { return sendTime }}
	assert.ErrorIs(t, v.Verify(r.header, r.body), ErrSignatureMismatch)
}

func TestSendStatuses(t *testing.T) {
	tests := []struct {
		status  int
		body    string
		outcome Outcome
		errHas  string
	}{
		{200, "ok", Delivered, ""},
		{201, "", Delivered, ""},
		{204, "", Delivered, ""},
		{299, "odd but 2xx", Delivered, ""},
		{410, "unsubscribed", Gone, ""},
		{400, "bad", Failed, "status 400 Bad Request"},
		{404, "nope", Failed, "status 404 Not Found"},
		{429, "slow down", Failed, "status 429 Too Many Requests"},
		{500, "boom", Failed, "status 500 Internal Server Error"},
		{503, "", Failed, "status 503 Service Unavailable"},
		{304, "", Failed, "redirect 304 Not Modified not followed"},
		{300, "", Failed, "redirect 300 Multiple Choices not followed"},
		{399, "", Failed, "redirect 399  not followed"},
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.status), func(t *testing.T) {
			got := make(chan received, 1)
			srv, client := tlsServer(t, recordingHandler(got, tt.status, tt.body), 0)
			a := Send(context.Background(), client, Request{URL: srv.URL, MsgID: "m1", Body: []byte("{}"), Secrets: []Secret{NewSecret()}, Now: sendTime})
			assert.Equal(t, tt.outcome, a.Outcome, "%+v", a)
			assert.Equal(t, tt.status, a.StatusCode)
			if tt.status != 204 && tt.status != 304 { // no body allowed
				assert.Equal(t, tt.body, a.ResponseBody)
			}
			if tt.errHas == "" {
				assert.Empty(t, a.Error)
			} else {
				assert.Contains(t, a.Error, tt.errHas)
			}
			<-got
		})
	}
}

func TestSendDoesNotFollowRedirects(t *testing.T) {
	var followed atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/old", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/new", http.StatusFound)
	})
	mux.HandleFunc("/perm", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/new", http.StatusPermanentRedirect)
	})
	mux.HandleFunc("/new", func(w http.ResponseWriter, r *http.Request) {
		followed.Add(1)
	})
	srv, client := tlsServer(t, mux, 0)
	for path, code := range map[string]int{"/old": 302, "/perm": 308} {
		a := Send(context.Background(), client, Request{URL: srv.URL + path, MsgID: "m1", Body: []byte("{}"), Secrets: []Secret{NewSecret()}, Now: sendTime})
		assert.Equal(t, Failed, a.Outcome)
		assert.Equal(t, code, a.StatusCode)
		assert.Contains(t, a.Error, "redirect "+strconv.Itoa(code))
		assert.Contains(t, a.Error, `not followed (to "/new"); register the final URL`)
	}
	assert.Zero(t, followed.Load(), "the redirect target must not be requested")
}

func TestSendTimeout(t *testing.T) {
	release := make(chan struct{})
	handler := func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}
	srv, client := tlsServer(t, http.HandlerFunc(handler), 300*time.Millisecond)
	t.Cleanup(func() { close(release) }) // runs before srv.Close
	a := Send(context.Background(), client, Request{URL: srv.URL, MsgID: "m1", Body: []byte("{}"), Secrets: []Secret{NewSecret()}, Now: sendTime})
	assert.Equal(t, Failed, a.Outcome)
	assert.Zero(t, a.StatusCode)
	assert.True(t, strings.HasPrefix(a.Error, "timeout: Post: "), a.Error)
	assert.NotContains(t, a.Error, srv.URL, "the error does not repeat the URL")
	assert.Greater(t, a.Latency, time.Duration(0))
}

// A 2xx whose body then stalls is Delivered: the receiver has accepted
// the message, and the timeout only ends the reading.
func TestSendSlowBodyAfter2xx(t *testing.T) {
	release := make(chan struct{})
	handler := func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusAccepted)
		io.WriteString(w, "accepted, now thinking")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}
	// Long enough for the headers to arrive on a busy machine; the test
	// waits for all of it.
	// (1.5 s was not: the connect, the TLS handshake and the request on
	// a machine busy with the other packages' engines.)
	srv, client := tlsServer(t, http.HandlerFunc(handler), 4*time.Second)
	t.Cleanup(func() { close(release) })
	a := Send(context.Background(), client, Request{URL: srv.URL, MsgID: "m1", Body: []byte("{}"), Secrets: []Secret{NewSecret()}, Now: sendTime})
	assert.Equal(t, Delivered, a.Outcome, "%+v", a)
	assert.Equal(t, http.StatusAccepted, a.StatusCode)
	assert.Equal(t, "accepted, now thinking", a.ResponseBody)
}

func TestSendBigResponseBody(t *testing.T) {
	const total = 64 << 20
	writeErr := make(chan error, 1)
	handler := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(total))
		chunk := bytes.Repeat([]byte("€"), 64<<10/3) // 3-byte characters
		var err error
		for n := 0; n < total && err == nil; {
			k := min(len(chunk), total-n)
			_, err = w.Write(chunk[:k])
			n += k
		}
		writeErr <- err
	}
	srv, client := tlsServer(t, http.HandlerFunc(handler), 0)
	a := Send(context.Background(), client, Request{URL: srv.URL, MsgID: "m1", Body: []byte("{}"), Secrets: []Secret{NewSecret()}, Now: sendTime})
	assert.Equal(t, Delivered, a.Outcome)
	assert.Equal(t, strings.Repeat("€", MaxResponseChars), a.ResponseBody)
	// The client stopped reading and closed the connection: the server
	// could not write the whole 64 MiB.
	select {
	case err := <-writeErr:
		assert.Error(t, err, "the server wrote all 64 MiB: the client read the whole body")
	case <-time.After(30 * time.Second):
		t.Fatal("the server is still writing: the client did not close the connection")
	}
}

func TestSendRefusesLoopbackWithoutAllowPrivate(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer srv.Close()
	client := NewHTTPClient(ClientOptions{TLSConfig: srv.Client().Transport.(*http.Transport).TLSClientConfig})
	a := Send(context.Background(), client, Request{URL: srv.URL + "/hook?token=s3cr3t", MsgID: "m1", Body: []byte("{}"), Secrets: []Secret{NewSecret()}, Now: sendTime})
	assert.Equal(t, Failed, a.Outcome)
	assert.Zero(t, a.StatusCode)
	assert.Contains(t, a.Error, "127.0.0.1 is loopback (127.0.0.0/8)")
	assert.NotContains(t, a.Error, "s3cr3t", "the error does not repeat the URL")
	assert.Zero(t, hits.Load())
}

func TestSendConnectionClosed(t *testing.T) {
	handler := func(w http.ResponseWriter, r *http.Request) {
		c, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			c.Close()
		}
	}
	srv, client := tlsServer(t, http.HandlerFunc(handler), 0)
	a := Send(context.Background(), client, Request{URL: srv.URL, MsgID: "m1", Body: []byte("{}"), Secrets: []Secret{NewSecret()}, Now: sendTime})
	assert.Equal(t, Failed, a.Outcome)
	assert.Zero(t, a.StatusCode)
	assert.True(t, strings.HasPrefix(a.Error, "Post: "), a.Error)
	assert.Contains(t, a.Error, "EOF")
}

func TestSendUntrustedCertificate(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshake error is expected
	srv.StartTLS()
	defer srv.Close()
	client := NewHTTPClient(ClientOptions{AllowPrivate: true}) // system roots only
	a := Send(context.Background(), client, Request{URL: srv.URL, MsgID: "m1", Body: []byte("{}"), Secrets: []Secret{NewSecret()}, Now: sendTime})
	assert.Equal(t, Failed, a.Outcome)
	assert.Contains(t, a.Error, "certificate")
}

func TestSendCanceled(t *testing.T) {
	got := make(chan received, 1)
	srv, client := tlsServer(t, recordingHandler(got, 200, ""), 0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	a := Send(ctx, client, Request{URL: srv.URL, MsgID: "m1", Body: []byte("{}"), Secrets: []Secret{NewSecret()}, Now: sendTime})
	assert.Equal(t, Failed, a.Outcome)
	assert.Contains(t, a.Error, "context canceled")
	assert.Empty(t, got)
}

func TestSendInvalidRequest(t *testing.T) {
	got := make(chan received, 1)
	srv, client := tlsServer(t, recordingHandler(got, 200, ""), 0)
	s := NewSecret()
	tests := []struct {
		name   string
		req    Request
		errHas string
	}{
		{"http", Request{URL: strings.Replace(srv.URL, "https", "http", 1), MsgID: "m1", Secrets: []Secret{s}}, `scheme "http": must be "https"`},
		{"credentials", Request{URL: strings.Replace(srv.URL, "https://", "https://u:p@", 1), MsgID: "m1", Secrets: []Secret{s}}, "userinfo"},
		{"no URL", Request{MsgID: "m1", Secrets: []Secret{s}}, "url: empty"},
		{"bad id", Request{URL: srv.URL, MsgID: "m.1", Secrets: []Secret{s}}, "sign: invalid webhook-id"},
		{"no id", Request{URL: srv.URL, Secrets: []Secret{s}}, "sign: missing webhook-id"},
		{"no secrets", Request{URL: srv.URL, MsgID: "m1"}, "sign: no usable webhook secret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := Send(context.Background(), client, tt.req)
			assert.Equal(t, Failed, a.Outcome)
			assert.Contains(t, a.Error, tt.errHas)
			assert.Zero(t, a.Latency, "nothing was sent")
			assert.Zero(t, a.StatusCode)
		})
	}
	assert.Empty(t, got, "no request reached the server")
}

func TestSendDefaultsNowAndClient(t *testing.T) {
	got := make(chan received, 1)
	srv, client := tlsServer(t, recordingHandler(got, 200, ""), 0)
	s := NewSecret()
	a := Send(context.Background(), client, Request{URL: srv.URL, MsgID: "m1", Body: []byte("{}"), Secrets: []Secret{s}})
	require.Equal(t, Delivered, a.Outcome, "%+v", a)
	r := <-got
	assert.False(t, a.Timestamp.IsZero())
	assert.Zero(t, a.Timestamp.Nanosecond())
	assert.Equal(t, strconv.FormatInt(a.Timestamp.Unix(), 10), r.header.Get(HeaderTimestamp))
	v := &Verifier{Secrets: []Secret{s}, Now: func() time.Time { return a.Timestamp }}
	assert.NoError(t, v.Verify(r.header, r.body))

	// A nil client is the strict default client: loopback is refused.
	a = Send(context.Background(), nil, Request{URL: srv.URL, MsgID: "m1", Body: []byte("{}"), Secrets: []Secret{s}})
	assert.Equal(t, Failed, a.Outcome)
	assert.Contains(t, a.Error, "loopback")
	assert.Empty(t, got)
}

func TestReadBody(t *testing.T) {
	emoji := "😀" // 4 bytes
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"empty", "", ""},
		{"short", "hello", "hello"},
		{"exactly 1000 ASCII", strings.Repeat("a", 1000), strings.Repeat("a", 1000)},
		{"1001 ASCII", strings.Repeat("a", 1001), strings.Repeat("a", 1000)},
		{"1000 two-byte", strings.Repeat("é", 1200), strings.Repeat("é", 1000)},
		{"1000 four-byte", strings.Repeat(emoji, 1000), strings.Repeat(emoji, 1000)},
		{"more four-byte", strings.Repeat(emoji, 5000), strings.Repeat(emoji, 1000)},
		// 1 + 4*1000 bytes: the 4000-byte limit cuts the last emoji, which
		// is dropped, not turned into U+FFFD.
		{"limit cuts a character", "a" + strings.Repeat(emoji, 1000), "a" + strings.Repeat(emoji, 999)},
		// 2 + 4*999 bytes, then 2 of the next emoji's 4 bytes: dropped;
		// then the first 1000 characters.
		{"limit cuts after 2 of 4 bytes", "ab" + strings.Repeat(emoji, 1000), "ab" + strings.Repeat(emoji, 998)},
		{"invalid UTF-8", "ok\xff\xfe then", "ok\uFFFD then"},
		{"truncated character at the end of the body", "ok\xe2\x82", "ok\uFFFD"},
		{"invalid bytes count as characters", strings.Repeat("\xffa", 600), strings.Repeat("\uFFFDa", 500)},
		// A run of invalid bytes is one U+FFFD, so the cases below stay far
		// under MaxResponseChars and show what happens at the 4000-byte
		// limit: a character it cuts is dropped, whatever its length and
		// wherever the cut.
		{"limit cuts a 2-byte character after 1", cutAt("é", 1), "\uFFFDa"},
		{"limit cuts a 3-byte character after 1", cutAt("€", 1), "\uFFFDa"},
		{"limit cuts a 3-byte character after 2", cutAt("€", 2), "\uFFFDa"},
		{"limit cuts a 4-byte character after 1", cutAt(emoji, 1), "\uFFFDa"},
		{"limit cuts a 4-byte character after 2", cutAt(emoji, 2), "\uFFFDa"},
		{"limit cuts a 4-byte character after 3", cutAt(emoji, 3), "\uFFFDa"},
		{"limit right after a 4-byte character", cutAt(emoji, 4), "\uFFFDa" + emoji},
		{"limit right after a 2-byte character", cutAt("é", 2), "\uFFFDaé"},
		{"limit right after ASCII", cutAt("b", 1), "\uFFFDab"},
		// Exactly 4000 bytes: nothing was cut, so an incomplete character
		// the receiver sent at the end is invalid UTF-8, not dropped.
		{"4000 bytes ending in an incomplete character", strings.Repeat("\xff", 3996) + "a" + emoji[:3], "\uFFFDa\uFFFD"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := readBody(strings.NewReader(tt.in))
			if got != tt.want { // no diff of 4000 bytes of emoji
				t.Errorf("readBody(%.20q... %d bytes) = %.20q... (%d runes, %d bytes), want %.20q... (%d runes, %d bytes)",
					tt.in, len(tt.in), got, utf8.RuneCountInString(got), len(got), tt.want, utf8.RuneCountInString(tt.want), len(tt.want))
			}
			assert.True(t, utf8.ValidString(got))
			assert.LessOrEqual(t, utf8.RuneCountInString(got), MaxResponseChars)
		})
	}
}

// cutAt returns a body whose byte 4000 (maxResponseRead) falls after the
// first n bytes of r: invalid bytes, "a", r, then more text.
func cutAt(r string, n int) string {
	return strings.Repeat("\xff", maxResponseRead-1-n) + "a" + r + "zz"
}

// countingReader counts the bytes read from it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func TestReadBodyIsBounded(t *testing.T) {
	cr := &countingReader{r: io.LimitReader(neverEnding('x'), 1<<30)}
	got := readBody(cr)
	assert.Len(t, got, MaxResponseChars)
	assert.LessOrEqual(t, cr.n, maxResponseRead+1)
}

type neverEnding byte

func (b neverEnding) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

func TestTruncate(t *testing.T) {
	assert.Equal(t, "ab", truncate("abc", 2))
	assert.Equal(t, "abc", truncate("abc", 3))
	assert.Equal(t, "é€", truncate("é€😀", 2))
	assert.Equal(t, "", truncate("abc", 0))
}

func TestNewHTTPClientSettings(t *testing.T) {
	c := NewHTTPClient(ClientOptions{})
	assert.Equal(t, 10*time.Second, c.Timeout, "DefaultTimeout")
	tr := c.Transport.(*http.Transport)
	assert.Equal(t, 10*time.Second, tr.TLSHandshakeTimeout)
	assert.Equal(t, 10*time.Second, tr.ResponseHeaderTimeout)
	assert.Equal(t, 90*time.Second, tr.IdleConnTimeout, "idle connections are closed")
	assert.Equal(t, int64(64<<10), tr.MaxResponseHeaderBytes)
	assert.Nil(t, tr.Proxy, "no proxy: the address check must see the receiver")
	assert.True(t, tr.DisableCompression)
	assert.Equal(t, uint16(tls.VersionTLS12), tr.TLSClientConfig.MinVersion)
	assert.Equal(t, 5*time.Second, NewHTTPClient(ClientOptions{Timeout: 5 * time.Second}).Timeout)
	assert.Equal(t, DefaultTimeout, NewHTTPClient(ClientOptions{Timeout: -1}).Timeout)

	// The given TLS configuration is cloned, not shared.
	cfg := &tls.Config{ServerName: "x"}
	got := NewHTTPClient(ClientOptions{TLSConfig: cfg}).Transport.(*http.Transport).TLSClientConfig
	assert.NotSame(t, cfg, got)
	assert.Equal(t, "x", got.ServerName)
}

func TestSendHugeResponseHeaders(t *testing.T) {
	handler := func(w http.ResponseWriter, r *http.Request) {
		for i := range 100 {
			w.Header().Set("X-Filler-"+strconv.Itoa(i), strings.Repeat("f", 1000))
		}
	}
	srv, client := tlsServer(t, http.HandlerFunc(handler), 0)
	a := Send(context.Background(), client, Request{URL: srv.URL, MsgID: "m1", Body: []byte("{}"), Secrets: []Secret{NewSecret()}, Now: sendTime})
	assert.Equal(t, Failed, a.Outcome)
	assert.Contains(t, a.Error, "response headers exceeded")
}

func TestSendGzipIsNotInflated(t *testing.T) {
	got := make(chan received, 1)
	handler := func(w http.ResponseWriter, r *http.Request) {
		got <- received{r.Method, r.Header.Clone(), nil}
		w.Header().Set("Content-Encoding", "gzip")
		io.WriteString(w, "not really gzip")
	}
	srv, client := tlsServer(t, http.HandlerFunc(handler), 0)
	a := Send(context.Background(), client, Request{URL: srv.URL, MsgID: "m1", Body: []byte("{}"), Secrets: []Secret{NewSecret()}, Now: sendTime})
	assert.Equal(t, Delivered, a.Outcome)
	assert.Equal(t, "not really gzip", a.ResponseBody, "the body as sent")
	assert.Empty(t, (<-got).header.Get("Accept-Encoding"))
}

// A 429 or 5xx answer's Retry-After is read (seconds or an HTTP date, at
// most contract.MaxRetryDelay); other answers' is ignored.
func TestSendRetryAfter(t *testing.T) {
	for _, tt := range []struct {
		status     int
		retryAfter string
		want       time.Duration
	}{
		{429, "30", 30 * time.Second},
		{503, "120", 2 * time.Minute},
		// An HTTP date has whole seconds: the wait runs to it from the
		// attempt's time.
		{502, sendTime.Add(90 * time.Second).UTC().Format(http.TimeFormat), sendTime.Add(90 * time.Second).Truncate(time.Second).Sub(sendTime)},
		{504, "0", 0},
		{500, "", 0},
		{500, "120", 2 * time.Minute},
		{599, "120", 2 * time.Minute},
		// Three digits past 599 are no 5xx: their Retry-After is not
		// honoured (it was, by a bare code >= 500: found by review).
		{600, "120", 0},
		{999, "120", 0},
		{499, "30", 0},
		{410, "30", 0},
		{400, "30", 0},
		{404, "30", 0},
		{200, "30", 0},
		{302, "30", 0},
	} {
		t.Run(strconv.Itoa(tt.status)+" "+tt.retryAfter, func(t *testing.T) {
			srv, client := tlsServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tt.retryAfter != "" {
					w.Header().Set("Retry-After", tt.retryAfter)
				}
				w.WriteHeader(tt.status)
			}), 0)
			a := Send(context.Background(), client, Request{URL: srv.URL, MsgID: "m1", Body: []byte("{}"), Secrets: []Secret{NewSecret()}, Now: sendTime})
			want := tt.want
			if _, err := strconv.Atoi(tt.retryAfter); err == nil && want > 0 {
				want += a.Latency // seconds count from the response
			}
			assert.Equal(t, want, a.RetryAfter)
		})
	}
}

// A Retry-After in seconds counts from the response (RFC 9110 section
// 10.2.3), and Attempt.RetryAfter from the attempt's time: a receiver
// that answers after a while and asks for a few seconds more gets them
// after its answer, not from when the request was sent (found by review:
// "Retry-After: 1" after a 300 ms answer was retried 700 ms after it).
// An HTTP date is a point in time, the same however long the answer took.
func TestSendRetryAfterCountsFromTheResponse(t *testing.T) {
	const hold = 300 * time.Millisecond
	for _, tt := range []struct {
		retryAfter string
		want       func(a Attempt) time.Duration
	}{
		{"1", func(a Attempt) time.Duration { return time.Second + a.Latency }},
		{sendTime.Add(90 * time.Second).UTC().Format(http.TimeFormat), func(Attempt) time.Duration {
			return sendTime.Add(90 * time.Second).Truncate(time.Second).Sub(sendTime)
		}},
	} {
		t.Run(tt.retryAfter, func(t *testing.T) {
			srv, client := tlsServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				time.Sleep(hold)
				w.Header().Set("Retry-After", tt.retryAfter)
				w.WriteHeader(http.StatusServiceUnavailable)
			}), 0)
			a := Send(context.Background(), client, Request{URL: srv.URL, MsgID: "m1", Body: []byte("{}"), Secrets: []Secret{NewSecret()}, Now: sendTime})
			require.GreaterOrEqual(t, a.Latency, hold)
			assert.Equal(t, tt.want(a), a.RetryAfter)
		})
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"  ", 0},
		{"0", 0},
		{"1", time.Second},
		{" 45 ", 45 * time.Second},
		{"86399", 86399 * time.Second},
		{"86400", contract.MaxRetryDelay},
		{"86401", contract.MaxRetryDelay},
		{"9223372036", contract.MaxRetryDelay}, // seconds that overflow a Duration
		{"99999999999999999999999", contract.MaxRetryDelay},
		{"-5", 0},
		{"+5", 0},
		{"1.5", 0},
		{"5s", 0},
		{"soon", 0},
		{now.Add(time.Hour).Format(http.TimeFormat), time.Hour},
		{now.Add(time.Hour).Format(time.RFC850), time.Hour},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0},
		{now.Format(http.TimeFormat), 0},
		{now.Add(time.Hour).Format(time.ANSIC), time.Hour},
		{now.Add(72 * time.Hour).Format(http.TimeFormat), contract.MaxRetryDelay},
	} {
		assert.Equal(t, tt.want, ParseRetryAfter(tt.in, now), "ParseRetryAfter(%q)", tt.in)
	}
}

// dnsResolver returns a resolver that asks a DNS server of the test's
// own, which answers the A question of a name in a (lower case, without
// the final dot) with its address, another question of such a name with
// no record, and any other name NXDOMAIN; and the channel of the server
// addresses the resolver believed it asked (those of /etc/resolv.conf:
// the ones a real lookup error names).
func dnsResolver(t *testing.T, a map[string]netip.Addr) (*net.Resolver, <-chan string) {
	t.Helper()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			// The header and the question, without the EDNS record.
			var labels []string
			end := 12
			for end < n && buf[end] != 0 {
				l := int(buf[end])
				if end+1+l > n {
					break
				}
				labels = append(labels, strings.ToLower(string(buf[end+1:end+1+l])))
				end += l + 1
			}
			end += 5
			if n < 12 || end > n {
				continue
			}
			qtype := int(buf[end-4])<<8 | int(buf[end-3])
			resp := append([]byte(nil), buf[:end]...)
			resp[2] = 0x80 | buf[2]&0x01 // QR, RD as asked
			copy(resp[4:12], []byte{0, 1, 0, 0, 0, 0, 0, 0})
			addr, known := a[strings.Join(labels, ".")]
			switch {
			case !known:
				resp[3] = 0x80 | 3 // RA, NXDOMAIN
			case qtype == 1 && addr.Is4():
				resp[3] = 0x80
				resp[7] = 1 // one answer
				ip := addr.As4()
				resp = append(resp, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4)
				resp = append(resp, ip[:]...)
			default:
				resp[3] = 0x80 // no record of this type
			}
			pc.WriteTo(resp, from)
		}
	}()
	asked := make(chan string, 64)
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
		select {
		case asked <- address:
		default:
		}
		var d net.Dialer
		return d.DialContext(ctx, "udp4", pc.LocalAddr().String())
	}}, asked
}

// The error of a lookup that fails names the DNS server the function
// asked (its VPC's resolver): neither an attempt's error nor a refused
// subscription's message may show it to the subscriber.
func TestLookupErrorsHideTheResolver(t *testing.T) {
	r, asked := dnsResolver(t, nil)
	client := NewHTTPClient(ClientOptions{Resolver: r})
	a := Send(context.Background(), client, Request{URL: "https://nx.hooks.example.com/", MsgID: "m1", Body: []byte("{}"), Secrets: []Secret{NewSecret()}, Now: sendTime})
	assert.Equal(t, Failed, a.Outcome)
	assert.Contains(t, a.Error, "lookup nx.hooks.example.com")
	assert.Contains(t, a.Error, "no such host")
	server := <-asked
	assert.NotContains(t, a.Error, server, "the resolver's address")
	assert.NotContains(t, a.Error, " on ")

	_, err := ValidateTarget(context.Background(), "https://nx.hooks.example.com/", r)
	require.ErrorIs(t, err, ErrInvalidTarget)
	assert.Contains(t, err.Error(), "does not resolve: lookup nx.hooks.example.com")
	assert.NotContains(t, err.Error(), server, "the resolver's address")
	var dnsErr *net.DNSError
	require.ErrorAs(t, err, &dnsErr, "the resolver's error stays reachable (for the log)")
	assert.Equal(t, server, dnsErr.Server)
}

// A receiver that resets the connection makes an error naming both ends
// of it: the local end is the function's own (private) address and port,
// which the attempt's error must not show.
func TestSendResetHidesTheLocalAddress(t *testing.T) {
	remote := make(chan string, 1)
	srv, client := tlsServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		remote <- r.RemoteAddr
		c, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		// Half a response, then a reset (no TLS close_notify first).
		io.WriteString(c, "HTTP/1.1 200 OK\r\nX-Half: y")
		time.Sleep(50 * time.Millisecond)
		tc := c.(*tls.Conn).NetConn().(*net.TCPConn)
		tc.SetLinger(0)
		tc.Close()
	}), 0)
	a := Send(context.Background(), client, Request{URL: srv.URL, MsgID: "m1", Body: []byte("{}"), Secrets: []Secret{NewSecret()}, Now: sendTime})
	assert.Equal(t, Failed, a.Outcome)
	assert.Contains(t, a.Error, "connection reset by peer")
	local := <-remote // the client's end, as the server saw it
	assert.NotContains(t, a.Error, local, "the function's own address and port")
	assert.NotContains(t, a.Error, "->")
}

// A host name's addresses are looked up by the function's resolver, which
// may answer for names the subscriber does not own (a CNAME to an
// internal name): a refused address is shown by its class, never the
// address itself, on subscribing and in an attempt's error.
func TestRefusedAddressOfANameIsNotShown(t *testing.T) {
	r, _ := dnsResolver(t, map[string]netip.Addr{"db.hooks.example.com": netip.MustParseAddr("10.20.30.40")})
	client := NewHTTPClient(ClientOptions{Resolver: r})
	a := Send(context.Background(), client, Request{URL: "https://db.hooks.example.com:8443/", MsgID: "m1", Body: []byte("{}"), Secrets: []Secret{NewSecret()}, Now: sendTime})
	assert.Equal(t, Failed, a.Outcome)
	assert.Contains(t, a.Error, "non-public address: private, RFC 1918 (10.0.0.0/8)")
	assert.NotContains(t, a.Error, "10.20.30.40")

	_, err := ValidateTarget(context.Background(), "https://db.hooks.example.com/", r)
	require.ErrorIs(t, err, ErrForbiddenAddress)
	assert.Contains(t, err.Error(), `host "db.hooks.example.com": resolves to a non-public address: private, RFC 1918 (10.0.0.0/8)`)
	assert.NotContains(t, err.Error(), "10.20.30.40")
	var ae *AddrError
	require.ErrorAs(t, err, &ae, "the address stays reachable for the caller")
	assert.Equal(t, netip.MustParseAddr("10.20.30.40"), ae.Addr)

	mapped := &fakeResolver{answers: map[string][]netip.Addr{"m.hooks.example.com": addrs("1.1.1.1", "::ffff:10.20.30.40")}}
	_, err = ValidateTarget(context.Background(), "https://m.hooks.example.com/", mapped)
	require.ErrorIs(t, err, ErrForbiddenAddress)
	assert.Contains(t, err.Error(), "resolves to a non-public address: IPv4-mapped IPv6 (::ffff:0:0/96) of one that is private, RFC 1918 (10.0.0.0/8)")
	assert.NotContains(t, err.Error(), "10.20.30.40")

	// An IP literal is what the subscriber wrote: it is named.
	_, err = ValidateTarget(context.Background(), "https://10.20.30.40/", r)
	assert.ErrorContains(t, err, "10.20.30.40 is private")
}
