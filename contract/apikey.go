package contract

import (
	"fmt"
	"strings"
)

// Header names that may carry an API key.
const (
	HeaderAuthorization = "Authorization"
	HeaderAPIKey        = "X-Api-Key"
)

// KeySources says which request headers may carry the API key. It must
// match what the API Gateway authorizer caches on: with the authorizer
// cache on, the cache key is the Authorization header alone, so the key
// must come from there and nowhere else (KeySourcesBearer); only with the
// cache off may a second header carry it (KeySourcesBearerOrHeader). The
// construct sets it (EnvAPIKeySources) from the cache TTL; the authorizer
// and the API function read it.
type KeySources string

const (
	// KeySourcesBearer accepts exactly one "Authorization: Bearer <key>"
	// and refuses X-Api-Key. The default, and required with the
	// authorizer cache on.
	KeySourcesBearer KeySources = "authorization"
	// KeySourcesBearerOrHeader accepts "Authorization: Bearer <key>" or
	// "X-Api-Key: <key>", never both. Only for deployments whose
	// authorizer cache is off.
	KeySourcesBearerOrHeader KeySources = "authorization,x-api-key"
)

// ParseKeySources reads the value of EnvAPIKeySources; empty means
// KeySourcesBearer.
func ParseKeySources(v string) (KeySources, error) {
	switch s := KeySources(strings.ToLower(strings.ReplaceAll(strings.TrimSpace(v), " ", ""))); s {
	case "", KeySourcesBearer:
		return KeySourcesBearer, nil
	case KeySourcesBearerOrHeader:
		return s, nil
	}
	return "", fmt.Errorf("%s=%q is invalid: use %q (authorizer cache on) or %q (cache off)", EnvAPIKeySources, v, KeySourcesBearer, KeySourcesBearerOrHeader)
}

// Hint is the instruction a 401 gives the client: exactly the rules of s.
// The API's 401 bodies and the API Gateway UNAUTHORIZED response both use
// it, so local and deployed answers agree.
func (s KeySources) Hint() string {
	if s == KeySourcesBearerOrHeader {
		return "send a valid API key in Authorization: Bearer <key> or in X-Api-Key: <key>, not both"
	}
	return "send a valid API key as Authorization: Bearer <key> (X-Api-Key is not accepted by this deployment)"
}
