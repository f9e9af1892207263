package webhook

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"

	"github.com/triggers-dev/triggers/contract"
)

// DefaultTimeout is the time one delivery attempt may take, from dialing
// to reading the response, when ClientOptions.Timeout is zero.
const DefaultTimeout = contract.DefaultWebhookTimeoutSeconds * time.Second

// maxResponseHeaderBytes bounds the response headers a receiver may send.
const maxResponseHeaderBytes = 64 << 10

// ClientOptions configure NewHTTPClient. The zero value is the production
// configuration.
type ClientOptions struct {
	// Timeout bounds one request: connecting, TLS, sending, waiting for
	// and reading the response. Default: DefaultTimeout (10 seconds);
	// zero or negative means the default.
	Timeout time.Duration

	// AllowPrivate lets the client connect to loopback, private and other
	// non-public addresses, on any port. For local development and tests only (an
	// httptest server listens on 127.0.0.1): in production it would let
	// any subscriber make the service call internal endpoints (SSRF). The
	// cloud metadata addresses stay refused even then. Default: false.
	AllowPrivate bool

	// TLSConfig is the TLS configuration, cloned; tests pass the
	// configuration that trusts their httptest server. Default: the
	// system's roots, TLS 1.2 or later.
	TLSConfig *tls.Config

	// Resolver looks up the receivers' host names; tests pass one that
	// asks their own DNS server. Default: net.DefaultResolver.
	Resolver *net.Resolver
}

// dialControl is NewHTTPClient's check of every connection: it refuses to
// connect to an address CheckAddr refuses or to a port other than 443 or
// 1024 to 65535 (unless allowPrivate, local development only). It runs
// after DNS resolution, on the address the socket is about to connect to,
// so a name that resolved to a public address when the subscription was
// validated and to a private one now (DNS rebinding) is still refused.
// Only TCP is allowed. The error wraps an *AddrError (and so
// ErrForbiddenAddress) for a refused address.
func dialControl(network, address string, allowPrivate bool) error {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return fmt.Errorf("webhook: refusing to connect to %s: network %q is not TCP", address, network)
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("webhook: refusing to connect to %q: not an IP address and port: %w", address, err)
	}
	if err := checkAddr(ap.Addr(), allowPrivate); err != nil {
		return fmt.Errorf("webhook: refusing to connect to %s: %w", address, err)
	}
	if !allowPrivate && !allowedPort(ap.Port()) {
		return fmt.Errorf("webhook: refusing to connect to %s: port %d is not allowed", address, ap.Port())
	}
	return nil
}

// NewHTTPClient returns the HTTP client for delivering webhooks:
//
//   - every connection is checked by dialControl (unless AllowPrivate,
//     which refuses only the cloud metadata addresses);
//   - no proxy, even if HTTPS_PROXY is set: the address check must see
//     the receiver's address, not the proxy's;
//   - redirects are not followed: Send gets the 3xx response and counts
//     it as a failed attempt (the Standard Webhooks recommendation; the
//     subscriber should register the final URL);
//   - each request is bounded by Timeout, response headers by 64 KiB;
//   - no transparent gzip, so a response body is read as sent and never
//     inflated.
func NewHTTPClient(opts ClientOptions) *http.Client {
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	allowPrivate := opts.AllowPrivate
	dialer := &net.Dialer{
		Timeout:   timeout,
		KeepAlive: 30 * time.Second,
		Resolver:  opts.Resolver,
		ControlContext: func(ctx context.Context, network, address string, c syscall.RawConn) error {
			return dialControl(network, address, allowPrivate)
		},
	}
	var tlsConfig *tls.Config
	if opts.TLSConfig != nil {
		tlsConfig = opts.TLSConfig.Clone()
	} else {
		tlsConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	transport := &http.Transport{
		Proxy:                  nil,
		DialContext:            dialer.DialContext,
		TLSClientConfig:        tlsConfig,
		TLSHandshakeTimeout:    timeout,
		ResponseHeaderTimeout:  timeout,
		MaxResponseHeaderBytes: maxResponseHeaderBytes,
		DisableCompression:     true,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           100,
		MaxIdleConnsPerHost:    4,
		IdleConnTimeout:        90 * time.Second,
		ExpectContinueTimeout:  time.Second,
	}
	return &http.Client{
		Transport: transport,
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}
