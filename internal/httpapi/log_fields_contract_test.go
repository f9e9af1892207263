package httpapi_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/contract"
)

// TestRequestLogLineHasTheContractFields ties the per-request log line to
// contract.RequestLogFields(), the fields the saved Logs Insights queries of
// constructs/monitoring read.
func TestRequestLogLineHasTheContractFields(t *testing.T) {
	e := newEnv(t)
	e.do(req{method: contract.MethodPost, path: contract.PathEvents, tenant: "tenant-a", body: `{"event_type":"t","payload":[]}`})
	lines := strings.Split(strings.TrimSpace(e.logs.String()), "\n")
	require.Len(t, lines, 1, "%s", e.logs.String())
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &m))
	require.Equal(t, contract.LogMsgRequest, m[contract.LogFieldMsg])
	require.Contains(t, m, contract.LogFieldLevel)
	for _, f := range contract.RequestLogFields() {
		require.Contains(t, m, f, "log line %s", lines[0])
	}
	for k := range m {
		if k != "time" && k != contract.LogFieldMsg && k != contract.LogFieldLevel {
			require.True(t, slices.Contains(contract.RequestLogFields(), k), "log field %q is not in contract.RequestLogFields()", k)
		}
	}
}
