package apikey_test

import (
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf16"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/apikey"
)

func TestGenerate(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 100; i++ {
		k, err := apikey.Generate()
		require.NoError(t, err)
		assert.Regexp(t, `^trg_[A-Za-z0-9_-]{43}$`, k)
		assert.False(t, seen[k], "Generate repeated %s", k)
		seen[k] = true
	}
}

func TestHashAndPrefix(t *testing.T) {
	// SHA-256("abc"), a published test vector.
	assert.Equal(t, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", apikey.Hash("abc"))
	k, err := apikey.Generate()
	require.NoError(t, err)
	assert.Equal(t, k[:12], apikey.DisplayPrefix(k))
	// Anything but a generated key shows nothing: a short string may be a
	// whole secret, a long one a typo of a key.
	assert.Equal(t, "", apikey.DisplayPrefix("trg_abcdefgh"))
	assert.Equal(t, "", apikey.DisplayPrefix("short"))
	assert.Equal(t, "", apikey.DisplayPrefix(k+"x"))
}

func TestCredential(t *testing.T) {
	const k = "trg_x"
	tests := []struct {
		name    string
		headers [][2]string
		sources contract.KeySources
		want    string
		err     error
	}{
		{"bearer", [][2]string{{"Authorization", "Bearer trg_x"}}, contract.KeySourcesBearer, k, nil},
		// Refused, not trimmed: "Bearer k " and "Bearer k" would be two
		// authorizer cache entries and two rate-limit buckets for one key.
		{"blanks around the value", [][2]string{{"authorization", "  Bearer trg_x \t"}}, contract.KeySourcesBearer, "", apikey.ErrMalformed},
		{"a blank before the scheme", [][2]string{{"Authorization", " Bearer trg_x"}}, contract.KeySourcesBearer, "", apikey.ErrMalformed},
		{"a blank after the key", [][2]string{{"Authorization", "Bearer trg_x "}}, contract.KeySourcesBearer, "", apikey.ErrMalformed},
		{"a tab after the key", [][2]string{{"Authorization", "Bearer trg_x\t"}}, contract.KeySourcesBearer, "", apikey.ErrMalformed},
		{"a blank inside the key", [][2]string{{"Authorization", "Bearer trg_ x"}}, contract.KeySourcesBearer, "", apikey.ErrMalformed},
		// One spelling per key: each other spelling would be another
		// authorizer cache entry and another per-key rate-limit bucket.
		{"scheme in lower case", [][2]string{{"Authorization", "bearer trg_x"}}, contract.KeySourcesBearer, "", apikey.ErrMalformed},
		{"scheme in upper case", [][2]string{{"Authorization", "BEARER trg_x"}}, contract.KeySourcesBearer, "", apikey.ErrMalformed},
		{"two spaces", [][2]string{{"Authorization", "Bearer  trg_x"}}, contract.KeySourcesBearer, "", apikey.ErrMalformed},
		{"a tab", [][2]string{{"Authorization", "Bearer\ttrg_x"}}, contract.KeySourcesBearer, "", apikey.ErrMalformed},
		{"nothing", nil, contract.KeySourcesBearer, "", apikey.ErrMissing},
		{"x-api-key alone is not a source", [][2]string{{"X-Api-Key", k}}, contract.KeySourcesBearer, "", apikey.ErrMissing},
		// An earlier defect: Authorization present but not Bearer fell
		// back to X-Api-Key, which the authorizer cache does not key on.
		{"basic + x-api-key", [][2]string{{"Authorization", "Basic Zm9v"}, {"X-Api-Key", k}}, contract.KeySourcesBearer, "", apikey.ErrMalformed},
		{"basic", [][2]string{{"Authorization", "Basic Zm9v"}}, contract.KeySourcesBearer, "", apikey.ErrMalformed},
		{"scheme only", [][2]string{{"Authorization", "Bearer"}}, contract.KeySourcesBearer, "", apikey.ErrMalformed},
		{"empty token", [][2]string{{"Authorization", "Bearer    "}}, contract.KeySourcesBearer, "", apikey.ErrMalformed},
		{"empty header", [][2]string{{"Authorization", ""}}, contract.KeySourcesBearer, "", apikey.ErrMalformed},
		{"two tokens", [][2]string{{"Authorization", "Bearer trg_x trg_y"}}, contract.KeySourcesBearer, "", apikey.ErrMalformed},
		{"comma-joined", [][2]string{{"Authorization", "Bearer trg_x,Bearer trg_y"}}, contract.KeySourcesBearer, "", apikey.ErrMalformed},
		{"two authorization headers", [][2]string{{"Authorization", "Bearer trg_x"}, {"Authorization", "Bearer trg_x"}}, contract.KeySourcesBearer, "", apikey.ErrMalformed},
		{"control character", [][2]string{{"Authorization", "Bearer trg_\x01"}}, contract.KeySourcesBearer, "", apikey.ErrMalformed},
		{"too long", [][2]string{{"Authorization", "Bearer " + strings.Repeat("a", 513)}}, contract.KeySourcesBearer, "", apikey.ErrMalformed},
		{"longest", [][2]string{{"Authorization", "Bearer " + strings.Repeat("a", 512)}}, contract.KeySourcesBearer, strings.Repeat("a", 512), nil},
		{"visible ASCII edges", [][2]string{{"Authorization", "Bearer !~"}}, contract.KeySourcesBearer, "!~", nil},
		{"DEL", [][2]string{{"Authorization", "Bearer trg_\x7f"}}, contract.KeySourcesBearer, "", apikey.ErrMalformed},
		{"bearer + x-api-key, cache off", [][2]string{{"Authorization", "Bearer trg_x"}, {"X-Api-Key", "trg_x"}}, contract.KeySourcesBearerOrHeader, "", apikey.ErrMalformed},
		{"x-api-key, cache off", [][2]string{{"X-Api-Key", "trg_x"}}, contract.KeySourcesBearerOrHeader, k, nil},
		{"x-api-key with blanks around, cache off", [][2]string{{"X-Api-Key", " trg_x "}}, contract.KeySourcesBearerOrHeader, "", apikey.ErrMalformed},
		{"bearer, cache off", [][2]string{{"Authorization", "Bearer trg_x"}}, contract.KeySourcesBearerOrHeader, k, nil},
		{"basic + x-api-key, cache off", [][2]string{{"Authorization", "Basic Zm9v"}, {"X-Api-Key", k}}, contract.KeySourcesBearerOrHeader, "", apikey.ErrMalformed},
		{"empty x-api-key, cache off", [][2]string{{"X-Api-Key", ""}}, contract.KeySourcesBearerOrHeader, "", apikey.ErrMalformed},
		{"nothing, cache off", nil, contract.KeySourcesBearerOrHeader, "", apikey.ErrMissing},
	}
	for _, tt := range tests {
		h := http.Header{}
		for _, kv := range tt.headers {
			h.Add(kv[0], kv[1])
		}
		got, err := apikey.Credential(h, tt.sources)
		if tt.err != nil {
			assert.ErrorIs(t, err, tt.err, tt.name)
			assert.Empty(t, got, tt.name)
			continue
		}
		require.NoError(t, err, tt.name)
		assert.Equal(t, tt.want, got, tt.name)
	}
}

// The refusals say why, with the number of credentials sent.
func TestCredentialMessages(t *testing.T) {
	for _, tt := range []struct {
		h    http.Header
		s    contract.KeySources
		want string
	}{
		{http.Header{"Authorization": {"Bearer a"}, "X-Api-Key": {"b"}}, contract.KeySourcesBearerOrHeader, "send one credential, not 2"},
		{http.Header{"Authorization": {"Bearer a", "Bearer b", "Bearer c"}}, contract.KeySourcesBearer, "send one credential, not 3"},
		{http.Header{"Authorization": {"Bearer " + strings.Repeat("a", 513)}}, contract.KeySourcesBearer, "Authorization carries a key longer than 512 characters"},
		{http.Header{"X-Api-Key": {""}}, contract.KeySourcesBearerOrHeader, "X-Api-Key carries an empty key"},
		{http.Header{"X-Api-Key": {" k"}}, contract.KeySourcesBearerOrHeader, "X-Api-Key carries blanks around the key: send the key alone"},
		{http.Header{"Authorization": {"Bearer k "}}, contract.KeySourcesBearer, "Authorization carries blanks around the key"},
	} {
		_, err := apikey.Credential(tt.h, tt.s)
		assert.ErrorIs(t, err, apikey.ErrMalformed, tt.want)
		assert.ErrorContains(t, err, tt.want)
	}
}

func TestCheckExtraneous(t *testing.T) {
	h := http.Header{"Authorization": {"Bearer trg_x"}, "X-Api-Key": {"trg_y"}}
	assert.ErrorIs(t, apikey.CheckExtraneous(h, contract.KeySourcesBearer), apikey.ErrMalformed)
	assert.NoError(t, apikey.CheckExtraneous(h, contract.KeySourcesBearerOrHeader), "cache off: Credential itself refuses both")
	assert.NoError(t, apikey.CheckExtraneous(http.Header{"Authorization": {"Bearer trg_x"}}, contract.KeySourcesBearer))
	assert.ErrorIs(t, apikey.CheckExtraneous(http.Header{"X-Api-Key": {""}}, contract.KeySourcesBearer), apikey.ErrMalformed, "even an empty X-Api-Key")
	// On a cache hit the authorizer never saw the request: two
	// Authorization values are refused there too.
	two := http.Header{"Authorization": {"Bearer trg_x", "Bearer trg_y"}}
	assert.ErrorIs(t, apikey.CheckExtraneous(two, contract.KeySourcesBearer), apikey.ErrMalformed)
}

// TestCredentialDependsOnlyOnTheCacheKey is the property that closes the
// cross-tenant defect: under SourceBearer the credential (or the refusal)
// is a function of the Authorization header's values alone, the identity
// source API Gateway caches on. Two requests with the same Authorization
// values always get the same answer, whatever else they carry.
func TestCredentialDependsOnlyOnTheCacheKey(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	authValues := []string{"", "Bearer trg_a", "bearer trg_a", "Bearer trg_b", "Basic Zm9v", "Bearer", "Bearer  ", "Token trg_a", "trg_a", "Bearer trg_a trg_b"}
	others := [][2]string{{"X-Api-Key", "trg_a"}, {"X-Api-Key", "trg_b"}, {"X-Api-Key", ""}, {"Cookie", "k=trg_a"}, {"X-Amz-Security-Token", "trg_a"}, {"Proxy-Authorization", "Bearer trg_b"}}
	type answer struct {
		key string
		err string
	}
	byCacheKey := map[string]answer{}
	for i := 0; i < 5000; i++ {
		h := http.Header{}
		var auth []string
		for n := rng.IntN(3); n > 0; n-- {
			v := authValues[rng.IntN(len(authValues))]
			auth = append(auth, v)
			h.Add("Authorization", v)
		}
		for _, o := range others {
			if rng.IntN(2) == 0 {
				h.Add(o[0], o[1])
			}
		}
		key, err := apikey.Credential(h, contract.KeySourcesBearer)
		got := answer{key: key}
		if err != nil {
			got.err = err.Error()
		}
		if key != "" {
			require.Len(t, auth, 1)
			assert.Contains(t, auth[0], key, "the key must come from Authorization")
		}
		ck := strings.Join(auth, "\x00") + "|" + strconv.Itoa(len(auth))
		if prev, ok := byCacheKey[ck]; ok {
			require.Equal(t, prev, got, "same Authorization values %q, different answers: the cache key does not determine the credential (headers %v)", auth, h)
		}
		byCacheKey[ck] = got
	}
	assert.Greater(t, len(byCacheKey), 30, "the generator must cover many cache keys")
}

// ValidDescription follows contract.DescriptionRefusal, the rule of a
// subscription's description, for every character: a key's description
// that displays misleadingly (a bidirectional control, a line or
// paragraph separator, an invisible format character) is refused as a
// control character is, and the characters written text needs pass.
func TestValidDescriptionFollowsTheDescriptionRule(t *testing.T) {
	wrong := 0
	for r := rune(0); r <= unicode.MaxRune && wrong < 10; r++ {
		if utf16.IsSurrogate(r) {
			continue // not a character: no valid UTF-8 holds it
		}
		d := "a" + string(r) + "b"
		if got, want := apikey.ValidDescription(d), contract.DescriptionRefusal(r) == ""; got != want {
			t.Errorf("ValidDescription(%+q) = %v, want %v (contract.DescriptionRefusal(%U) = %q)", d, got, want, r, contract.DescriptionRefusal(r))
			wrong++
		}
	}
}
