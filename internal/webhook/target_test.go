package webhook

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckAddr(t *testing.T) {
	tests := []struct {
		addr  string
		class string // "" means allowed; else a part of the error
	}{
		// Public.
		{"8.8.8.8", ""},
		{"1.1.1.1", ""},
		{"93.184.215.14", ""},
		{"11.0.0.0", ""},
		{"100.63.255.255", ""},  // just below CGNAT
		{"100.128.0.0", ""},     // just above CGNAT
		{"172.15.255.255", ""},  // just below 172.16/12
		{"172.32.0.0", ""},      // just above
		{"192.167.255.255", ""}, // just below 192.168/16
		{"169.253.255.255", ""},
		{"223.255.255.255", ""},
		{"2606:4700:4700::1111", ""},
		{"2001:4860:4860::8888", ""},
		{"2a00:1450:4001::1", ""},
		{"::ffff:8.8.8.8", ""},         // IPv4-mapped public
		{"::ffff:0:8.8.8.8", ""},       // IPv4-translated public
		{"64:ff9b::8.8.8.8", ""},       // NAT64 of a public address
		{"2002:808:808::1", ""},        // 6to4 of 8.8.8.8
		{"2001:200::1", ""},            // just above 2001::/23
		{"2001:db7:ffff::1", ""},       // just below documentation
		{"3fff:1000::1", ""},           // just above 3fff::/20
		{"2c0f:fb50:4002::1", ""},      // still 2000::/3
		{"3ffe:ffff:ffff::1", ""},      // still 2000::/3
		{"64:ff9b::5db8:d70e", ""},     // NAT64 of 93.184.215.14, in hex
		{"::ffff:100.128.0.1", ""},     // mapped, just above CGNAT
		{"2002:5db8:d70e:1::abcd", ""}, // 6to4 of 93.184.215.14

		// IPv4 classes.
		{"0.0.0.0", "unspecified (0.0.0.0/32)"},
		{"0.1.2.3", `"this network", RFC 791 (0.0.0.0/8)`},
		{"10.0.0.1", "private, RFC 1918 (10.0.0.0/8)"},
		{"10.255.255.255", "private, RFC 1918"},
		{"172.16.0.1", "private, RFC 1918 (172.16.0.0/12)"},
		{"172.31.255.255", "private, RFC 1918 (172.16.0.0/12)"},
		{"192.168.1.1", "private, RFC 1918 (192.168.0.0/16)"},
		{"100.64.0.1", "CGNAT, RFC 6598 (100.64.0.0/10)"},
		{"100.127.255.255", "CGNAT"},
		{"127.0.0.1", "loopback (127.0.0.0/8)"},
		{"127.255.255.254", "loopback"},
		{"169.254.169.254", "the instance metadata service, link-local (169.254.169.254/32)"},
		{"169.254.170.2", "ECS task metadata"},
		{"169.254.170.23", "EKS Pod Identity"},
		{"169.254.169.253", "link-local (169.254.0.0/16)"}, // the VPC's DNS server
		{"169.254.0.1", "link-local (169.254.0.0/16)"},
		{"192.0.0.8", "IETF protocol assignments"},
		{"192.0.2.1", "documentation, RFC 5737 (192.0.2.0/24)"},
		{"198.51.100.7", "documentation, RFC 5737 (198.51.100.0/24)"},
		{"203.0.113.9", "documentation, RFC 5737 (203.0.113.0/24)"},
		{"192.88.99.1", "6to4 relay anycast"},
		{"198.18.0.1", "benchmarking, RFC 2544 (198.18.0.0/15)"},
		{"198.19.255.255", "benchmarking"},
		{"224.0.0.1", "multicast (224.0.0.0/4)"},
		{"239.255.255.250", "multicast"},
		{"240.0.0.1", "reserved, RFC 1112 (240.0.0.0/4)"},
		{"255.255.255.254", "reserved"},
		{"255.255.255.255", "limited broadcast (255.255.255.255/32)"},

		// IPv6 classes.
		{"::", "unspecified (::/128)"},
		{"::1", "loopback (::1/128)"},
		{"::2", "IPv4-compatible IPv6"},
		{"::127.0.0.1", "IPv4-compatible IPv6"},
		{"fc00::1", "unique local, private, RFC 4193 (fc00::/7)"},
		{"fd12:3456:789a::1", "unique local"},
		{"fd00:ec2::254", "the instance metadata service, unique local"},
		{"fd00:ec2::23", "EKS Pod Identity"},
		{"fe80::1", "link-local (fe80::/10)"},
		{"febf:ffff::1", "link-local"},
		{"fec0::1", "site-local"},
		{"ff02::1", "multicast (ff00::/8)"},
		{"ff0e::1", "multicast"},
		{"100::1", "discard-only"},
		{"64:ff9b:1::1", "local-use NAT64"},
		{"2001::1", "Teredo, RFC 4380 (2001::/32)"},
		{"2001:2::1", "IETF protocol assignments, RFC 2928 (2001::/23)"},
		{"2001:db8::1", "documentation, RFC 3849 (2001:db8::/32)"},
		{"3fff::1", "documentation, RFC 9637 (3fff::/20)"},
		{"4000::1", "not global unicast (outside 2000::/3)"},
		{"5f00::1", "not global unicast"},
		{"1::1", "not global unicast"},
		{"fe80::1%eth0", "scoped (has a zone)"},

		// IPv4 embedded in IPv6: judged by the IPv4 address.
		{"::ffff:127.0.0.1", "::ffff:127.0.0.1 is IPv4-mapped IPv6 (::ffff:0:0/96) of 127.0.0.1, which is loopback (127.0.0.0/8)"},
		{"::ffff:7f00:1", "IPv4-mapped IPv6 (::ffff:0:0/96) of 127.0.0.1, which is loopback"},
		{"::ffff:10.0.0.1", "IPv4-mapped IPv6 (::ffff:0:0/96) of 10.0.0.1, which is private"},
		{"::ffff:169.254.169.254", "of 169.254.169.254, which is the instance metadata service"},
		{"::ffff:100.64.0.1", "which is shared address space"},
		{"::ffff:0.0.0.0", "which is unspecified"},
		{"::ffff:0:127.0.0.1", "IPv4-translated IPv6 (::ffff:0:0:0/96) of 127.0.0.1, which is loopback"},
		{"::ffff:0:192.168.0.1", "IPv4-translated IPv6 (::ffff:0:0:0/96) of 192.168.0.1, which is private"},
		{"64:ff9b::7f00:1", "NAT64 (64:ff9b::/96) of 127.0.0.1, which is loopback"},
		{"64:ff9b::a9fe:a9fe", "NAT64 (64:ff9b::/96) of 169.254.169.254, which is the instance metadata service"},
		{"64:ff9b::10.1.2.3", "NAT64 (64:ff9b::/96) of 10.1.2.3, which is private"},
		{"2002:7f00:1::1", "6to4 (2002::/16) of 127.0.0.1, which is loopback"},
		{"2002:c0a8:101::1", "6to4 (2002::/16) of 192.168.1.1, which is private"},
		{"2002:a9fe:a9fe::", "6to4 (2002::/16) of 169.254.169.254"},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			a := netip.MustParseAddr(tt.addr)
			err := CheckAddr(a)
			if tt.class == "" {
				assert.NoError(t, err, "CheckAddr(%s)", tt.addr)
				return
			}
			require.ErrorIs(t, err, ErrForbiddenAddress, "CheckAddr(%s) = nil, want %q", tt.addr, tt.class)
			ae, ok := errors.AsType[*AddrError](err)
			require.True(t, ok)
			assert.Equal(t, a, ae.Addr)
			assert.Contains(t, err.Error(), tt.class, "CheckAddr(%s)", tt.addr)
		})
	}
	assert.ErrorContains(t, CheckAddr(netip.Addr{}), "not a valid IP address")
}

func TestCheckAddrAllowPrivate(t *testing.T) {
	for _, s := range []string{"127.0.0.1", "10.0.0.1", "192.168.1.1", "100.64.0.1", "169.254.0.1", "::1", "fe80::1", "fd12::1", "::ffff:127.0.0.1", "8.8.8.8", "2606:4700:4700::1111"} {
		assert.NoError(t, checkAddr(netip.MustParseAddr(s), true), "checkAddr(%s, allowPrivate)", s)
	}
	// The cloud metadata services stay refused, in every spelling.
	for _, s := range []string{"169.254.169.254", "169.254.170.2", "169.254.170.23", "fd00:ec2::254", "fd00:ec2::23", "::ffff:169.254.169.254", "::ffff:0:169.254.169.254", "64:ff9b::a9fe:a9fe", "2002:a9fe:a9fe::1"} {
		assert.ErrorIs(t, checkAddr(netip.MustParseAddr(s), true), ErrForbiddenAddress, "checkAddr(%s, allowPrivate)", s)
	}
	assert.Error(t, checkAddr(netip.Addr{}, true))
}

func TestParseTarget(t *testing.T) {
	tests := []struct {
		in     string
		part   string // "" means valid
		errHas string
	}{
		{"https://example.com", "", ""},
		{"https://example.com/hooks/1?tenant=a&x=%20", "", ""},
		{"https://Hooks.EXAMPLE.com:8443/p", "", ""},
		{"https://example.com:443/", "", ""},
		{"https://example.com:1024/", "", ""},
		{"https://example.com:65535/", "", ""},
		{"https://example.com./", "", ""},
		{"HTTPS://example.com/", "", ""},
		{"https://xn--bcher-kva.example/", "", ""},
		{"https://a-b.c0.example/", "", ""},
		{"https://1.2.3.4/", "", ""},
		{"https://127.0.0.1:8443/", "", ""}, // syntax only: ValidateTarget refuses it
		{"https://[2606:4700::1]:8443/", "", ""},
		{"https://" + strings.Repeat("a", 63) + ".example/", "", ""},
		{"https://example.com/" + strings.Repeat("a", MaxURLLength-20), "", ""}, // 2048 bytes
		{"https://" + strings.Repeat("a.", 123) + "example/", "", ""},           // a 253-character name
		{"https://zZ9.example/", "", ""},
		{"https://example.zone/", "", ""},
		{"https://EXAMPLE.AERO/", "", ""},
		{"https://EXAMPLE.ZA/", "", ""},

		{"", "url", "empty"},
		{"https://example.com/" + strings.Repeat("a", MaxURLLength), "url", "at most 2048 allowed"},
		{"http://example.com/", "scheme", `scheme "http": must be "https"`},
		{"ftp://example.com/", "scheme", `scheme "ftp"`},
		{"example.com/hook", "scheme", `scheme: missing; the URL must start with "https://"`},
		{"//example.com/hook", "scheme", "missing"},
		{"https:example.com", "url", "not of the form"},
		{"https://user:hunter2@example.com/", "userinfo", "credentials in the URL are not allowed"},
		{"https://user@example.com/", "userinfo", "credentials"},
		{"https://@example.com/", "userinfo", "credentials"},
		{"https://example.com/#frag", "fragment", `fragment "frag": not allowed`},
		{"https://example.com/#", "fragment", "not allowed"},
		{"https:///path", "host", "host: missing"},
		{"https://:8443/", "host", "missing"},
		{"https://example.com:22/", "port", `port "22": not allowed; use 443`},
		{"https://example.com:80/", "port", "not allowed"},
		{"https://example.com:1023/", "port", "not allowed"},
		{"https://example.com:0/", "port", "not a port number"},
		{"https://example.com:65536/", "port", "not a port number"},
		{"https://example.com:abc/", "url", "does not parse"},
		{"https://exa mple.com/", "url", "does not parse"},
		{"https://example.com/\n", "url", "does not parse"},
		{"https://[fe80::1%25eth0]/", "host", "zone"},
		{"https://2130706433/", "host", "last label must start with a letter"},
		{"https://0x7f000001/", "host", "last label must start with a letter"},
		{"https://0x7f.1/", "host", "last label must start with a letter"},
		{"https://127.1/", "host", "last label must start with a letter"},
		{"https://010.0.0.1/", "host", "last label must start with a letter"}, // octal spelling
		{"https://exa_mple.com/", "host", `character '_' is not allowed`},
		{"https://bücher.example/", "host", "punycode"},
		{"https://-a.example/", "host", "starts or ends with '-'"},
		{"https://a-.example/", "host", "starts or ends with '-'"},
		{"https://a..example/", "host", "empty label"},
		{"https://" + strings.Repeat("a", 64) + ".example/", "host", "label 1 is 64 characters long"},
		{"https://" + strings.Repeat("a.", 127) + "example/", "host", "at most 253"},
		{"https://" + strings.Repeat("a.", 123) + "examples/", "host", "254 characters long"},
		{"https://a%80b.example/", "host", "punycode"}, // the smallest non-ASCII byte
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			u, err := ParseTarget(tt.in)
			if tt.part == "" {
				require.NoError(t, err, "ParseTarget(%q)", tt.in)
				assert.Equal(t, "https", u.Scheme)
				return
			}
			require.ErrorIs(t, err, ErrInvalidTarget, "ParseTarget(%q) = %v, want an error", tt.in, u)
			te, ok := errors.AsType[*TargetError](err)
			require.True(t, ok)
			assert.Equal(t, tt.part, te.Part, "ParseTarget(%q): %v", tt.in, err)
			assert.Contains(t, err.Error(), tt.errHas)
			assert.NotContains(t, err.Error(), "hunter2", "the error must not repeat credentials")
		})
	}
}

// fakeResolver answers from a map and counts lookups.
type fakeResolver struct {
	mu      sync.Mutex
	answers map[string][]netip.Addr
	errs    map[string]error
	lookups []string
}

func (f *fakeResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lookups = append(f.lookups, network+" "+host)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err, ok := f.errs[host]; ok {
		return nil, err
	}
	if a, ok := f.answers[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func addrs(ss ...string) []netip.Addr {
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParseAddr(s)
	}
	return out
}

func TestValidateTarget(t *testing.T) {
	errTemporary := &net.DNSError{Err: "server misbehaving", Name: "flaky.example.com", IsTemporary: true}
	r := &fakeResolver{
		answers: map[string][]netip.Addr{
			"hooks.example.com":     addrs("93.184.215.14"),
			"dual.example.com":      addrs("93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"),
			"mixed.example.com":     addrs("93.184.215.14", "10.0.0.7"),
			"mapped.example.com":    addrs("::ffff:127.0.0.1"),
			"metadata.example.com":  addrs("169.254.169.254"),
			"ula.example.com":       addrs("2606:4700::1", "fd00::1"),
			"trailing.example.com.": addrs("1.1.1.1"),
			"empty.example.com":     {},
		},
		errs: map[string]error{"flaky.example.com": errTemporary},
	}
	tests := []struct {
		in       string
		errHas   string // "" means valid
		lookup   bool   // a DNS lookup is expected
		wantAddr bool   // errors.Is(err, ErrForbiddenAddress)
	}{
		{"https://hooks.example.com/in", "", true, false},
		{"https://dual.example.com/in", "", true, false},
		{"https://trailing.example.com./in", "", true, false},
		{"https://8.8.8.8/in", "", false, false},
		{"https://[2606:4700:4700::1111]:8443/in", "", false, false},
		{"https://mixed.example.com/in", `host "mixed.example.com": resolves to a non-public address: private, RFC 1918 (10.0.0.0/8)`, true, true},
		{"https://mapped.example.com/", "IPv4-mapped IPv6 (::ffff:0:0/96) of one that is loopback (127.0.0.0/8)", true, true},
		{"https://metadata.example.com/", "non-public address: the instance metadata service", true, true},
		{"https://ula.example.com/", "non-public address: unique local", true, true},
		{"https://empty.example.com/", "resolves to no address", true, false},
		{"https://nx.example.com/", "does not resolve: lookup nx.example.com: no such host", true, false},
		{"https://127.0.0.1:8443/", `host "127.0.0.1": 127.0.0.1 is loopback`, false, true},
		{"https://[::1]/", `host "::1": ::1 is loopback`, false, true},
		{"https://[::ffff:a9fe:a9fe]/", "instance metadata service", false, true},
		{"https://169.254.169.254/latest/meta-data/", "instance metadata service", false, true},
		{"https://10.0.0.1/", "private", false, true},
		{"https://localhost/", "single-label name", false, false},
		{"https://intranet/", "single-label name", false, false},
		{"https://intranet./", "single-label name", false, false},
		{"https://app.localhost/", `names under ".localhost" are local`, false, false},
		{"https://printer.local/", `".local"`, false, false},
		{"https://ip-10-0-0-1.ec2.internal/", `".internal"`, false, false},
		{"https://metadata.google.internal/", `".internal"`, false, false},
		{"https://nas.home.arpa/", `".home.arpa"`, false, false},
		{"https://box.LocalDomain/", `".localdomain"`, false, false},
		{"http://hooks.example.com/", `scheme "http"`, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			r.lookups = nil
			u, err := ValidateTarget(context.Background(), tt.in, r)
			assert.Equal(t, tt.lookup, len(r.lookups) == 1, "lookups: %v", r.lookups)
			if tt.errHas == "" {
				require.NoError(t, err, "ValidateTarget(%q)", tt.in)
				assert.Equal(t, tt.in, u.String())
				return
			}
			require.ErrorIs(t, err, ErrInvalidTarget, "ValidateTarget(%q) = %v, want an error", tt.in, u)
			assert.Contains(t, err.Error(), tt.errHas)
			assert.Equal(t, tt.wantAddr, errors.Is(err, ErrForbiddenAddress), "%v", err)
		})
	}

	// A temporary failure or a timeout says nothing about the URL: it is
	// ErrLookupUnavailable (a 503 to the client), not ErrInvalidTarget,
	// and the resolver's error stays reachable.
	_, err := ValidateTarget(context.Background(), "https://flaky.example.com/", r)
	var dnsErr *net.DNSError
	require.ErrorAs(t, err, &dnsErr)
	assert.True(t, dnsErr.IsTemporary)
	assert.ErrorIs(t, err, ErrLookupUnavailable)
	assert.NotErrorIs(t, err, ErrInvalidTarget)
	r.errs["slow.example.com"] = &net.DNSError{Err: "i/o timeout", Name: "slow.example.com", IsTimeout: true}
	_, err = ValidateTarget(context.Background(), "https://slow.example.com/", r)
	assert.ErrorIs(t, err, ErrLookupUnavailable)
	assert.NotErrorIs(t, err, ErrInvalidTarget)
	assert.ErrorContains(t, err, "slow.example.com")
	// A name that does not exist is the URL's fault.
	r.errs["gone.example.com"] = &net.DNSError{Err: "no such host", Name: "gone.example.com", IsNotFound: true, IsTemporary: true}
	_, err = ValidateTarget(context.Background(), "https://gone.example.com/", r)
	assert.ErrorIs(t, err, ErrInvalidTarget)
	assert.NotErrorIs(t, err, ErrLookupUnavailable)
	r.errs["odd.example.com"] = errors.New("something else")
	_, err = ValidateTarget(context.Background(), "https://odd.example.com/", r)
	assert.ErrorIs(t, err, ErrInvalidTarget, "any other lookup error refuses the URL")
	// The host is looked up as written, for any IP version.
	r.lookups = nil
	_, err = ValidateTarget(context.Background(), "https://trailing.example.com./x", r)
	require.NoError(t, err)
	assert.Equal(t, []string{"ip trailing.example.com."}, r.lookups)
}

func TestValidateTargetCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := ValidateTarget(ctx, "https://hooks.example.com/", &fakeResolver{})
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorIs(t, err, ErrLookupUnavailable)
	assert.NotErrorIs(t, err, ErrInvalidTarget, "a canceled lookup says nothing about the URL")
}

func TestValidateTargetDefaultResolver(t *testing.T) {
	// A nil resolver is net.DefaultResolver; IP literals need no lookup.
	_, err := ValidateTarget(context.Background(), "https://1.1.1.1/", nil)
	assert.NoError(t, err)
	_, err = ValidateTarget(context.Background(), "https://127.0.0.1/", nil)
	assert.ErrorIs(t, err, ErrForbiddenAddress)
}

func TestDialControlTable(t *testing.T) {
	tests := []struct {
		network, address string
		allowPrivate     bool
		errHas           string
	}{
		{"tcp4", "8.8.8.8:443", false, ""},
		{"tcp6", "[2606:4700:4700::1111]:8443", false, ""},
		{"tcp", "1.1.1.1:443", false, ""},
		{"tcp4", "127.0.0.1:443", false, "127.0.0.1 is loopback"},
		{"tcp4", "10.0.0.1:443", false, "private"},
		{"tcp6", "[::ffff:127.0.0.1]:443", false, "IPv4-mapped IPv6"},
		{"tcp6", "[fe80::1%eth0]:443", false, "zone"},
		{"tcp4", "8.8.8.8:22", false, "port 22 is not allowed"},
		{"tcp4", "8.8.8.8:80", false, "port 80 is not allowed"},
		{"udp4", "8.8.8.8:443", false, `network "udp4" is not TCP`},
		{"tcp", "example.com:443", false, "not an IP address and port"},
		{"tcp4", "127.0.0.1:22", true, ""},
		{"tcp6", "[::1]:8080", true, ""},
		{"tcp4", "169.254.169.254:80", true, "instance metadata service"},
		{"tcp6", "[fd00:ec2::254]:80", true, "instance metadata service"},
		{"udp4", "127.0.0.1:443", true, "not TCP"},
	}
	for _, tt := range tests {
		err := dialControl(tt.network, tt.address, tt.allowPrivate)
		if tt.errHas == "" {
			assert.NoError(t, err, "dialControl(%s, %s, %v)", tt.network, tt.address, tt.allowPrivate)
			continue
		}
		assert.ErrorContains(t, err, tt.errHas, "dialControl(%s, %s, %v)", tt.network, tt.address, tt.allowPrivate)
	}
	// Without allowPrivate it is the strict one.
	assert.NoError(t, dialControl("tcp4", "8.8.8.8:443", false))
	assert.ErrorIs(t, dialControl("tcp4", "127.0.0.1:8443", false), ErrForbiddenAddress)
}

// TestDialControlRefusesLoopback dials a real loopback listener: with
// dialControl the connection is refused before it is made; with the
// AllowPrivate control the same dial connects.
func TestDialControlRefusesLoopback(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	accepted := make(chan struct{}, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- struct{}{}
			c.Close()
		}
	}()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	// Through a name too: the check sees the resolved address.
	for _, addr := range []string{ln.Addr().String(), net.JoinHostPort("localhost", port)} {
		d := &net.Dialer{Timeout: 5 * time.Second, ControlContext: func(_ context.Context, network, address string, _ syscall.RawConn) error {
			return dialControl(network, address, false)
		}}
		c, err := d.DialContext(context.Background(), "tcp4", addr)
		if err == nil {
			c.Close()
		}
		require.Error(t, err, "dial %s with dialControl must fail", addr)
		assert.ErrorIs(t, err, ErrForbiddenAddress, "dial %s", addr)
		assert.ErrorContains(t, err, "127.0.0.1 is loopback")
	}

	d := &net.Dialer{Timeout: 5 * time.Second, ControlContext: func(ctx context.Context, network, address string, c syscall.RawConn) error {
		return dialControl(network, address, true)
	}}
	c, err := d.DialContext(context.Background(), "tcp4", ln.Addr().String())
	require.NoError(t, err)
	c.Close()
	<-accepted
	assert.Empty(t, accepted, "the refused dials never reached the listener")
}
