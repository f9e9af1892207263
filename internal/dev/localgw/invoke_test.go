package localgw

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"
)

func echo(_ context.Context, s string) (string, error) { return s, nil }

// invoke enforces Lambda's limits at their exact values: an event or a
// response of exactly the limit passes, one byte more does not.
func TestInvokeSizeLimits(t *testing.T) {
	fn := Function{LogicalID: "Fn", Timeout: 10 * time.Second}
	quoted := func(n int) string { return strings.Repeat("a", n-2) } // its JSON has n bytes
	if _, err := invoke(context.Background(), fn, "arn", time.Minute, quoted(MaxInvokeRequestBytes), func(context.Context, string) (string, error) { return "", nil }); err != nil {
		t.Errorf("an event of exactly %d bytes: %v", MaxInvokeRequestBytes, err)
	}
	_, err := invoke(context.Background(), fn, "arn", time.Minute, quoted(MaxInvokeRequestBytes+1), echo)
	var fe *functionError
	if !errors.As(err, &fe) || fe.kind != "request-too-large" {
		t.Errorf("an event of %d bytes: %v, want request-too-large", MaxInvokeRequestBytes+1, err)
	}
	big := func(n int) func(context.Context, string) (string, error) {
		return func(context.Context, string) (string, error) { return quoted(n), nil }
	}
	out, err := invoke(context.Background(), fn, "arn", time.Minute, "", big(MaxInvokeResponseBytes))
	if err != nil || len(out) != MaxInvokeResponseBytes {
		t.Errorf("a response of exactly %d bytes: %d bytes, %v", MaxInvokeResponseBytes, len(out), err)
	}
	_, err = invoke(context.Background(), fn, "arn", time.Minute, "", big(MaxInvokeResponseBytes+1))
	if !errors.As(err, &fe) || fe.kind != "response-too-large" {
		t.Errorf("a response of %d bytes: %v, want response-too-large", MaxInvokeResponseBytes+1, err)
	}
	if got := (&functionError{"timeout", "Task timed out after 1s"}).Error(); got != "timeout: Task timed out after 1s" {
		t.Errorf("Error() = %q", got)
	}
}

// A function without a Timeout gets Lambda's default of 3 seconds; when
// the function's timeout and the integration's are equal, the function
// times out (not the integration).
func TestInvokeTimeouts(t *testing.T) {
	deadline := func(ctx context.Context, _ string) (time.Duration, error) {
		d, ok := ctx.Deadline()
		if !ok {
			return 0, errors.New("no deadline")
		}
		return time.Until(d), nil
	}
	out, err := invoke(context.Background(), Function{LogicalID: "Fn"}, "arn", time.Minute, "", deadline)
	if err != nil {
		t.Fatal(err)
	}
	var left time.Duration
	if err := json.Unmarshal(out, &left); err != nil {
		t.Fatal(err)
	}
	if left <= 2*time.Second || left > 3*time.Second {
		t.Errorf("a function without Timeout has %s left at its start, want just under 3s", left)
	}

	block := func(ctx context.Context, _ string) (string, error) {
		<-ctx.Done()
		time.Sleep(50 * time.Millisecond) // past the gateway's wait
		return "", nil
	}
	fn := Function{LogicalID: "Fn", Timeout: 30 * time.Millisecond}
	_, err = invoke(context.Background(), fn, "arn", 30*time.Millisecond, "", block)
	var fe *functionError
	if !errors.As(err, &fe) || fe.kind != "timeout" || fe.message != "Task timed out after 30ms" {
		t.Errorf("equal timeouts: %v, want the function's timeout", err)
	}
	_, err = invoke(context.Background(), fn, "arn", 20*time.Millisecond, "", block)
	if !errors.As(err, &fe) || fe.kind != "integration-timeout" || fe.message != "no response within the integration timeout, 20ms" {
		t.Errorf("a shorter integration timeout: %v", err)
	}
}

// wildcard matches like IAM resource patterns; checked against a regular
// expression built from the pattern (an independent reference) on
// random patterns and strings over a small alphabet, and on named cases.
func TestWildcard(t *testing.T) {
	cases := []struct {
		p, s string
		want bool
	}{
		{"", "", true}, {"", "a", false}, {"a", "", false}, {"*", "", true}, {"**", "", true},
		{"?", "", false}, {"?", "a", true}, {"?", "ab", false}, {"a?c", "abc", true}, {"a?c", "ac", false},
		{"a*", "a/b/c", true}, {"*b", "aab", true}, {"*b", "aba", false}, {"a*b*c", "aXbYc", true},
		{"a*b*c", "aXbY", false}, {"a*bc", "abcbc", true}, {"a*b?", "abab", false}, {"a*b?", "abbb", true}, {"abc**", "abc", true},
		{"arn:*/GET/v1/inbox", "arn:x/prod/GET/v1/inbox", true}, {"arn:*/GET/*", "arn:x/prod/POST/v1", false},
	}
	for _, c := range cases {
		if got := wildcard(c.p, c.s); got != c.want {
			t.Errorf("wildcard(%q, %q) = %v, want %v", c.p, c.s, got, c.want)
		}
	}
	ref := func(p, s string) bool {
		var b strings.Builder
		b.WriteString("^")
		for _, r := range p {
			switch r {
			case '*':
				b.WriteString(".*")
			case '?':
				b.WriteString(".")
			default:
				b.WriteString(regexp.QuoteMeta(string(r)))
			}
		}
		b.WriteString("$")
		return regexp.MustCompile(b.String()).MatchString(s)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	gen := func(alphabet string, n int) string {
		b := make([]byte, rng.IntN(n+1))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	for i := 0; i < 20000; i++ {
		p, s := gen("ab*?", 6), gen("ab", 8)
		if got, want := wildcard(p, s), ref(p, s); got != want {
			t.Fatalf("wildcard(%q, %q) = %v, the reference says %v", p, s, got, want)
		}
	}
}

// A handler's panic and its error are function errors of their own
// kinds, reported at once (not at the timeout).
func TestInvokePanicAndError(t *testing.T) {
	fn := Function{LogicalID: "Fn", Timeout: time.Hour}
	_, err := invoke(context.Background(), fn, "arn", time.Hour, "", func(context.Context, string) (string, error) { panic("boom") })
	var fe *functionError
	if !errors.As(err, &fe) || fe.kind != "panic" || fe.message != "boom" {
		t.Errorf("panic: %v", err)
	}
	_, err = invoke(context.Background(), fn, "arn", time.Hour, "", func(context.Context, string) (string, error) { return "", errors.New("nope") })
	if !errors.As(err, &fe) || fe.kind != "error" || fe.message != "nope" {
		t.Errorf("error: %v", err)
	}
}
