package webhook

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Fuzz targets for every parser of client input. `go test` runs the
// seeds; run one with `go test -fuzz=FuzzVerify ./internal/webhook/`.

func FuzzParseSecret(f *testing.F) {
	for _, s := range []string{vectorSecret, "", "whsec_", "whsec_=", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", NewSecret().Encode()} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := ParseSecret(in)
		if err != nil {
			if !s.IsZero() {
				t.Fatalf("ParseSecret(%q) = non-zero secret and error %v", in, err)
			}
			return
		}
		if n := len(s.key); n < MinSecretBytes || n > MaxSecretBytes {
			t.Fatalf("ParseSecret(%q) = %d-byte key", in, n)
		}
		back, err := ParseSecret(s.Encode())
		if err != nil || string(back.key) != string(s.key) {
			t.Fatalf("ParseSecret(%q).Encode() = %q does not parse back: %v", in, s.Encode(), err)
		}
	})
}

func FuzzVerify(f *testing.F) {
	f.Add(vectorMsgID, "1614265330", vectorSignature, []byte(vectorBody))
	f.Add(vectorMsgID, "1614265330", vectorSignature+" v1a,abc", []byte(vectorBody))
	f.Add("", "", "", []byte(nil))
	f.Add("a.b", "01", "v1,", []byte("x"))
	f.Add(vectorMsgID, "99999999999999999999", "v1,,v1 v1,====", []byte(vectorBody))
	secret := mustSecret(f, vectorSecret)
	v := &Verifier{Secrets: []Secret{secret}, Now: fixedClock(vectorTimestamp, 0)}
	f.Fuzz(func(t *testing.T, id, ts, sig string, body []byte) {
		h := http.Header{}
		h.Set(HeaderID, id)
		h.Set(HeaderTimestamp, ts)
		h.Set(HeaderSignature, sig)
		err := v.Verify(h, body)
		if err != nil {
			return
		}
		// Accepted: the header must hold the signature we would make.
		want, serr := Signature(id, time.Unix(mustAtoi(t, ts), 0), body, secret)
		if serr != nil || !strings.Contains(" "+sig+" ", " "+want+" ") {
			t.Fatalf("Verify accepted id %q ts %q sig %q body %q; want signature %q (%v)", id, ts, sig, body, want, serr)
		}
	})
}

func mustAtoi(t *testing.T, s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("accepted timestamp %q does not parse: %v", s, err)
	}
	return n
}

func FuzzParseTarget(f *testing.F) {
	for _, s := range []string{"https://example.com/hook", "https://u:p@example.com", "http://x", "https://[::1]:443/", "https://0x7f.1/", "https://a..b/", "https://example.com:22/", "https://example.com/#x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		u, err := ParseTarget(in)
		if err != nil {
			// An error may quote a bad escape or character, never a
			// whole URL with userinfo.
			if len(in) > 8 && strings.Contains(in, "@") && strings.Contains(err.Error(), in) {
				t.Fatalf("ParseTarget(%q): error repeats the URL: %v", in, err)
			}
			return
		}
		if u.Scheme != "https" || u.User != nil || u.Fragment != "" || u.Hostname() == "" {
			t.Fatalf("ParseTarget(%q) accepted %#v", in, u)
		}
		if p := u.Port(); p != "" {
			n, err := strconv.Atoi(p)
			if err != nil || !allowedPort(uint16(n)) || n > 65535 {
				t.Fatalf("ParseTarget(%q) accepted port %q", in, p)
			}
		}
	})
}
