package event_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/event"
)

// encoding/json matches field names case-insensitively: a second spelling
// of a field passed the duplicate-name rule (the names differ) and then
// overwrote the first. Field names are exact; any other spelling is an
// unknown field, named with the right one.
func TestFieldNamesAreCaseSensitive(t *testing.T) {
	for _, body := range []string{
		`{"event_type":"a","EVENT_TYPE":"b","payload":{}}`,
		`{"event_type":"a","payload":{},"PAYLOAD":{"x":1}}`,
		`{"Event_Type":"a","payload":{}}`,
	} {
		_, err := event.ParseCreate([]byte(body))
		var in *event.InputError
		require.ErrorAs(t, err, &in, body)
		assert.Equal(t, event.CodeInvalidJSON, in.Code, body)
		assert.Contains(t, in.Message, "field names are case-sensitive", body)
	}
	_, err := event.ParseStatus([]byte(`{"STATUS":"delivered"}`))
	assert.ErrorContains(t, err, `use "status"`)
	_, err = event.ParseAck([]byte(`{"event_ids":["a"],"Event_IDs":["b"]}`))
	assert.ErrorContains(t, err, `use "event_ids"`)

	reqs, errs, err := event.ParseBatch([]byte(`{"events":[{"event_type":"a","EVENT_TYPE":"b","payload":{}},{"event_type":"ok","payload":{}}]}`))
	require.NoError(t, err)
	assert.ErrorContains(t, errs[0], "case-sensitive", "the entry with a second spelling fails alone")
	require.NoError(t, errs[1])
	assert.Equal(t, "ok", reqs[1].EventType)

	// The exact names still work, and the payload's own keys keep their case.
	req, err := event.ParseCreate([]byte(`{"event_type":"a","payload":{"K":1,"k":2}}`))
	require.NoError(t, err)
	assert.Len(t, req.Payload, 2)
}
