package contract_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/triggers-dev/triggers/contract"
)

func TestValidMetricsNamespace(t *testing.T) {
	for ns, ok := range map[string]bool{
		"Triggers/triggers-prod-api": true,
		"My App:events #1_x.y":       true,
		"":                           false,
		"AWS/DynamoDB":               false,
		"bad$name":                   false,
		strings.Repeat("a", 256):     false,
	} {
		err := contract.ValidMetricsNamespace(ns)
		assert.Equal(t, ok, err == nil, "ValidMetricsNamespace(%q) = %v", ns, err)
		if err != nil {
			assert.Contains(t, err.Error(), "namespace")
		}
	}
}
