package emf_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/emf"
)

func TestWebhookMetrics(t *testing.T) {
	var buf bytes.Buffer
	w, err := emf.New(&buf, "Triggers/test")
	require.NoError(t, err)
	w.WebhookAttempt("failed")
	w.SubscriptionDisabled()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 2)
	var a, d map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &a))
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &d))
	assert.Equal(t, 1.0, a["WebhookAttempts"])
	assert.Equal(t, "failed", a["Outcome"])
	cw := a["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)
	assert.Equal(t, "Triggers/test", cw["Namespace"])
	assert.Equal(t, []any{[]any{"Outcome"}}, cw["Dimensions"])
	assert.Equal(t, []any{map[string]any{"Name": "WebhookAttempts", "Unit": "Count"}}, cw["Metrics"])
	assert.Equal(t, 1.0, d["SubscriptionsDisabled"])
	cw = d["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)
	assert.Equal(t, []any{[]any{}}, cw["Dimensions"])
}
