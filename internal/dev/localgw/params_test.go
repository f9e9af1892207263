package localgw

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// Gateway response headers take their values from every source API
// Gateway offers (query string, path, header, stage variable, context,
// literal); a source without a value sets no header. Options.StageVariables
// replace the template's. The template follows the Accept header, then
// application/json, then the first by name.
func TestGatewayResponseParameterSources(t *testing.T) {
	tmpl := editTemplate(t, func(res map[string]any) {
		res["D4"] = map[string]any{"Type": "AWS::ApiGateway::GatewayResponse", "Properties": map[string]any{
			"RestApiId": map[string]any{"Ref": "Api"}, "ResponseType": "UNAUTHORIZED",
			"ResponseParameters": map[string]any{
				"gatewayresponse.header.X-Q":       "method.request.querystring.tenant",
				"gatewayresponse.header.X-P":       "method.request.path.id",
				"gatewayresponse.header.X-H":       "method.request.header.X-In",
				"gatewayresponse.header.X-S":       "stageVariables.color",
				"gatewayresponse.header.X-C":       "context.stage",
				"gatewayresponse.header.X-L":       "'lit'",
				"gatewayresponse.header.X-NoQ":     "method.request.querystring.nope",
				"gatewayresponse.header.X-NoH":     "method.request.header.X-Nope",
				"gatewayresponse.header.X-NoP":     "method.request.path.nope",
				"gatewayresponse.header.X-NoS":     "stageVariables.nope",
				"gatewayresponse.header.X-NoC":     "context.nope",
				"gatewayresponse.header.X-Unknown": "somewhere.else",
				"gatewayresponse.header.X-Quote":   "'",
				"gatewayresponse.header.X-Empty":   "''",
			},
			"ResponseTemplates": map[string]any{"text/plain": "plain", "application/json": `{"json":1}`},
		}}
		res["D5"] = map[string]any{"Type": "AWS::ApiGateway::GatewayResponse", "Properties": map[string]any{
			"RestApiId": map[string]any{"Ref": "Api"}, "ResponseType": "MISSING_AUTHENTICATION_TOKEN",
			"ResponseTemplates": map[string]any{"text/xml": "<xml/>", "text/plain": "first by name"},
		}}
	})
	f := newFixture(t, tmpl, Options{StageVariables: map[string]string{"color": "green"}})
	// No Authorization header: UNAUTHORIZED on /items/{id}.
	res := f.do(t, "GET", "/dev/items/42?tenant=t1&tenant=t2", "", "X-In", "a", "X-In", "b", "Accept", "text/html, text/plain;q=0.9")
	if res.status != 401 {
		t.Fatalf("status %d %s, want 401", res.status, res.body)
	}
	want := map[string]string{"X-Q": "t2", "X-P": "42", "X-H": "b", "X-S": "green", "X-C": "dev", "X-L": "lit"}
	for h, v := range want {
		if got := res.header.Get(h); got != v {
			t.Errorf("header %s = %q, want %q", h, got, v)
		}
	}
	for _, h := range []string{"X-NoQ", "X-NoH", "X-NoP", "X-NoS", "X-NoC", "X-Unknown", "X-Quote"} {
		if vs := res.header.Values(h); len(vs) != 0 {
			t.Errorf("header %s = %q, want none", h, vs)
		}
	}
	if vs := res.header.Values("X-Empty"); len(vs) != 1 || vs[0] != "" {
		t.Errorf("header X-Empty = %q, want one empty value (the literal '')", vs)
	}
	if res.body != "plain" {
		t.Errorf("Accept text/plain: body %q", res.body)
	}
	res = f.do(t, "GET", "/dev/items/42", "", "Accept", "image/png")
	if res.body != `{"json":1}` {
		t.Errorf("Accept image/png: body %q, want the application/json template", res.body)
	}
	// No JSON template and no match: the first template by media type.
	res = f.do(t, "GET", "/dev/nowhere", "")
	if res.status != 403 || res.body != "first by name" {
		t.Errorf("MISSING_AUTHENTICATION_TOKEN: %d %q", res.status, res.body)
	}
}

// A deployment can create its stage itself (StageName on the
// AWS::ApiGateway::Deployment): the API is served under that stage.
func TestStageFromDeployment(t *testing.T) {
	tmpl := editTemplate(t, func(res map[string]any) {
		delete(res, "Stage")
		res["Deployment"].(map[string]any)["Properties"].(map[string]any)["StageName"] = "live"
	})
	f := newFixture(t, tmpl, Options{})
	if res := f.do(t, "GET", "/live/items/special", ""); res.status != 200 {
		t.Errorf("GET /live/items/special = %d %s", res.status, res.body)
	}
	if res := f.do(t, "GET", "/dev/items/special", ""); res.status != 403 {
		t.Errorf("GET /dev/items/special = %d, want 403 (no such stage)", res.status)
	}
}

// The authorizer cache is bounded: when full, expired entries go first;
// when none has expired, the whole cache is dropped. Either way the
// request's own result is cached.
func TestAuthorizerCacheBound(t *testing.T) {
	f := edgeFixture(t, Options{})
	now := f.clock.Now()
	fill := func(expired int) {
		f.gw.cacheMu.Lock()
		f.gw.cache = map[string]cacheEntry{}
		for i := 0; i < maxCacheEntries; i++ {
			exp := now.Add(time.Hour)
			if i < expired {
				exp = now
			}
			f.gw.cache[fmt.Sprint("k", i)] = cacheEntry{expires: exp}
		}
		f.gw.cacheMu.Unlock()
	}
	size := func() int {
		f.gw.cacheMu.Lock()
		defer f.gw.cacheMu.Unlock()
		return len(f.gw.cache)
	}
	fill(10)
	if res := f.do(t, "GET", "/dev/items/1?tenant=t", "", "Authorization", "Bearer good"); res.status != 200 {
		t.Fatalf("%d %s", res.status, res.body)
	}
	if n := size(); n != maxCacheEntries-10+1 {
		t.Errorf("cache size %d after dropping 10 expired entries, want %d", n, maxCacheEntries-10+1)
	}
	fill(0)
	if res := f.do(t, "GET", "/dev/items/1?tenant=t2", "", "Authorization", "Bearer good"); res.status != 200 {
		t.Fatalf("%d %s", res.status, res.body)
	}
	if n := size(); n != 1 {
		t.Errorf("cache size %d after a full cache with nothing expired, want 1 (reset, then this result)", n)
	}
	calls := f.auth.N()
	f.do(t, "GET", "/dev/items/1?tenant=t2", "", "Authorization", "Bearer good")
	if f.auth.N() != calls {
		t.Errorf("the request's own result was not cached")
	}
	// One entry short of the bound: nothing is dropped.
	fill(5)
	f.gw.cacheMu.Lock()
	delete(f.gw.cache, "k9999")
	f.gw.cacheMu.Unlock()
	f.do(t, "GET", "/dev/items/1?tenant=t3", "", "Authorization", "Bearer good")
	if n := size(); n != maxCacheEntries {
		t.Errorf("cache size %d, want %d (nothing dropped below the bound)", n, maxCacheEntries)
	}
}

// An authorizer whose TTL is 0 caches nothing at all.
func TestNoCacheWithoutTTL(t *testing.T) {
	tmpl := editTemplate(t, func(r map[string]any) {
		r["Auth"].(map[string]any)["Properties"].(map[string]any)["AuthorizerResultTtlInSeconds"] = 0
	})
	f := newFixture(t, tmpl, Options{})
	for i := 0; i < 2; i++ {
		if res := f.do(t, "GET", "/dev/items/1?tenant=t", "", "Authorization", "Bearer good"); res.status != 200 {
			t.Fatalf("%d %s", res.status, res.body)
		}
	}
	if f.auth.N() != 2 {
		t.Errorf("authorizer calls = %d, want 2", f.auth.N())
	}
	f.gw.cacheMu.Lock()
	n := len(f.gw.cache)
	f.gw.cacheMu.Unlock()
	if n != 0 {
		t.Errorf("cache holds %d entries with TTL 0", n)
	}
}

// A function's timeout is its Timeout in seconds, else Lambda's default
// of 3 seconds (also for a Timeout of 0).
func TestFunctionTimeouts(t *testing.T) {
	tmpl := editTemplate(t, func(r map[string]any) {
		r["ApiFn"].(map[string]any)["Properties"].(map[string]any)["Timeout"] = 0
		delete(r["AuthFn"].(map[string]any)["Properties"].(map[string]any), "Timeout")
		r["SlowFn"].(map[string]any)["Properties"].(map[string]any)["Timeout"] = 1.5
	})
	f := newFixture(t, tmpl, Options{})
	want := map[string]time.Duration{"ApiFn": 3 * time.Second, "AuthFn": 3 * time.Second, "SlowFn": 1500 * time.Millisecond}
	seen := map[string]bool{}
	for _, fn := range f.fns {
		if w, ok := want[fn.LogicalID]; ok {
			seen[fn.LogicalID] = true
			if fn.Timeout != w {
				t.Errorf("%s: Timeout %s, want %s", fn.LogicalID, fn.Timeout, w)
			}
		}
	}
	if len(seen) != len(want) {
		t.Errorf("functions resolved: %v", seen)
	}
}

// Stage throttling applies when a rate or a burst is set, from the
// stage's method settings or a deployment's stage description; with
// neither, nothing is throttled.
func TestThrottleSettings(t *testing.T) {
	settings := func(rate, burst float64) func(map[string]any) {
		return func(r map[string]any) {
			r["Stage"].(map[string]any)["Properties"].(map[string]any)["MethodSettings"] = []any{
				map[string]any{"HttpMethod": "*", "ResourcePath": "/*", "ThrottlingRateLimit": rate, "ThrottlingBurstLimit": burst},
			}
		}
	}
	description := func(rate, burst float64) func(map[string]any) {
		return func(r map[string]any) {
			delete(r, "Stage")
			p := r["Deployment"].(map[string]any)["Properties"].(map[string]any)
			p["StageName"] = "dev"
			p["StageDescription"] = map[string]any{"ThrottlingRateLimit": rate, "ThrottlingBurstLimit": burst}
		}
	}
	for name, c := range map[string]struct {
		edit    func(map[string]any)
		allowed int // of 4 requests at one instant
	}{
		"method settings, burst only": {settings(0, 2), 2},
		"method settings, rate only":  {settings(1, 0), 0},
		"method settings, none":       {settings(0, 0), 4},
		"description, burst only":     {description(0, 1), 1},
		"description, none":           {description(0, 0), 4},
	} {
		f := newFixture(t, editTemplate(t, c.edit), Options{})
		ok := 0
		for i := 0; i < 4; i++ {
			switch res := f.do(t, "GET", "/dev/items/special", ""); res.status {
			case 200:
				ok++
			case 429:
			default:
				t.Errorf("%s: status %d", name, res.status)
			}
		}
		if ok != c.allowed {
			t.Errorf("%s: %d of 4 requests allowed, want %d", name, ok, c.allowed)
		}
	}
}

// An authorizer's results are cached for its TTL: 300 seconds by
// default, up to 3600.
func TestAuthorizerTTL(t *testing.T) {
	for name, c := range map[string]struct {
		edit func(map[string]any)
		ttl  time.Duration
	}{
		"default": {func(r map[string]any) {
			delete(r["Auth"].(map[string]any)["Properties"].(map[string]any), "AuthorizerResultTtlInSeconds")
		}, 300 * time.Second},
		"3600": {func(r map[string]any) {
			r["Auth"].(map[string]any)["Properties"].(map[string]any)["AuthorizerResultTtlInSeconds"] = 3600
		}, 3600 * time.Second},
	} {
		f := newFixture(t, editTemplate(t, c.edit), Options{})
		call := func() {
			if res := f.do(t, "GET", "/dev/items/1?tenant=t", "", "Authorization", "Bearer good"); res.status != 200 {
				t.Fatalf("%s: %d %s", name, res.status, res.body)
			}
		}
		call()
		f.clock.Advance(c.ttl - time.Second)
		call()
		if n := f.auth.N(); n != 1 {
			t.Errorf("%s: %d authorizer calls within the TTL, want 1", name, n)
		}
		f.clock.Advance(time.Second)
		call()
		if n := f.auth.N(); n != 2 {
			t.Errorf("%s: %d authorizer calls once the TTL passed, want 2", name, n)
		}
	}
}

// Template values quoted in error messages are cut after 200 bytes of
// JSON; status codes run from 100 to 599.
func TestTemplateMessagesAndStatusRange(t *testing.T) {
	noop := func(Function) (ProxyFunc, error) { return nil, nil }
	auth := func(Function) (AuthorizerFunc, error) { return (&fakeAuth{}).Handle, nil }
	withURI := func(uri string) []byte {
		return editTemplate(t, func(r map[string]any) {
			r["RootGet"].(map[string]any)["Properties"].(map[string]any)["Integration"].(map[string]any)["Uri"] = uri
		})
	}
	exact := strings.Repeat("u", 198) // 200 bytes of JSON
	_, err := New(withURI(exact), Options{Authorizer: auth, Proxy: noop})
	if err == nil || !strings.Contains(err.Error(), `"`+exact+`" uses the Arn of no`) {
		t.Errorf("a 200-byte value: %v, want it whole", err)
	}
	_, err = New(withURI(exact+"v"), Options{Authorizer: auth, Proxy: noop})
	if err == nil || !strings.Contains(err.Error(), `"`+exact+`v... uses the Arn of no`) {
		t.Errorf("a 201-byte value: %v, want it cut after 200 bytes", err)
	}
	for _, code := range []string{"100", "599"} {
		tmpl := editTemplate(t, func(r map[string]any) {
			r["Resp"] = map[string]any{"Type": "AWS::ApiGateway::GatewayResponse", "Properties": map[string]any{"RestApiId": map[string]any{"Ref": "Api"}, "ResponseType": "MISSING_AUTHENTICATION_TOKEN", "StatusCode": code}}
		})
		f := newFixture(t, tmpl, Options{})
		if res := f.do(t, "GET", "/dev/nowhere", ""); fmt.Sprint(res.status) != code {
			t.Errorf("gateway response StatusCode %s: answered %d", code, res.status)
		}
	}
}
