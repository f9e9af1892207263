package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// MaxURLLength bounds the length of a webhook URL in bytes.
const MaxURLLength = 2048

// Errors wrapped by the errors of ParseTarget, ValidateTarget, CheckAddr
// and the HTTP client's dialer.
var (
	// ErrInvalidTarget: the URL may not be a webhook target (every
	// *TargetError wraps it).
	ErrInvalidTarget = errors.New("invalid webhook URL")
	// ErrForbiddenAddress: the address is not a public one (every
	// *AddrError wraps it).
	ErrForbiddenAddress = errors.New("address not allowed for webhooks")
	// ErrLookupUnavailable: the host's name could not be resolved now (a
	// DNS timeout or a temporary failure, or the context ended): nothing
	// is known about the URL; ask again later.
	ErrLookupUnavailable = errors.New("the webhook URL's host could not be resolved right now")
)

// TargetError is the error of ParseTarget and ValidateTarget: which part
// of the URL is wrong and why. It never repeats the userinfo part or the
// whole URL (either may hold credentials), only the offending part.
type TargetError struct {
	// Part is "url" (the URL as a whole), "scheme", "userinfo", "host",
	// "port" or "fragment".
	Part string
	// Value is the offending part as written, "" for userinfo.
	Value string
	// Reason says what is wrong and, where it helps, what to do.
	Reason string
	// Err is the underlying error, if any: an *AddrError for a host that
	// is or resolves to a forbidden address, the resolver's error for a
	// name that does not resolve.
	Err error
}

// Error returns "invalid webhook URL: <part> <value>: <reason>".
func (e *TargetError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("%v: %s: %s", ErrInvalidTarget, e.Part, e.Reason)
	}
	return fmt.Sprintf("%v: %s %q: %s", ErrInvalidTarget, e.Part, e.Value, e.Reason)
}

// Unwrap returns ErrInvalidTarget and Err, so errors.Is finds both
// ErrInvalidTarget and, for an address, ErrForbiddenAddress.
func (e *TargetError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrInvalidTarget}
	}
	return []error{ErrInvalidTarget, e.Err}
}

// AddrError says why an IP address is not allowed: the address class and
// its range.
type AddrError struct {
	// Addr is the address checked.
	Addr netip.Addr
	// Via names the IPv6 form that embeds an IPv4 address, such as
	// "IPv4-mapped IPv6 (::ffff:0:0/96)", and is "" otherwise; Class and
	// Prefix then describe the embedded IPv4 address.
	Via string
	// Embedded is the IPv4 address embedded in Addr when Via is set.
	Embedded netip.Addr
	// Class is the address class, such as "loopback" or "private, RFC 1918".
	Class string
	// Prefix is the range of the class; invalid for a class that is not
	// one range (an invalid or zoned address).
	Prefix netip.Prefix
}

// Error returns, for example, "127.0.0.1 is loopback (127.0.0.0/8)" or
// "::ffff:127.0.0.1 is IPv4-mapped IPv6 (::ffff:0:0/96) of 127.0.0.1,
// which is loopback (127.0.0.0/8)".
func (e *AddrError) Error() string {
	if e.Via != "" {
		return fmt.Sprintf("%s is %s of %s, which is %s", e.Addr, e.Via, e.Embedded, e.class())
	}
	return fmt.Sprintf("%s is %s", e.Addr, e.class())
}

// class is the class and its range, such as "loopback (127.0.0.0/8)".
func (e *AddrError) class() string {
	if e.Prefix.IsValid() {
		return e.Class + " (" + e.Prefix.String() + ")"
	}
	return e.Class
}

// withoutAddr says what e says without the address itself, for an
// address a host name resolved to: "a non-public address: private, RFC
// 1918 (10.0.0.0/8)", or "a non-public address: IPv4-mapped IPv6
// (::ffff:0:0/96) of one that is loopback (127.0.0.0/8)". The subscriber
// wrote the name, not the address: behind a name it does not own (a
// CNAME to an internal name, which the function's resolver may answer)
// the address is the deployment's, not the subscriber's, to know.
func (e *AddrError) withoutAddr() string {
	if e.Via != "" {
		return "a non-public address: " + e.Via + " of one that is " + e.class()
	}
	return "a non-public address: " + e.class()
}

// Unwrap returns ErrForbiddenAddress.
func (e *AddrError) Unwrap() error { return ErrForbiddenAddress }

type addrClass struct {
	prefix netip.Prefix
	class  string
	// metadata: refused even with AllowPrivate (cloud credentials).
	metadata bool
}

func classes(metadata bool, pairs ...string) []addrClass {
	out := make([]addrClass, 0, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, addrClass{netip.MustParsePrefix(pairs[i]), pairs[i+1], metadata})
	}
	return out
}

// The refused IPv4 ranges, most specific first: every range of the IANA
// IPv4 Special-Purpose Address Registry that is not globally reachable,
// plus multicast and the deprecated 6to4 relay anycast range.
var v4Classes = append(classes(true,
	"169.254.169.254/32", "the instance metadata service, link-local",
	"169.254.170.2/32", "the ECS task metadata service, link-local",
	"169.254.170.23/32", "the EKS Pod Identity agent, link-local",
), classes(false,
	"255.255.255.255/32", "limited broadcast",
	"0.0.0.0/32", "unspecified",
	"0.0.0.0/8", `"this network", RFC 791`,
	"10.0.0.0/8", "private, RFC 1918",
	"100.64.0.0/10", "shared address space, CGNAT, RFC 6598",
	"127.0.0.0/8", "loopback",
	"169.254.0.0/16", "link-local",
	"172.16.0.0/12", "private, RFC 1918",
	"192.0.0.0/24", "IETF protocol assignments, RFC 6890",
	"192.0.2.0/24", "documentation, RFC 5737",
	"192.88.99.0/24", "6to4 relay anycast, deprecated, RFC 7526",
	"192.168.0.0/16", "private, RFC 1918",
	"198.18.0.0/15", "benchmarking, RFC 2544",
	"198.51.100.0/24", "documentation, RFC 5737",
	"203.0.113.0/24", "documentation, RFC 5737",
	"224.0.0.0/4", "multicast",
	"240.0.0.0/4", "reserved, RFC 1112",
)...)

// The refused IPv6 ranges, most specific first. Anything outside
// 2000::/3 (global unicast) is refused as well; the embedded-IPv4 forms
// are unwrapped before (see CheckAddr).
var v6Classes = append(classes(true,
	"fd00:ec2::254/128", "the instance metadata service, unique local",
	"fd00:ec2::23/128", "the EKS Pod Identity agent, unique local",
), classes(false,
	"::/128", "unspecified",
	"::1/128", "loopback",
	"::/96", "IPv4-compatible IPv6, deprecated, RFC 4291",
	"64:ff9b:1::/48", "local-use NAT64, RFC 8215",
	"100::/64", "discard-only, RFC 6666",
	"2001::/32", "Teredo, RFC 4380",
	"2001::/23", "IETF protocol assignments, RFC 2928",
	"2001:db8::/32", "documentation, RFC 3849",
	"3fff::/20", "documentation, RFC 9637",
	"fc00::/7", "unique local, private, RFC 4193",
	"fe80::/10", "link-local",
	"fec0::/10", "site-local, deprecated, RFC 3879",
	"ff00::/8", "multicast",
)...)

var globalUnicast = netip.MustParsePrefix("2000::/3")

// IPv6 forms that embed an IPv4 address, and where.
var embeddings = []struct {
	prefix netip.Prefix
	via    string
	offset int // byte offset of the IPv4 address
}{
	{netip.MustParsePrefix("::ffff:0:0/96"), "IPv4-mapped IPv6 (::ffff:0:0/96)", 12},
	{netip.MustParsePrefix("::ffff:0:0:0/96"), "IPv4-translated IPv6 (::ffff:0:0:0/96)", 12},
	{netip.MustParsePrefix("64:ff9b::/96"), "NAT64 (64:ff9b::/96)", 12},
	{netip.MustParsePrefix("2002::/16"), "6to4 (2002::/16)", 2},
}

// CheckAddr returns nil if addr is a public unicast address a webhook may
// be sent to, else an *AddrError (wrapping ErrForbiddenAddress) naming
// its class. Refused:
//
//   - IPv4: unspecified and 0.0.0.0/8, loopback 127/8, private (RFC 1918:
//     10/8, 172.16/12, 192.168/16), CGNAT 100.64/10, link-local
//     169.254/16 (with the cloud metadata addresses 169.254.169.254,
//     169.254.170.2 and 169.254.170.23 named as such), IETF protocol
//     assignments 192.0.0/24, benchmarking 198.18/15, the deprecated 6to4
//     relay 192.88.99/24, multicast 224/4, reserved 240/4 and broadcast
//     255.255.255.255; and the documentation ranges 192.0.2/24,
//     198.51.100/24 and 203.0.113/24. The rule is "globally reachable"
//     in the IANA special-purpose registries: documentation addresses
//     are not, so they are refused too.
//   - IPv6: unspecified ::, loopback ::1, IPv4-compatible ::/96, unique
//     local fc00::/7 (including the metadata address fd00:ec2::254),
//     link-local fe80::/10, site-local fec0::/10, multicast ff00::/8,
//     discard-only 100::/64, local-use NAT64 64:ff9b:1::/48, Teredo and
//     the other IETF assignments in 2001::/23, documentation
//     2001:db8::/32 and 3fff::/20, and anything outside global unicast
//     2000::/3.
//   - IPv6 forms that embed an IPv4 address are judged by that address:
//     IPv4-mapped ::ffff:a.b.c.d, IPv4-translated ::ffff:0:a.b.c.d, NAT64
//     64:ff9b::a.b.c.d and 6to4 2002:AABB:CCDD::/48. So
//     ::ffff:127.0.0.1 is refused and 64:ff9b::8.8.8.8 is allowed.
//   - Addresses with a zone (fe80::1%eth0) and the invalid Addr.
func CheckAddr(addr netip.Addr) error {
	return checkAddr(addr, false)
}

// checkAddr is CheckAddr; with allowPrivate it refuses only the cloud
// metadata addresses (in any form) and invalid addresses.
func checkAddr(addr netip.Addr, allowPrivate bool) error {
	if !addr.IsValid() {
		return &AddrError{Addr: addr, Class: "not a valid IP address"}
	}
	if addr.Zone() != "" {
		return &AddrError{Addr: addr, Class: "scoped (has a zone)"}
	}
	if addr.Is6() {
		for _, e := range embeddings {
			if !e.prefix.Contains(addr) {
				continue
			}
			b := addr.As16()
			v4 := netip.AddrFrom4([4]byte(b[e.offset : e.offset+4]))
			if err := checkAddr(v4, allowPrivate); err != nil {
				ae := err.(*AddrError)
				return &AddrError{Addr: addr, Via: e.via, Embedded: v4, Class: ae.Class, Prefix: ae.Prefix}
			}
			if e.offset == 12 {
				return nil // the whole address is the IPv4 one
			}
			break // 6to4: the IPv6 address is judged below too
		}
	}
	table := v4Classes
	if addr.Is6() {
		table = v6Classes
	}
	for _, c := range table {
		if c.prefix.Contains(addr) && (c.metadata || !allowPrivate) {
			return &AddrError{Addr: addr, Class: c.class, Prefix: c.prefix}
		}
	}
	if addr.Is6() && !allowPrivate && !globalUnicast.Contains(addr) {
		return &AddrError{Addr: addr, Class: "not global unicast (outside 2000::/3)"}
	}
	return nil
}

// allowedPort reports whether a webhook may use port p: 443 or an
// unprivileged port (1024 to 65535). The other privileged ports (22, 25,
// 80, ...) belong to services that are not webhook receivers.
func allowedPort(p uint16) bool { return p == 443 || p >= 1024 }

// ParseTarget checks the syntax of a webhook URL, without any DNS lookup
// or address check (ValidateTarget adds those): at most MaxURLLength
// bytes; an absolute "https" URL; no userinfo ("user:password@"); no
// fragment; a host that is an IP literal without zone or an ASCII DNS
// name (letters, digits and hyphens; labels of 1 to 63 characters; at
// most 253 characters; the last label starting with a letter, which
// rules out numeric spellings of IPv4 such as "2130706433" or "0x7f.1");
// and port 443 (the default) or 1024 to 65535. Any path and query are
// allowed. The error is a *TargetError.
func ParseTarget(rawURL string) (*url.URL, error) {
	if rawURL == "" {
		return nil, &TargetError{Part: "url", Reason: "empty"}
	}
	if len(rawURL) > MaxURLLength {
		return nil, &TargetError{Part: "url", Reason: fmt.Sprintf("%d bytes long, at most %d allowed", len(rawURL), MaxURLLength)}
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		// url.Error repeats the whole URL, which may hold credentials.
		reason := err.Error()
		if ue, ok := errors.AsType[*url.Error](err); ok {
			reason = ue.Err.Error()
		}
		return nil, &TargetError{Part: "url", Reason: "does not parse: " + reason}
	}
	if u.Scheme == "" {
		return nil, &TargetError{Part: "scheme", Reason: `missing; the URL must start with "https://"`}
	}
	if u.Scheme != "https" {
		return nil, &TargetError{Part: "scheme", Value: u.Scheme, Reason: `must be "https"`}
	}
	if u.Opaque != "" {
		return nil, &TargetError{Part: "url", Reason: `not of the form "https://host/path"`}
	}
	if u.User != nil {
		return nil, &TargetError{Part: "userinfo", Reason: "credentials in the URL are not allowed; the receiver authenticates messages by their signature"}
	}
	if u.Fragment != "" || strings.Contains(rawURL, "#") {
		return nil, &TargetError{Part: "fragment", Value: u.EscapedFragment(), Reason: "not allowed (a fragment is never sent to the server)"}
	}
	host := u.Hostname()
	if host == "" {
		return nil, &TargetError{Part: "host", Reason: "missing"}
	}
	if strings.HasPrefix(u.Host, "[") {
		a, err := netip.ParseAddr(host)
		if err != nil {
			return nil, &TargetError{Part: "host", Value: host, Reason: "not a valid IPv6 address"}
		}
		if a.Zone() != "" {
			return nil, &TargetError{Part: "host", Value: host, Reason: "an IPv6 zone is not allowed"}
		}
	} else if _, err := netip.ParseAddr(host); err != nil {
		if reason := checkHostname(host); reason != "" {
			return nil, &TargetError{Part: "host", Value: host, Reason: reason}
		}
	}
	if p := u.Port(); p != "" {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil || n == 0 {
			return nil, &TargetError{Part: "port", Value: p, Reason: "not a port number (1 to 65535)"}
		}
		if !allowedPort(uint16(n)) {
			return nil, &TargetError{Part: "port", Value: p, Reason: "not allowed; use 443 (the default) or a port from 1024 to 65535"}
		}
	}
	return u, nil
}

// checkHostname returns why host is not an acceptable DNS name, or "".
func checkHostname(host string) string {
	name := strings.TrimSuffix(host, ".")
	if len(name) > 253 {
		return fmt.Sprintf("%d characters long, a DNS name has at most 253", len(name))
	}
	labels := strings.Split(name, ".")
	for i, l := range labels {
		if l == "" {
			return "has an empty label"
		}
		if len(l) > 63 {
			return fmt.Sprintf("label %d is %d characters long, at most 63 allowed", i+1, len(l))
		}
		for j := 0; j < len(l); j++ {
			c := l[j]
			if c >= 0x80 {
				return "not ASCII; write an internationalized name in its punycode (xn--) form"
			}
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-') {
				return fmt.Sprintf("character %q is not allowed in a host name (letters, digits, '-')", c)
			}
		}
		if l[0] == '-' || l[len(l)-1] == '-' {
			return fmt.Sprintf("label %q starts or ends with '-'", l)
		}
	}
	if tld := labels[len(labels)-1]; !('a' <= tld[0] && tld[0] <= 'z' || 'A' <= tld[0] && tld[0] <= 'Z') {
		return "not an IP address, and not a DNS name (the last label must start with a letter)"
	}
	return ""
}

// Names that never lead to the public internet: RFC 6761 "localhost",
// RFC 6762 ".local" (mDNS), RFC 8375 ".home.arpa", ICANN's private-use
// ".internal" (AWS's ec2.internal, compute.internal) and the common
// ".localdomain".
var localSuffixes = []string{".localhost", ".local", ".home.arpa", ".internal", ".localdomain"}

// Resolver looks up the IP addresses of a host name. *net.Resolver is
// one; tests can pass a fake.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// ValidateTarget checks that rawURL may be a webhook target: the syntax
// of ParseTarget, a fully qualified host name (not a single label like
// "intranet", nor under .localhost, .local, .home.arpa, .internal or
// .localdomain), and every address the host is or resolves to passes
// CheckAddr (a name with one private address among public ones is
// refused). For a name, the error's text gives the class of the address
// and not the address itself (the *AddrError in TargetError.Err has it). r resolves the name; nil means net.DefaultResolver.
//
// Run it when a subscription is created or changed, to give the
// subscriber a clear error at once. It does not protect the delivery by
// itself, since DNS answers can change (DNS rebinding): the client of
// NewHTTPClient checks the address it actually connects to (its dialer's control function).
//
// The error is a *TargetError (wrapping ErrInvalidTarget, and
// ErrForbiddenAddress for an address), or ctx's error.
func ValidateTarget(ctx context.Context, rawURL string, r Resolver) (*url.URL, error) {
	u, err := ParseTarget(rawURL)
	if err != nil {
		return nil, err
	}
	host := u.Hostname()
	if a, err := netip.ParseAddr(host); err == nil {
		if err := CheckAddr(a); err != nil {
			return nil, &TargetError{Part: "host", Value: host, Reason: err.Error(), Err: err}
		}
		return u, nil
	}
	name := strings.ToLower(strings.TrimSuffix(host, "."))
	if !strings.Contains(name, ".") {
		return nil, &TargetError{Part: "host", Value: host, Reason: "a single-label name is resolved inside the local network; use a fully qualified domain name"}
	}
	for _, s := range localSuffixes {
		if strings.HasSuffix(name, s) {
			return nil, &TargetError{Part: "host", Value: host, Reason: fmt.Sprintf("names under %q are local, never public", s)}
		}
	}
	if r == nil {
		r = net.DefaultResolver
	}
	addrs, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: %w", ErrLookupUnavailable, ctx.Err())
		}
		var dnsErr *net.DNSError
		if errors.As(err, &dnsErr) && !dnsErr.IsNotFound && (dnsErr.IsTimeout || dnsErr.IsTemporary) {
			return nil, fmt.Errorf("%w: %s: %w", ErrLookupUnavailable, host, err)
		}
		// localText: the resolver's address is none of the subscriber's business.
		return nil, &TargetError{Part: "host", Value: host, Reason: "does not resolve: " + localText(err), Err: err}
	}
	if len(addrs) == 0 {
		return nil, &TargetError{Part: "host", Value: host, Reason: "resolves to no address"}
	}
	for _, a := range addrs {
		if err := CheckAddr(a); err != nil {
			return nil, &TargetError{Part: "host", Value: host, Reason: "resolves to " + err.(*AddrError).withoutAddr(), Err: err}
		}
	}
	return u, nil
}
