package loadmodel

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/item"
	"github.com/triggers-dev/triggers/schema"
)

// probeItem is the event item docs/capacity.md's one-unit bisection
// writes (internal/testkit/capacity): its body, metadata and time.
func probeItem(t *testing.T, payload int, p schema.EventsProfile) map[string]types.AttributeValue {
	t.Helper()
	const minPayload = len(`{"data":""}`)
	body := `{"event_type":"capacity.test","payload":{"data":"` + strings.Repeat("x", payload-minPayload) + `"}}`
	req, err := event.ParseCreate([]byte(body))
	require.NoError(t, err)
	at := time.Date(2026, 11, 23, 10, 17, 23, 123456000, time.UTC)
	e, err := event.New(req, at, event.DefaultRetention, event.Metadata{SourceIP: "192.0.2.1", APIVersion: event.APIVersion})
	require.NoError(t, err)
	return item.FromEvent("capacity-probe-"+string(p), e, p)
}

// TestOneUnitPayloadMatchesMeasured checks ItemSize against DynamoDB's
// own figures: docs/capacity.md found, by bisection over real PutItems,
// that an event item takes one write unit up to a payload of 617 bytes in
// the seed profile and 678 in the lean one.
func TestOneUnitPayloadMatchesMeasured(t *testing.T) {
	for p, limit := range map[schema.EventsProfile]int{schema.ProfileSeed: 617, schema.ProfileLean: 678} {
		assert.Equal(t, 1, WriteUnits(ItemSize(probeItem(t, limit, p))), "%s: payload %d", p, limit)
		assert.Equal(t, 2, WriteUnits(ItemSize(probeItem(t, limit+1, p))), "%s: payload %d", p, limit+1)
	}
}
