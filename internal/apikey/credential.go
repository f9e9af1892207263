package apikey

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/triggers-dev/triggers/contract"
)

// ErrMalformed is returned by Credential and CheckExtraneous for a request
// whose credentials are present but not in the accepted form: another
// scheme, an empty or blank token, several values, or two headers (401).
var ErrMalformed = errors.New("malformed API key credentials")

// Credential returns the API key of a request under the rules of s, reading
// only the headers s names: ErrMissing when none of them is present,
// ErrMalformed (wrapped, with the reason) when they are present but not
// exactly one well-formed credential. The result depends on nothing but
// the values of those headers: with contract.KeySourcesBearer, on the Authorization
// header alone, which is what API Gateway's authorizer cache is keyed on.
func Credential(h http.Header, s contract.KeySources) (string, error) {
	auth := h.Values(contract.HeaderAuthorization)
	var xkey []string
	if s == contract.KeySourcesBearerOrHeader {
		xkey = h.Values(contract.HeaderAPIKey)
	}
	if len(auth) == 0 && len(xkey) == 0 {
		return "", ErrMissing
	}
	if n := len(auth) + len(xkey); n > 1 {
		return "", fmt.Errorf("%w: send one credential, not %d", ErrMalformed, n)
	}
	if len(xkey) == 1 {
		return token(xkey[0], contract.HeaderAPIKey)
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
	return token(rest, contract.HeaderAuthorization)
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
// so it refuses credentials outside the cache key there. With contract.KeySourcesBearer
// a request carrying X-Api-Key is ErrMalformed, whatever else it carries,
// so "both headers" is a 401 whether or not the authorizer ran; so is a
// request with several Authorization values.
func CheckExtraneous(h http.Header, s contract.KeySources) error {
	if s == contract.KeySourcesBearerOrHeader {
		return nil
	}
	if len(h.Values(contract.HeaderAPIKey)) > 0 {
		return fmt.Errorf("%w: X-Api-Key is not accepted by this deployment; send Authorization: Bearer <key> only", ErrMalformed)
	}
	if n := len(h.Values(contract.HeaderAuthorization)); n > 1 {
		// Which of several values API Gateway keys its cache on is not
		// documented: refuse them all, cached or not.
		return fmt.Errorf("%w: send one Authorization header, not %d", ErrMalformed, n)
	}
	return nil
}
