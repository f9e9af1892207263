package httpapi

import (
	"strings"
	"testing"

	"github.com/triggers-dev/triggers/contract"
)

// TestMatchServesEveryContractRoute ties the route table to contract.Routes(),
// which TriggersApi turns into API Gateway methods: every contract route
// has a handler here, and the handler knows no other path.
func TestMatchServesEveryContractRoute(t *testing.T) {
	for _, r := range contract.Routes() {
		path := concrete(r.Path)
		f, allow, id := match(r.Method, path)
		if f == nil {
			t.Errorf("match(%q, %q) = nil handler (allow %q), want the contract route's handler", r.Method, path, allow)
		}
		if strings.Contains(r.Path, "{") && id != "evt-1" {
			t.Errorf("match(%q, %q) id = %q, want %q", r.Method, path, id, "evt-1")
		}
	}
	for _, path := range []string{"/", "/v1", "/v1/", "/v2/events", "/v1/events/a/b", "/v1/inboxes"} {
		if f, allow, _ := match(contract.MethodGet, path); f != nil || allow != "" {
			t.Errorf("match(GET, %q) found a route (allow %q), want none: the path is not in contract.Routes()", path, allow)
		}
	}
}

// TestMatchAllowsExactlyTheContractMethods checks the 405's Allow header
// against contract.Routes(): a wrong method on a contract path names exactly
// the methods the contract gives that path.
func TestMatchAllowsExactlyTheContractMethods(t *testing.T) {
	methods := map[string][]string{}
	for _, r := range contract.Routes() {
		methods[r.Path] = append(methods[r.Path], r.Method)
	}
	for path, want := range methods {
		concrete := concrete(path)
		f, allow, _ := match("PUT", concrete)
		if f != nil || allow != strings.Join(want, ", ") {
			t.Errorf("match(PUT, %q) allow = %q, want %q", concrete, allow, strings.Join(want, ", "))
		}
	}
}

// concrete fills a contract path's parameters with "evt-1".
func concrete(path string) string {
	for _, p := range contract.PathParams(path) {
		path = strings.ReplaceAll(path, "{"+p+"}", "evt-1")
	}
	return path
}
