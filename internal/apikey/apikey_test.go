package apikey_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
	assert.Equal(t, "trg_abcdefgh", apikey.DisplayPrefix("trg_abcdefghijklmnop"))
	assert.Equal(t, "short", apikey.DisplayPrefix("short"))
}

func TestFromHeaders(t *testing.T) {
	tests := []struct {
		headers map[string]string
		want    string
	}{
		{map[string]string{"Authorization": "Bearer trg_x"}, "trg_x"},
		{map[string]string{"Authorization": "bearer   trg_x  "}, "trg_x"},
		{map[string]string{"X-Api-Key": "trg_y"}, "trg_y"},
		{map[string]string{"Authorization": "Bearer trg_x", "X-Api-Key": "trg_y"}, "trg_x"},
		{map[string]string{"Authorization": "Basic dXNlcjpwYXNz", "X-Api-Key": "trg_y"}, "trg_y"},
		{map[string]string{"Authorization": "Basic dXNlcjpwYXNz"}, ""},
		{map[string]string{"Authorization": "Bearer"}, ""},
		{nil, ""},
	}
	for _, tt := range tests {
		h := http.Header{}
		for k, v := range tt.headers {
			h.Set(k, v)
		}
		assert.Equal(t, tt.want, apikey.FromHeaders(h.Get), "FromHeaders(%v)", tt.headers)
	}
}
