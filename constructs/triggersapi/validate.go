package triggersapi

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/triggers-dev/triggers/constructs/golambda"
	"github.com/triggers-dev/triggers/constructs/internal/cdkutil"
	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/schema"
)

var stageRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

func isToken(v float64) bool { return cdkutil.IsNumberToken(v) }

// ValidateProps reports every problem with props, each naming the bad value
// and the fix. NewTriggersApi panics with this error.
func ValidateProps(p *TriggersApiProps) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if ttl := p.AuthorizerCacheTtl; ttl != nil {
		if cdkutil.IsDurationToken(ttl) {
			bad("AuthorizerCacheTtl is a token: give a literal duration of 0-3600 whole seconds (the authorizer's identity sources are chosen at synth from whether it caches)")
		} else if ms := *ttl.ToMilliseconds(nil); math.Mod(ms, 1000) != 0 {
			bad("AuthorizerCacheTtl %v ms is not a whole number of seconds: API Gateway caches authorizer results for whole seconds (0-3600)", ms)
		} else if s := ms / 1000; s < 0 || s > contract.MaxAuthorizerCacheSeconds {
			bad("AuthorizerCacheTtl %v seconds is outside 0-3600: API Gateway caches authorizer results for at most one hour", s)
		}
	}
	if r := p.ThrottlingRateLimit; r != 0 && !isToken(r) && r < 0 {
		bad("ThrottlingRateLimit %v is negative: give requests per second", r)
	}
	if b := p.ThrottlingBurstLimit; b != 0 && !isToken(b) {
		switch {
		case b < 0:
			bad("ThrottlingBurstLimit %v is negative: give a number of requests", b)
		case b != math.Trunc(b):
			// CloudFormation refuses a stage's ThrottlingBurstLimit that is
			// not an integer (the rate may have a fraction).
			bad("ThrottlingBurstLimit %v is not a whole number: API Gateway's burst is a number of requests; give one such as %v", b, math.Ceil(b))
		}
	}
	rate, burst := p.ThrottlingRateLimit, p.ThrottlingBurstLimit
	if rate == 0 {
		rate = DefaultThrottlingRateLimit
	}
	if burst == 0 {
		burst = DefaultThrottlingBurstLimit
	}
	if !isToken(rate) && !isToken(burst) && burst < rate {
		bad("ThrottlingBurstLimit %v is below ThrottlingRateLimit %v: the burst must hold at least one second of requests", burst, rate)
	}
	if d := p.RetentionDays; isToken(d) {
		bad("RetentionDays is a token: give a literal number of days, 1-3650 (the functions get it as an environment variable written at synth)")
	} else if d != 0 && (d < 1 || d > 3650 || d != float64(int(d))) {
		bad("RetentionDays %v is outside 1-3650: events live whole days, up to ten years", d)
	}
	if err := metricsNamespaceError(p.MetricsNamespace, "the functions"); err != nil {
		errs = append(errs, err)
	}
	if r := p.WriterRegion; r != "" && !contract.ValidRegionName(r) {
		bad("WriterRegion %q is not a region name: give the region whose API accepts writes, such as us-east-1 (the API answers writes elsewhere 503)", r)
	}
	if t := p.ApiKeysTable; t != nil {
		if why := apiKeysSchemaMismatch(t.Schema()); why != "" {
			bad("ApiKeysTable (schema %q) is not an API-keys table: %s; the authorizer looks keys up by %s, so every request would fail: give NewApiKeysTable or FromApiKeysTableAttributes, or a table of schema.APIKeys(), or leave it unset for a new one", t.Schema().Name, why, schema.AttrKeyHash)
		}
	}
	if p.StageName != "" && !stageRE.MatchString(p.StageName) {
		bad("StageName %q is invalid: use letters, digits, '_' and '-' (at most 128)", p.StageName)
	}
	errs = append(errs, validateFunction("ApiFunction", p.ApiFunction)...)
	errs = append(errs, validateFunction("AuthorizerFunction", p.AuthorizerFunction)...)
	if p.PrebuiltDir != "" {
		code := map[string]*FunctionOptions{ApiPackage: p.ApiFunction, AuthorizerPackage: p.AuthorizerFunction, StreamConsumerPackage: nil}
		if p.Delivery != nil {
			code[StreamConsumerPackage] = p.Delivery.Function
		}
		pkgs := []string{ApiPackage, AuthorizerPackage, StreamConsumerPackage}
		holds := "api/, authorizer/ and streamconsumer/"
		if p.Webhooks != nil {
			code[WebhooksPackage] = p.Webhooks.Function
			pkgs = append(pkgs, WebhooksPackage)
			holds = "api/, authorizer/, streamconsumer/ and, with Webhooks, webhooks/"
		}
		for _, pkg := range pkgs {
			o := code[pkg]
			if o != nil && o.Code != nil {
				continue
			}
			build := golambda.Build{}
			if o != nil {
				build, _ = o.Build() // a bad one is reported above
			}
			if err := build.CheckBootstrap(filepath.Join(p.PrebuiltDir, prebuiltDirs[pkg])); err != nil {
				bad("PrebuiltDir: %v; the main package is %s (PrebuiltDir holds %s, each with its bootstrap)", err, pkg, holds)
			}
		}
	}
	if err := validateDelivery(p.Delivery); err != nil {
		errs = append(errs, err)
	}
	if p.Webhooks != nil {
		ws, err := resolveWebhooks(p.Webhooks, "Webhooks.")
		if err != nil {
			errs = append(errs, err)
		}
		// The webhook function consumes the delivery queue.
		if d := p.Delivery; d != nil && d.QueueVisibilityTimeout != nil {
			if v, ok := durationOf(d.QueueVisibilityTimeout); ok && v < ws.minVisibility() {
				bad("Delivery.QueueVisibilityTimeout %s is under %d x the webhook function's timeout (%s) = %s: the webhook function consumes the delivery queue; raise it, or leave it unset for %s",
					v, VisibilityTimeoutFactor, ws.fnTimeout, ws.minVisibility(), ws.minVisibility())
			}
		}
	}
	if o := p.RateLimit; o != nil {
		if p.WebAclArn != nil && !o.Disabled {
			bad("RateLimit and WebAclArn are both set: a stage has one web ACL; put rate-based rules in yours, or drop WebAclArn")
		}
		for name, v := range map[string]float64{"RateLimit.RequestsPerKey": o.RequestsPerKey, "RateLimit.RequestsPerIP": o.RequestsPerIP} {
			if v != 0 && !isToken(v) && (v < 10 || v > 2e9 || v != float64(int64(v))) {
				bad("%s %v is outside 10-2000000000: WAF rate-based rules count whole requests, at least 10 per window", name, v)
			}
		}
		if o.Window != nil {
			if cdkutil.IsDurationToken(o.Window) {
				bad("RateLimit.Window is a token: give a literal duration of 1, 2, 5 or 10 minutes")
			} else {
				switch w := *o.Window.ToMilliseconds(nil) / 1000; w {
				case 60, 120, 300, 600:
				default:
					bad("RateLimit.Window %v seconds is not one of 1, 2, 5 or 10 minutes, the windows WAF rate-based rules support", w)
				}
			}
		}
	}
	if p.Cors != nil {
		c, hasToken := corsOf(p.Cors)
		if hasToken {
			bad("Cors has a token among AllowOrigins or ExposeHeaders: give literal values (the API function gets them as an environment variable written at synth, and names the origin in its answers)")
		} else if err := contract.CheckCORS(c); err != nil {
			bad("Cors: %v (preflights would pass and the answers still be unreadable)", err)
		}
	}
	return errors.Join(errs...)
}

// metricsNamespaceError checks a MetricsNamespace prop ("" takes the
// default); who names the functions that read it.
func metricsNamespaceError(ns, who string) error {
	switch {
	case ns == "":
		return nil
	case cdkutil.IsStringToken(ns):
		return errors.New("MetricsNamespace is a token: give a literal namespace, or leave it unset for Triggers/<stack name> (it is checked at synth, since the functions refuse a bad one at every start, and compared with the stack's other namespaces)")
	}
	if err := contract.ValidMetricsNamespace(ns); err != nil {
		return fmt.Errorf("MetricsNamespace: %v (%s would refuse it at every start): give your own namespace, or leave it unset for Triggers/<stack name>", err, who)
	}
	return nil
}

// validateFunction reports each bad option of one function's options, every
// line prefixed with the prop's name (name.MemoryMiB ...).
func validateFunction(name string, o *FunctionOptions) []error {
	if o == nil {
		return nil
	}
	err := o.Validate()
	if err == nil {
		return nil
	}
	var errs []error
	for _, line := range strings.Split(err.Error(), "\n") {
		errs = append(errs, fmt.Errorf("%s.%s", name, line))
	}
	return errs
}

// apiKeysSchemaMismatch says how sc's keys differ from schema.APIKeys()'s
// (the table's keys and the tenant index the runtime queries), or "".
func apiKeysSchemaMismatch(sc schema.Table) string {
	want := schema.APIKeys()
	key := func(k *schema.Attribute) string {
		if k == nil {
			return "none"
		}
		return fmt.Sprintf("%s (%s)", k.Name, k.Type)
	}
	switch {
	case sc.PartitionKey != want.PartitionKey:
		return fmt.Sprintf("its partition key is %s, not %s", key(&sc.PartitionKey), key(&want.PartitionKey))
	case sc.SortKey != nil:
		return fmt.Sprintf("it has a sort key, %s; an API-keys table has none", key(sc.SortKey))
	}
	for _, wi := range want.GlobalIndexes {
		i := slices.IndexFunc(sc.GlobalIndexes, func(ix schema.Index) bool { return ix.Name == wi.Name })
		if i < 0 {
			return fmt.Sprintf("it has no index %s", wi.Name)
		}
		gi := sc.GlobalIndexes[i]
		if gi.PartitionKey != wi.PartitionKey || key(gi.SortKey) != key(wi.SortKey) {
			return fmt.Sprintf("its index %s is keyed by %s and %s, not %s and %s", wi.Name, key(&gi.PartitionKey), key(gi.SortKey), key(&wi.PartitionKey), key(wi.SortKey))
		}
	}
	return ""
}
