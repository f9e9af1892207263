package httpapi

import (
	"net/http"
	"strings"

	"github.com/triggers-dev/triggers/contract"
)

// corsPolicy is a contract.CORS ready to answer requests.
type corsPolicy struct {
	any         bool
	origins     map[string]bool
	credentials bool
	expose      string
}

func newCORSPolicy(c contract.CORS) *corsPolicy {
	p := &corsPolicy{origins: map[string]bool{}, credentials: c.AllowCredentials}
	for _, o := range c.AllowOrigins {
		if o == "*" {
			p.any = true
		}
		p.origins[o] = true
	}
	p.expose = strings.Join(c.Exposed(), ", ")
	return p
}

// apply sets the CORS headers of the answer to a request from origin (its
// Origin header, "" for none): Access-Control-Allow-Origin when the origin
// is allowed ("*" for any: contract.CheckCORS refuses it with
// credentials), with the headers a page may read and, when allowed,
// Access-Control-Allow-Credentials. The answer depends on Origin unless
// every origin gets "*": Vary: Origin tells caches so.
func (p *corsPolicy) apply(h http.Header, origin string) {
	if p == nil {
		return
	}
	if !p.any {
		h.Add("Vary", "Origin")
	}
	if origin == "" || !p.any && !p.origins[origin] {
		return
	}
	if p.any {
		h.Set("Access-Control-Allow-Origin", "*")
	} else {
		h.Set("Access-Control-Allow-Origin", origin)
	}
	h.Set("Access-Control-Expose-Headers", p.expose)
	if p.credentials {
		h.Set("Access-Control-Allow-Credentials", "true")
	}
}
