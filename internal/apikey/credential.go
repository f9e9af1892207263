package apikey

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/triggers-dev/triggers/contract"
)

// Header names that may carry an API key.
const (
	HeaderAuthorization = "Authorization"
	HeaderAPIKey        = "X-Api-Key"
)

// Sources says which request headers may carry the API key. It must match
// what the API Gateway authorizer caches on: with the authorizer cache on,
// the cache key is the Authorization header alone, so the key must come
// from there and nowhere else (SourceBearer); only with the cache off may a
// second header carry it (SourceBearerOrHeader).
type Sources string

const (
	// SourceBearer accepts exactly one "Authorization: Bearer <key>" and
	// refuses X-Api-Key. The default, and required with the authorizer
	// cache on.
	SourceBearer Sources = "authorization"
	// SourceBearerOrHeader accepts "Authorization: Bearer <key>" or
	// "X-Api-Key: <key>", never both. Only for deployments whose
	// authorizer cache is off.
	SourceBearerOrHeader Sources = "authorization,x-api-key"
)

// EnvSources is the environment variable that selects Sources in the
// authorizer and API functions (the construct sets it from the cache TTL).
const EnvSources = contract.EnvAPIKeySources

// ParseSources reads the value of EnvSources; empty means SourceBearer.
func ParseSources(v string) (Sources, error) {
	switch s := Sources(strings.ToLower(strings.ReplaceAll(strings.TrimSpace(v), " ", ""))); s {
	case "", SourceBearer:
		return SourceBearer, nil
	case SourceBearerOrHeader:
		return s, nil
	}
	return "", fmt.Errorf("%s=%q is invalid: use %q (authorizer cache on) or %q (cache off)", EnvSources, v, SourceBearer, SourceBearerOrHeader)
}

// Hint is the instruction a 401 gives the client: exactly the rules of s.
// The API's 401 bodies and the API Gateway UNAUTHORIZED response both use
// it, so local and deployed answers agree.
func (s Sources) Hint() string {
	if s == SourceBearerOrHeader {
		return "send a valid API key in Authorization: Bearer <key> or in X-Api-Key: <key>, not both"
	}
	return "send a valid API key as Authorization: Bearer <key> (X-Api-Key is not accepted by this deployment)"
}

// ErrMalformed is returned by Credential and CheckExtraneous for a request
// whose credentials are present but not in the accepted form: another
// scheme, an empty or blank token, several values, or two headers (401).
var ErrMalformed = errors.New("malformed API key credentials")

// Credential returns the API key of a request under the rules of s, reading
// only the headers s names: ErrMissing when none of them is present,
// ErrMalformed (wrapped, with the reason) when they are present but not
// exactly one well-formed credential. The result depends on nothing but
// the values of those headers: with SourceBearer, on the Authorization
// header alone, which is what API Gateway's authorizer cache is keyed on.
func Credential(h http.Header, s Sources) (string, error) {
	auth := h.Values(HeaderAuthorization)
	var xkey []string
	if s == SourceBearerOrHeader {
		xkey = h.Values(HeaderAPIKey)
	}
	if len(auth) == 0 && len(xkey) == 0 {
		return "", ErrMissing
	}
	if n := len(auth) + len(xkey); n > 1 {
		return "", fmt.Errorf("%w: send one credential, not %d", ErrMalformed, n)
	}
	if len(xkey) == 1 {
		return token(xkey[0], HeaderAPIKey)
	}
	// One spelling per key: exactly "Bearer", one space, the key, nothing
	// around them. A looser parse (scheme in any case, any run of blanks,
	// blanks trimmed) would give one key many Authorization values, each
	// its own authorizer cache entry and its own bucket in the per-key rate
	// limit, which counts the raw header.
	rest, ok := strings.CutPrefix(auth[0], bearerPrefix)
	if !ok {
		return "", fmt.Errorf("%w: Authorization must be exactly \"Bearer <key>\" (that case, one space)", ErrMalformed)
	}
	if rest != strings.TrimLeft(rest, " \t") {
		return "", fmt.Errorf("%w: Authorization must be exactly \"Bearer <key>\" (one space)", ErrMalformed)
	}
	return token(rest, HeaderAuthorization)
}

// bearerPrefix is the only accepted start of an Authorization value.
const bearerPrefix = "Bearer "

// token checks one key value: 1-maxKeyLen visible ASCII characters, with
// no blank (around it or inside), comma or quote. Nothing is trimmed: a key
// with blanks around it is refused, not repaired.
func token(v, header string) (string, error) {
	if strings.Trim(v, " \t") != v {
		return "", fmt.Errorf("%w: %s carries blanks around the key: send the key alone", ErrMalformed, header)
	}
	if v == "" {
		return "", fmt.Errorf("%w: %s carries an empty key", ErrMalformed, header)
	}
	if len(v) > maxKeyLen {
		return "", fmt.Errorf("%w: %s carries a key longer than %d characters", ErrMalformed, header, maxKeyLen)
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c <= 0x20 || c >= 0x7f || c == ',' || c == '"' {
			return "", fmt.Errorf("%w: %s carries a key with a blank or an invalid character", ErrMalformed, header)
		}
	}
	return v, nil
}

// CheckExtraneous is the API function's half of the rules: behind a cached
// authorizer it sees requests the authorizer never looked at (cache hits),
// so it refuses credentials outside the cache key there. With SourceBearer
// a request carrying X-Api-Key is ErrMalformed, whatever else it carries,
// so "both headers" is a 401 whether or not the authorizer ran; so is a
// request with several Authorization values.
func CheckExtraneous(h http.Header, s Sources) error {
	if s == SourceBearerOrHeader {
		return nil
	}
	if len(h.Values(HeaderAPIKey)) > 0 {
		return fmt.Errorf("%w: X-Api-Key is not accepted by this deployment; send Authorization: Bearer <key> only", ErrMalformed)
	}
	if n := len(h.Values(HeaderAuthorization)); n > 1 {
		// Which of several values API Gateway keys its cache on is not
		// documented: refuse them all, cached or not.
		return fmt.Errorf("%w: send one Authorization header, not %d", ErrMalformed, n)
	}
	return nil
}
