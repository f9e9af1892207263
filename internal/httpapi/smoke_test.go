package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSmoke(t *testing.T) {
	e := newEnv(t)
	ev := e.post("tenant-a", "user.created", `{"a":1}`)
	r := e.do(req{method: "GET", path: "/v1/events/" + ev.ID, tenant: "tenant-a"})
	assert.Equal(t, http.StatusOK, r.code, "%s", r.body)
	r = e.do(req{method: "GET", path: "/v1/inbox", tenant: "tenant-a"})
	assert.Equal(t, http.StatusOK, r.code, "%s", r.body)
	t.Logf("%s", r.body)
	r = e.do(req{method: "PATCH", path: "/v1/events/" + ev.ID, tenant: "tenant-a", body: `{"status":"failed"}`})
	assert.Equal(t, http.StatusOK, r.code, "%s", r.body)
	r = e.do(req{method: "PATCH", path: "/v1/events/" + ev.ID, tenant: "tenant-a", body: `{"status":"failed"}`})
	assert.Equal(t, http.StatusConflict, r.code, "%s", r.body)
	r = e.do(req{method: "POST", path: "/v1/events", tenant: "tenant-a", body: `{"event_type":"x","payload":{}}`, headers: map[string]string{"Idempotency-Key": "k1"}})
	assert.Equal(t, http.StatusCreated, r.code, "%s", r.body)
	r2 := e.do(req{method: "POST", path: "/v1/events", tenant: "tenant-a", body: `{"event_type":"x","payload":{}}`, headers: map[string]string{"Idempotency-Key": "k1"}})
	assert.Equal(t, http.StatusOK, r2.code, "%s", r2.body)
	assert.JSONEq(t, string(r.body), string(r2.body))
	t.Logf("%s", e.logs)
}
