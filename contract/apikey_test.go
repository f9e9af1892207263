package contract_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
)

func TestParseKeySources(t *testing.T) {
	for v, want := range map[string]contract.KeySources{"": contract.KeySourcesBearer, "authorization": contract.KeySourcesBearer, " Authorization, X-Api-Key ": contract.KeySourcesBearerOrHeader} {
		got, err := contract.ParseKeySources(v)
		require.NoError(t, err, v)
		assert.Equal(t, want, got, v)
	}
	_, err := contract.ParseKeySources("x-api-key")
	assert.EqualError(t, err, `API_KEY_SOURCES="x-api-key" is invalid: use "authorization" (authorizer cache on) or "authorization,x-api-key" (cache off)`)
	assert.Equal(t, "send a valid API key as Authorization: Bearer <key> (X-Api-Key is not accepted by this deployment)", contract.KeySourcesBearer.Hint())
	assert.Equal(t, "send a valid API key in Authorization: Bearer <key> or in X-Api-Key: <key>, not both", contract.KeySourcesBearerOrHeader.Hint())
}
