package conformance

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// routes are the contract's calls, each with a body that would be valid.
var routes = []struct {
	method, path, body string
}{
	{"POST", "/v1/events", `{"event_type":"conformance.auth","payload":{}}`},
	{"POST", "/v1/events/batch", `{"events":[{"event_type":"conformance.auth","payload":{}}]}`},
	{"GET", "/v1/inbox", ""},
	{"GET", "/v1/events/01a2054b-f8ba-7375-9175-000000000000", ""},
	{"PATCH", "/v1/events/01a2054b-f8ba-7375-9175-000000000000", `{"status":"delivered"}`},
	{"POST", "/v1/inbox/ack", `{"event_ids":["01a2054b-f8ba-7375-9175-000000000000"]}`},
}

// Every credential that is not exactly one valid key in an accepted form is
// a 401 on every route, before anything is read or written.
func TestAuthRefusedCredentials(t *testing.T) {
	tg := api(t)
	k, k2 := tg.key, tg.key2
	cases := []struct {
		name string
		h    http.Header
	}{
		{"no credentials", hdr()},
		{"empty Authorization", hdr("Authorization", "")},
		{"Bearer without a token", hdr("Authorization", "Bearer")},
		{"Bearer with a blank token", hdr("Authorization", "Bearer    ")},
		{"Basic scheme", hdr("Authorization", "Basic Zm9v")},
		{"Basic scheme with a valid X-Api-Key", hdr("Authorization", "Basic Zm9v", "X-Api-Key", k)},
		{"key without a scheme", hdr("Authorization", k)},
		{"another scheme with a valid key", hdr("Authorization", "Token "+k)},
		{"unknown key", hdr("Authorization", "Bearer trg_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")},
		{"valid key with a suffix", hdr("Authorization", "Bearer "+k+"x")},
		{"two tokens", hdr("Authorization", "Bearer "+k+" "+k2)},
		{"two Authorization headers", hdr("Authorization", "Bearer "+k, "Authorization", "Bearer "+k2)},
		{"Bearer and X-Api-Key, same key", hdr("Authorization", "Bearer "+k, "X-Api-Key", k)},
		{"Bearer and X-Api-Key, other tenant's key", hdr("Authorization", "Bearer "+k, "X-Api-Key", k2)},
		{"X-Api-Key empty", hdr("X-Api-Key", "")},
		// One spelling per key (each other spelling would be its own
		// authorizer cache entry and per-key rate-limit bucket).
		{"bearer in lower case", hdr("Authorization", "bearer "+k)},
		{"BEARER in upper case", hdr("Authorization", "BEARER "+k)},
		{"two spaces after Bearer", hdr("Authorization", "Bearer  "+k)},
		// Refused, not repaired. (Blanks around the whole value are
		// optional whitespace to HTTP: servers strip them before any
		// code sees them; the authorizer refuses them where they arrive.)
		{"a blank inside the key", hdr("Authorization", "Bearer "+k[:6]+" "+k[6:])},
	}
	if !tg.xAPIKey {
		cases = append(cases, struct {
			name string
			h    http.Header
		}{"X-Api-Key alone (authorizer cache on)", hdr("X-Api-Key", k)})
	} else {
		cases = append(cases, struct {
			name string
			h    http.Header
		}{"two X-Api-Key headers", hdr("X-Api-Key", k, "X-Api-Key", k2)})
	}
	for _, rt := range routes {
		for _, c := range cases {
			h := c.h.Clone()
			if rt.body != "" {
				h.Set("Content-Type", "application/json")
			}
			r := tg.do(t, rt.method, rt.path, h, []byte(rt.body))
			assert.Equal(t, http.StatusUnauthorized, r.Status, "%s %s, %s: %s", rt.method, rt.path, c.name, r)
			assert.Equal(t, "unauthorized", r.ErrorCode(), "%s %s, %s", rt.method, rt.path, c.name)
		}
	}
}

// The accepted forms reach the function as the key's tenant.
func TestAuthAcceptedCredentials(t *testing.T) {
	tg := api(t)
	for _, h := range []http.Header{
		hdr("Authorization", "Bearer "+tg.key),
		hdr("Authorization", "Bearer "+tg.key2),
	} {
		r := tg.do(t, "GET", "/v1/inbox?limit=1", h, nil)
		assert.Equal(t, http.StatusOK, r.Status, "%v: %s", h, r)
		assert.NotEmpty(t, r.Header.Get("X-Request-Id"), "the function's request id")
	}
	r := tg.do(t, "GET", "/v1/inbox?limit=1", hdr("X-Api-Key", tg.key), nil)
	if tg.xAPIKey {
		assert.Equal(t, http.StatusOK, r.Status, "X-Api-Key with the authorizer cache off: %s", r)
	} else {
		assert.Equal(t, http.StatusUnauthorized, r.Status, "X-Api-Key with the authorizer cache on: %s", r)
		assert.Contains(t, string(r.Body), "X-Api-Key is not accepted", "the 401 states the rule")
	}
}

// A key the authorizer allowed (and API Gateway cached) must never let
// another credential through: the cache is keyed on Authorization alone, so
// whatever else a request carries is checked again by the function.
func TestAuthCachedAllowServesOnlyItsCredential(t *testing.T) {
	tg := api(t)
	k, k2 := tg.key, tg.key2
	for round := 0; round < 2; round++ { // the second round is all cache hits
		r := tg.do(t, "GET", "/v1/inbox?limit=1", bearer(k), nil)
		require.Equal(t, http.StatusOK, r.Status, "round %d: %s", round, r)
		for name, h := range map[string]http.Header{
			"cached key + X-Api-Key of another tenant": hdr("Authorization", "Bearer "+k, "X-Api-Key", k2),
			"cached key + X-Api-Key garbage":           hdr("Authorization", "Bearer "+k, "X-Api-Key", "nope"),
			"Basic + X-Api-Key of the cached key":      hdr("Authorization", "Basic Zm9v", "X-Api-Key", k),
			"cached key twice":                         hdr("Authorization", "Bearer "+k, "Authorization", "Bearer "+k),
			"cached key with a suffix":                 hdr("Authorization", "Bearer "+k+"x"),
		} {
			r := tg.do(t, "GET", "/v1/inbox?limit=1", h, nil)
			assert.Equal(t, http.StatusUnauthorized, r.Status, "round %d, %s: %s", round, name, r)
		}
	}
	if tg.readOnly {
		return
	}
	// Tenant B right after tenant A's cached allow is served as B.
	typ := unique("auth")
	ev := tg.post(t, k, typ, `{}`)
	for round := 0; round < 2; round++ {
		r := tg.do(t, "GET", "/v1/events/"+ev.ID, bearer(k), nil)
		assert.Equal(t, http.StatusOK, r.Status, "A reads its event: %s", r)
		r = tg.do(t, "GET", "/v1/events/"+ev.ID, bearer(k2), nil)
		assert.Equal(t, http.StatusNotFound, r.Status, "B after A's allow: %s", r)
		r = tg.do(t, "GET", "/v1/events/"+ev.ID, hdr("Authorization", "Bearer "+k2, "X-Api-Key", k), nil)
		assert.Equal(t, http.StatusUnauthorized, r.Status, "B's Authorization with A's X-Api-Key: %s", r)
	}
}

// A revoked key is refused with 403 on every route (local run: the suite
// minted and revoked it; a deployment revokes after the cache TTL).
func TestAuthRevokedKey(t *testing.T) {
	tg := api(t)
	if tg.revoked == "" {
		t.Skip("-base: the suite has no revoked key of the deployment")
	}
	for _, rt := range routes {
		r := tg.do(t, rt.method, rt.path, jsonBearer(tg.revoked), []byte(rt.body))
		assert.Equal(t, http.StatusForbidden, r.Status, "%s %s: %s", rt.method, rt.path, r)
		assert.Equal(t, "forbidden", r.ErrorCode())
	}
}

// A method a resource does not have reaches the function (ANY) and is a 405
// naming the allowed methods; it needs a valid key like every method.
func TestMethodNotAllowed(t *testing.T) {
	tg := api(t)
	id := "01a2054b-f8ba-7375-9175-000000000000"
	for _, c := range []struct {
		method, path string
		allow        []string
	}{
		{"DELETE", "/v1/inbox", []string{"GET"}},
		{"PUT", "/v1/events", []string{"POST"}},
		{"GET", "/v1/events", []string{"POST"}},
		{"GET", "/v1/events/batch", []string{"POST"}},
		{"DELETE", "/v1/events/" + id, []string{"GET", "PATCH"}},
		{"POST", "/v1/events/" + id, []string{"GET", "PATCH"}},
		{"GET", "/v1/inbox/ack", []string{"POST"}},
	} {
		r := tg.do(t, c.method, c.path, bearer(tg.key), nil)
		assert.Equal(t, http.StatusMethodNotAllowed, r.Status, "%s %s: %s", c.method, c.path, r)
		assert.Equal(t, "method_not_allowed", r.ErrorCode(), "%s %s", c.method, c.path)
		var allow []string
		for _, m := range strings.Split(r.Header.Get("Allow"), ",") {
			if m = strings.TrimSpace(m); m != "" && m != "HEAD" && m != "OPTIONS" {
				allow = append(allow, m)
			}
		}
		assert.ElementsMatch(t, c.allow, allow, "%s %s: Allow %q", c.method, c.path, r.Header.Get("Allow"))
		r = tg.do(t, c.method, c.path, nil, nil)
		assert.Equal(t, http.StatusUnauthorized, r.Status, "%s %s without a key: %s", c.method, c.path, r)
	}
	// A path that is no resource: 404 in the contract's shape.
	r := tg.do(t, "GET", "/v1/nope", bearer(tg.key), nil)
	assert.Equal(t, http.StatusNotFound, r.Status, "%s", r)
	assert.Equal(t, "not_found", r.ErrorCode())
}
