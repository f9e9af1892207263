package contract_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
)

func TestAppendErrorBody(t *testing.T) {
	got := contract.AppendErrorBody([]byte("x"), "invalid_event", `a "<b>" & \ c`, "req-1")
	assert.Equal(t, `x{"error":{"code":"invalid_event","message":"a \"<b>\" & \\ c","request_id":"req-1"}}`+"\n", string(got))
	var back contract.ErrorBody
	require.NoError(t, json.Unmarshal(got[1:], &back))
	assert.Equal(t, contract.ErrorBody{Error: contract.ErrorDetail{Code: "invalid_event", Message: `a "<b>" & \ c`, RequestID: "req-1"}}, back)
	assert.Equal(t, `{"error":{"code":"c","message":"m","request_id":""}}`+"\n", string(contract.AppendErrorBody(nil, "c", "m", "")))
}
