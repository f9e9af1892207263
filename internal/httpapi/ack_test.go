package httpapi_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/event"
)

// An ack whose event_ids holds a null (the OpenAPI document says strings)
// is a 400 naming the entry, and no event of it is acknowledged: the null
// was read as the id "" and reported as unknown, while the other ids were
// delivered.
func TestAckRefusesNullEventIDs(t *testing.T) {
	e := newEnv(t)
	ev := e.post("tenant-a", "t", `{}`)
	for _, body := range []string{
		`{"event_ids":["` + ev.ID + `",null]}`,
		`{"event_ids":[null,"` + ev.ID + `"]}`,
		`{"event_ids":[null]}`,
	} {
		got := e.do(req{method: "POST", path: "/v1/inbox/ack", tenant: "tenant-a", body: body})
		assert.Equal(t, http.StatusBadRequest, got.code, "%s: %s", body, got.body)
		assert.Equal(t, "invalid_ack", got.errCode(t), "%s", body)
		assert.Contains(t, string(got.body), "is null", "%s", body)
	}
	stored, err := e.store.Get(context.Background(), "tenant-a", ev.ID)
	require.NoError(t, err)
	assert.Equal(t, event.Received, stored.Status, "a refused ack acknowledged nothing")
}
