package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/triggers-dev/triggers/contract"
)

// MaxResponseChars is the most characters (runes) of a response body an
// Attempt keeps.
const MaxResponseChars = 1000

// maxResponseRead is the most bytes of a response body Send reads:
// enough for MaxResponseChars runes of up to 4 bytes each.
const maxResponseRead = 4 * MaxResponseChars

// UserAgent is the User-Agent header of every delivery.
const UserAgent = "triggers-webhooks/1"

// Outcome classifies a delivery attempt.
type Outcome string

// The outcomes of Send.
const (
	// Delivered: the receiver answered 2xx.
	Delivered Outcome = "delivered"
	// Gone: the receiver answered 410 Gone, meaning it wants no more
	// messages (Zapier REST Hooks; Standard Webhooks "Sender should
	// disable the webhook endpoint"). Disable the subscription; do not
	// retry.
	Gone Outcome = "gone"
	// Failed: anything else (another status, a redirect, a timeout, a
	// connection or TLS error, a refused address, an invalid Request).
	// Retry according to the Schedule.
	Failed Outcome = "failed"
)

// Request is one delivery attempt to make.
type Request struct {
	// URL is the subscriber's https URL (checked with ParseTarget; the
	// client checks the address).
	URL string
	// MsgID is the webhook-id: the same for every attempt of a message,
	// so the receiver can deduplicate. See Signature for the syntax.
	MsgID string
	// Body is sent as is, with Content-Type application/json.
	Body []byte
	// Secrets sign the message; several during a secret rotation.
	Secrets []Secret
	// Now is the attempt's time, sent as webhook-timestamp. Default:
	// time.Now().
	Now time.Time
}

// Attempt is the result of Send.
type Attempt struct {
	// Outcome classifies the attempt.
	Outcome Outcome
	// StatusCode is the response's status, 0 if there was none.
	StatusCode int
	// Timestamp is the webhook-timestamp sent (whole seconds), or the
	// zero time if the request was invalid.
	Timestamp time.Time
	// Latency is the time from sending the request to having read the
	// response (or failed), 0 if nothing was sent.
	Latency time.Duration
	// ResponseBody is the start of the response body: at most
	// MaxResponseChars characters (so at most 4000 bytes), cut at a
	// character boundary, with invalid UTF-8 replaced by U+FFFD.
	ResponseBody string
	// Error says why an attempt Failed; "" for Delivered and Gone. It
	// is shown to the subscriber, so it never repeats the URL, never
	// names the sending side's network (the DNS server asked, the
	// connection's local address) and, for a host name, gives the class
	// of a refused address, not the address.
	Error string
	// RetryAfter is the wait a receiver asked for with Retry-After
	// (delay-seconds or an HTTP-date, RFC 9110 section 10.2.3) on a 429 or
	// 5xx answer, counted from the attempt's time (Request.Now): seconds
	// count from the response, so Latency is added to them. At most
	// contract.MaxRetryDelay; 0 when it asked for none, or for a time
	// already past when the response came.
	RetryAfter time.Duration
}

var defaultClient = sync.OnceValue(func() *http.Client { return NewHTTPClient(ClientOptions{}) })

// Send makes one delivery attempt: it POSTs req.Body to req.URL with the
// Standard Webhooks headers (Sign) and classifies the response. client
// should come from NewHTTPClient, which checks addresses, bounds the time
// and does not follow redirects; nil means NewHTTPClient's defaults (one
// shared client). Send reads at most 4000 bytes of the response body and
// then closes it.
//
// A 2xx is Delivered even if reading its body then fails, since the
// receiver has accepted the message.
func Send(ctx context.Context, client *http.Client, req Request) Attempt {
	if client == nil {
		client = defaultClient()
	}
	if _, err := ParseTarget(req.URL); err != nil {
		return Attempt{Outcome: Failed, Error: err.Error()}
	}
	now := req.Now
	if now.IsZero() {
		now = time.Now()
	}
	ts := time.Unix(now.Unix(), 0)
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, req.URL, bytes.NewReader(req.Body))
	if err != nil {
		return Attempt{Outcome: Failed, Error: "build request: " + errorText(err)}
	}
	if err := Sign(hreq.Header, req.MsgID, ts, req.Body, req.Secrets...); err != nil {
		return Attempt{Outcome: Failed, Error: "sign: " + err.Error()}
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("User-Agent", UserAgent)

	start := time.Now()
	resp, err := client.Do(hreq)
	if err != nil {
		text := errorText(err)
		// A name's address is not the subscriber's to know (see
		// AddrError.withoutAddr); an IP literal is what it wrote.
		if ae, ok := errors.AsType[*AddrError](err); ok && !isIPLiteral(hreq.URL.Hostname()) {
			text = "Post: refusing to connect: the host resolves to " + ae.withoutAddr()
		}
		return Attempt{Outcome: Failed, Timestamp: ts, Latency: time.Since(start), Error: text}
	}
	body := readBody(resp.Body)
	resp.Body.Close()
	a := Attempt{
		StatusCode:   resp.StatusCode,
		Timestamp:    ts,
		Latency:      time.Since(start),
		ResponseBody: body,
	}
	code := resp.StatusCode
	if code >= 200 && code <= 299 {
		a.Outcome = Delivered
	} else if code == http.StatusGone {
		a.Outcome = Gone
	} else if code >= 300 && code <= 399 {
		a.Outcome = Failed
		a.Error = fmt.Sprintf("redirect %d %s not followed", code, http.StatusText(code))
		if loc := resp.Header.Get("Location"); loc != "" {
			a.Error += fmt.Sprintf(" (to %q)", truncate(loc, 200))
		}
		a.Error += "; register the final URL"
	} else {
		a.Outcome = Failed
		a.Error = fmt.Sprintf("status %d %s", code, http.StatusText(code))
		// 429 and 5xx only: a receiver may answer any three digits, and
		// 600-999 are no server errors (RFC 9110 section 15).
		if code == http.StatusTooManyRequests || code >= 500 && code <= 599 {
			a.RetryAfter = retryAfter(resp.Header.Get("Retry-After"), now, a.Latency)
		}
	}
	return a
}

// retryAfter is the wait Retry-After value v asks for, counted from now,
// the attempt's time, for a response that came latency later: a number of
// seconds counts from the response (RFC 9110 section 10.2.3), so the
// latency is added; an HTTP-date is a point in time. At most
// contract.MaxRetryDelay; 0 for none, or for a time already past when the
// response came.
func retryAfter(v string, now time.Time, latency time.Duration) time.Duration {
	w := ParseRetryAfter(v, now.Add(latency))
	if w == 0 {
		return 0
	}
	return min(w+latency, contract.MaxRetryDelay)
}

// ParseRetryAfter reads a Retry-After header value at now: a number of
// seconds, or an HTTP-date. It returns 0 for an empty, malformed or
// negative value and for a date not after now, and at most contract.MaxRetryDelay.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if strings.Trim(v, "0123456789") == "" {
		secs, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return contract.MaxRetryDelay // too many digits for an int64
		}
		return time.Duration(min(secs, int64(contract.MaxRetryDelay/time.Second))) * time.Second
	}
	at, err := http.ParseTime(v)
	if err != nil {
		return 0
	}
	return min(max(at.Sub(now), 0), contract.MaxRetryDelay)
}

// isIPLiteral reports whether a URL's host is an IP address, not a name.
func isIPLiteral(host string) bool {
	_, err := netip.ParseAddr(host)
	return err == nil
}

// errorText is err's text without the URL that *url.Error repeats (every
// error of http.Client.Do is one), with "timeout: " in front of a timeout,
// and without the function's own addresses (see localText).
func errorText(err error) string {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		text := ue.Op + ": " + localText(ue.Err)
		if ue.Timeout() {
			text = "timeout: " + text
		}
		return text
	}
	return localText(err)
}

// localText is err's text without the addresses of the sending side it
// may carry: the DNS server a lookup asked (a *net.DNSError's Server:
// "lookup x on 10.0.0.2:53: no such host") and the local end of a
// connection (a *net.OpError's Source: "read tcp
// 10.0.1.5:40000->203.0.113.9:443: ..."). The text is stored in an
// attempt and shown to the subscriber, who must not learn the
// function's network (its private address, its VPC's resolver).
func localText(err error) string {
	text := err.Error()
	var walk func(error)
	walk = func(e error) {
		switch e := e.(type) {
		case nil:
			return
		case *net.DNSError:
			if e.Server != "" {
				text = strings.ReplaceAll(text, " on "+e.Server, "")
			}
		case *net.OpError:
			if e.Source != nil {
				text = strings.ReplaceAll(text, e.Source.String()+"->", "")
				text = strings.ReplaceAll(text, e.Source.String(), "(local)")
			}
		}
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		case interface{ Unwrap() []error }:
			for _, w := range u.Unwrap() {
				walk(w)
			}
		}
	}
	walk(err)
	return text
}

// readBody reads at most maxResponseRead bytes of r and returns them as
// at most MaxResponseChars characters of valid UTF-8. A read error ends
// the body early; what was read is kept.
func readBody(r io.Reader) string {
	b, _ := io.ReadAll(io.LimitReader(r, maxResponseRead+1))
	if len(b) > maxResponseRead {
		b = b[:maxResponseRead]
		// Drop a character the limit cut in two, rather than turning
		// its first bytes into U+FFFD.
		for i := 1; i <= utf8.UTFMax-1; i++ { // len(b) is maxResponseRead
			if utf8.RuneStart(b[len(b)-i]) {
				if !utf8.FullRune(b[len(b)-i:]) {
					b = b[:len(b)-i]
				}
				break
			}
		}
	}
	return truncate(strings.ToValidUTF8(string(b), "\uFFFD"), MaxResponseChars)
}

// truncate returns the first n runes of s.
func truncate(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}
