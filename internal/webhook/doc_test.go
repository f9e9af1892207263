package webhook

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/testkit/docstest"
)

// docs/api.md's "What a receiver gets" names every header a delivery
// carries, with the fixed values (Content-Type, User-Agent): receivers
// allow-list and route on them. Found by review: User-Agent was sent and
// not named.
func TestAPIDocNamesEveryDeliveryHeader(t *testing.T) {
	section := docstest.Section(t, "docs/api.md", "**What a receiver gets.**", "\n\n")

	got := make(chan received, 1)
	srv, client := tlsServer(t, recordingHandler(got, http.StatusOK, ""), 0)
	a := Send(context.Background(), client, Request{URL: srv.URL, MsgID: "e1", Body: []byte("{}"), Secrets: []Secret{NewSecret()}, Now: sendTime})
	require.Equal(t, Delivered, a.Outcome, "%+v", a)
	r := <-got

	fixed := map[string]bool{"Content-Type": true, "User-Agent": true}
	for name, vs := range r.header {
		if name == "Content-Length" { // the transport's framing
			continue
		}
		assert.Contains(t, strings.ToLower(section), "`"+strings.ToLower(name), "docs/api.md does not name the %s header", name)
		if fixed[name] {
			assert.Contains(t, section, "`"+name+": "+vs[0]+"`", "docs/api.md does not give %s's value", name)
		}
	}
	assert.Contains(t, r.header, "Webhook-Signature", "the request carries the headers the test checks")
}
