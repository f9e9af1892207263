// CORS: which pages on other origins may read the API's answers.

package contract

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// The API function's CORS environment, set by the construct from
// TriggersApiProps.Cors. Without CORS_ALLOW_ORIGINS the function sends no
// CORS header.
const (
	// EnvCorsAllowOrigins lists the origins whose pages may read the
	// answers, comma-separated ("https://app.example.com"), or "*" for any.
	EnvCorsAllowOrigins = "CORS_ALLOW_ORIGINS"
	// EnvCorsAllowCredentials "true" lets those pages send credentials
	// (Access-Control-Allow-Credentials).
	EnvCorsAllowCredentials = "CORS_ALLOW_CREDENTIALS"
	// EnvCorsExposeHeaders lists more response headers those pages may
	// read, comma-separated, beyond CORSExposedHeaders().
	EnvCorsExposeHeaders = "CORS_EXPOSE_HEADERS"
)

// CORSExposedHeaders returns the response headers of the API a page may
// need to read, exposed whenever an origin is allowed. It returns a new
// slice each call.
func CORSExposedHeaders() []string {
	return []string{"Retry-After", "X-Request-Id", "X-Correlation-Id", "Location"}
}

// CORS is which pages on other origins may read the API's answers.
type CORS struct {
	// AllowOrigins are origins as browsers send them
	// ("https://app.example.com"), or the one value "*" for any.
	AllowOrigins []string
	// AllowCredentials lets the pages send credentials (not with "*":
	// CheckCORS refuses it, as browsers refuse a preflight answering "*"
	// to a credentialed request).
	AllowCredentials bool
	// ExposeHeaders are response headers the pages may read, beyond
	// CORSExposedHeaders().
	ExposeHeaders []string
}

// Exposed returns the headers a page of an allowed origin may read:
// CORSExposedHeaders() and c.ExposeHeaders, each once (names compared
// case-insensitively, as HTTP does). It returns a new slice each call.
func (c CORS) Exposed() []string {
	out := CORSExposedHeaders()
	for _, h := range c.ExposeHeaders {
		if !slices.ContainsFunc(out, func(e string) bool { return strings.EqualFold(e, h) }) {
			out = append(out, h)
		}
	}
	return out
}

// CheckCORSOrigin returns an error naming the problem and its fix when o is
// not an origin a browser sends in its Origin header (scheme, host and
// port, nothing else: such a value would never match) and not "*".
func CheckCORSOrigin(o string) error {
	if o == "*" {
		return nil
	}
	u, err := url.Parse(o)
	switch {
	case err != nil || u.Host == "" || u.Opaque != "":
		return fmt.Errorf("CORS origin %q is not an origin: use scheme://host[:port], such as https://app.example.com, or *", o)
	case u.Scheme != "https" && u.Scheme != "http":
		return fmt.Errorf("CORS origin %q: the scheme must be https or http", o)
	case u.User != nil || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(o, "?") || strings.HasSuffix(o, "#"):
		return fmt.Errorf("CORS origin %q has more than scheme, host and port: use %s://%s", o, u.Scheme, u.Host)
	case u.Path != "":
		return fmt.Errorf("CORS origin %q has a path: browsers send none (not even a trailing slash), so it would never match: use %s://%s", o, u.Scheme, u.Host)
	case o != strings.ToLower(o):
		return fmt.Errorf("CORS origin %q has capitals: browsers send it in lower case, so it would never match: use %s", o, strings.ToLower(o))
	}
	for i := 0; i < len(u.Host); i++ {
		if u.Host[i] >= 0x80 {
			return fmt.Errorf("CORS origin %q has a host that is not ASCII: browsers send the punycode form (xn--...), so it would never match: use that", o)
		}
	}
	// Browsers send no port for the scheme's default, and a port as a
	// plain number.
	if strings.HasSuffix(u.Host, ":") {
		return fmt.Errorf("CORS origin %q has an empty port, which browsers never send: use %s://%s", o, u.Scheme, strings.TrimSuffix(u.Host, ":"))
	}
	if port := u.Port(); port != "" {
		n, err := strconv.Atoi(port)
		switch {
		case err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port:
			return fmt.Errorf("CORS origin %q has port %q, which browsers never send: give it as a plain number from 1 to 65535", o, port)
		case u.Scheme == "https" && n == 443 || u.Scheme == "http" && n == 80:
			return fmt.Errorf("CORS origin %q names the scheme's default port, which browsers leave out, so it would never match: use %s://%s", o, u.Scheme, u.Hostname())
		}
	}
	return nil
}

// CheckCORS returns an error naming the problem and its fix when c's
// origins or headers are not usable: no origin, a bad one, "*" among
// others, an empty or malformed header name.
func CheckCORS(c CORS) error {
	if len(c.AllowOrigins) == 0 {
		return fmt.Errorf("CORS allows no origin: give at least one, such as https://app.example.com")
	}
	for _, o := range c.AllowOrigins {
		if o == "*" && len(c.AllowOrigins) > 1 {
			return fmt.Errorf("CORS origins %q mix * with others: give * alone, or the origins", c.AllowOrigins)
		}
		if o == "*" && c.AllowCredentials {
			return fmt.Errorf("CORS allows any origin (*) with credentials: browsers refuse a preflight that answers * to a credentialed request, so every call would fail: list the origins, or drop AllowCredentials")
		}
		if err := CheckCORSOrigin(o); err != nil {
			return err
		}
	}
	for _, h := range c.ExposeHeaders {
		if !validHeaderName(h) {
			return fmt.Errorf("CORS expose header %q is not a header name: use letters, digits and -", h)
		}
	}
	return nil
}

// validHeaderName reports whether h is an HTTP field name (RFC 9110
// token).
func validHeaderName(h string) bool {
	if h == "" {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}
