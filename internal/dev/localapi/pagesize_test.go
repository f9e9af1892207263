package localapi

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/dev/localgw"
)

// Events whose JSON grows on the way out (each '<' is one byte stored and
// \u003c in the Lambda response envelope) would make a page of 10 about 15
// MB, past Lambda's 6 MB response limit, which API Gateway answers with a
// 502. Through the gateway, every page answers 200 within the limit, and
// paging lists each event once, newest first (found by review: the
// default page answered 502 for good).
func TestInboxPagesOfLargeEventsThroughGateway(t *testing.T) {
	s := serve(t, devTemplate, localgw.Options{DisableThrottling: true})
	auth := map[string]string{"Authorization": "Bearer " + s.key, "Content-Type": "application/json"}
	body := `{"event_type":"html.snapshot","payload":{"html":"` + strings.Repeat("<", 250<<10) + `"}}`
	var want []string
	for range 10 {
		res, b := s.do(t, "POST", "/live/v1/events", auth, body)
		require.Equal(t, http.StatusCreated, res.StatusCode, "%.300s", b)
		var created struct {
			ID string `json:"event_id"`
		}
		require.NoError(t, json.Unmarshal([]byte(b), &created))
		want = append([]string{created.ID}, want...)
	}
	var got []string
	pages := 0
	for path := "/live/v1/inbox?limit=50"; ; pages++ {
		require.Less(t, pages, 20)
		res, b := s.do(t, "GET", path, auth, "")
		require.Equal(t, http.StatusOK, res.StatusCode, "%s: %.300s", path, b)
		var page struct {
			Events []struct {
				ID string `json:"event_id"`
			} `json:"events"`
			Next *string `json:"next_cursor"`
		}
		require.NoError(t, json.Unmarshal([]byte(b), &page))
		require.NotEmpty(t, page.Events)
		for _, e := range page.Events {
			got = append(got, e.ID)
		}
		if page.Next == nil {
			break
		}
		path = "/live/v1/inbox?limit=50&cursor=" + url.QueryEscape(*page.Next)
	}
	assert.Equal(t, want, got, "every event once, newest first")
	assert.Greater(t, pages, 2, "pages shorter than the limit")
}
