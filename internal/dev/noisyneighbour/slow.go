package noisyneighbour

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	"github.com/triggers-dev/triggers/internal/webhook"
)

// endpointsA is tenant A's endpoints: hanging (newHangingEndpoints) or
// slow (newSlowEndpoints).
type endpointsA interface {
	urls() []string
	held() int
	counts() (total, most int)
	close()
}

// slowEndpoints are A's endpoints in the slow variant (Config.SlowDelay):
// one https receiver on loopback per endpoint, each verifying every
// request's signature with its subscription's secret and answering 200
// after delay. They count the requests in flight across all of them (the
// most at once, and their integral over time for the mean occupancy) and
// the requests per (endpoint, webhook-id) and when each was first
// answered.
type slowEndpoints struct {
	delay time.Duration
	srvs  []*httptest.Server
	stop  chan struct{}
	once  sync.Once

	mu         sync.Mutex
	secrets    []webhook.Secret
	inFlight   int
	most       int
	total      int
	unverified int
	since      time.Time     // of the last change of inFlight
	area       time.Duration // integral of inFlight over time since reset
	areaFrom   time.Time
	requests   map[pair]int
	answered   map[pair]time.Time
}

// pair is one of A's deliveries: an event to an endpoint.
type pair struct {
	endpoint int
	id       string
}

func newSlowEndpoints(n int, delay time.Duration) *slowEndpoints {
	s := &slowEndpoints{delay: delay, stop: make(chan struct{}), secrets: make([]webhook.Secret, n),
		requests: map[pair]int{}, answered: map[pair]time.Time{}, since: time.Now(), areaFrom: time.Now()}
	for i := range n {
		s.srvs = append(s.srvs, httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) { s.serve(i, w, req) })))
	}
	return s
}

func (s *slowEndpoints) setSecret(i int, sec webhook.Secret) {
	s.mu.Lock()
	s.secrets[i] = sec
	s.mu.Unlock()
}

// add changes inFlight by d, keeping the integral; s.mu held.
func (s *slowEndpoints) add(d int, now time.Time) {
	s.area += time.Duration(s.inFlight) * now.Sub(s.since)
	s.since = now
	s.inFlight += d
	s.most = max(s.most, s.inFlight)
}

func (s *slowEndpoints) serve(i int, w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	s.mu.Lock()
	if err := (&webhook.Verifier{Secrets: []webhook.Secret{s.secrets[i]}}).Verify(req.Header, body); err != nil {
		s.unverified++
		s.mu.Unlock()
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	s.total++
	s.add(1, time.Now())
	s.mu.Unlock()
	t := time.NewTimer(s.delay)
	select {
	case <-t.C:
	case <-s.stop:
		t.Stop()
	case <-req.Context().Done():
		t.Stop()
	}
	now := time.Now()
	p := pair{i, req.Header.Get(webhook.HeaderID)}
	s.mu.Lock()
	s.add(-1, now)
	s.requests[p]++
	if _, ok := s.answered[p]; !ok {
		s.answered[p] = now
	}
	s.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

func (s *slowEndpoints) urls() []string {
	out := make([]string, len(s.srvs))
	for i, srv := range s.srvs {
		out[i] = srv.URL + "/hook"
	}
	return out
}

func (s *slowEndpoints) held() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inFlight
}

func (s *slowEndpoints) counts() (total, most int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total, s.most
}

// reset forgets the most in flight at once and starts the occupancy's
// integral anew (after the warm-up).
func (s *slowEndpoints) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	s.most, s.area, s.since, s.areaFrom = s.inFlight, 0, now, now
}

// occupancy returns the mean requests in flight from the last reset to
// until.
func (s *slowEndpoints) occupancy(until time.Time) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	area := s.area + time.Duration(s.inFlight)*until.Sub(s.since)
	if d := until.Sub(s.areaFrom); d > 0 {
		return float64(area) / float64(d)
	}
	return 0
}

// answeredCount counts the (endpoint, webhook-id) pairs answered.
func (s *slowEndpoints) answeredCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.answered)
}

// hasAll reports whether every event of ids reached every endpoint.
func (s *slowEndpoints) hasAll(ids []string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.srvs {
		for _, id := range ids {
			if _, ok := s.answered[pair{i, id}]; !ok {
				return false
			}
		}
	}
	return true
}

// outcome fills A's deliveries of ids (oldest first): how many
// (endpoint, event) pairs were answered, missing, received more than
// once, still pending at bDone (B's last first receipt), and answered
// among their endpoint's oldest.
func (s *slowEndpoints) outcome(a *TenantA, ids []string, bDone time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a.Slow = &SlowA{Delay: s.delay, Requests: s.total, MaxInFlight: s.most, Unverified: s.unverified}
	for i := range s.srvs {
		// The endpoint got d of its events: those among its d oldest
		// were delivered oldest first.
		d := 0
		for _, id := range ids {
			if _, ok := s.answered[pair{i, id}]; ok {
				d++
			}
		}
		a.Slow.PerEndpoint = append(a.Slow.PerEndpoint, d)
		for _, id := range ids[:d] {
			if _, ok := s.answered[pair{i, id}]; ok {
				a.Slow.OldestFirst++
			}
		}
		for _, id := range ids {
			p := pair{i, id}
			at, ok := s.answered[p]
			a.Slow.Wanted++
			if !ok {
				a.Slow.Missing++
			} else {
				a.Slow.Delivered++
				if at.After(a.Slow.LastDelivered) {
					a.Slow.LastDelivered = at
				}
			}
			if !ok || at.After(bDone) {
				a.Slow.PendingWhenBDone++
			}
			if n := s.requests[p]; n > 1 {
				a.Slow.Duplicates += n - 1
			}
		}
	}
}

func (s *slowEndpoints) close() {
	s.once.Do(func() {
		close(s.stop)
		for _, srv := range s.srvs {
			srv.Close()
		}
	})
}

// SlowA is what tenant A's slow endpoints saw (Config.SlowDelay).
type SlowA struct {
	// Delay is how long each endpoint took to answer 200.
	Delay time.Duration `json:"delay_ns"`
	// Requests counts the signed requests A's endpoints got, warm-up
	// included; Unverified those whose signature did not verify.
	Requests   int `json:"requests"`
	Unverified int `json:"unverified"`
	// MaxInFlight is the most requests A's endpoints held at once after
	// the warm-up; Occupancy the mean number in flight from the start of
	// the posting to the end of the drain (the slow lane's occupancy when
	// the lane is on).
	MaxInFlight int     `json:"max_in_flight"`
	Occupancy   float64 `json:"occupancy"`
	// Wanted counts A's deliveries due, (endpoint, event) pairs of the
	// events posted after the warm-up; Delivered those answered,
	// Missing those never made within the drain, Duplicates requests
	// beyond the first per pair.
	Wanted     int `json:"wanted"`
	Delivered  int `json:"delivered"`
	Missing    int `json:"missing"`
	Duplicates int `json:"duplicates"`
	// PendingWhenBDone counts the pairs not yet answered when B's last
	// event first arrived: A's backlog while B was served.
	PendingWhenBDone int `json:"pending_when_b_done"`
	// OldestFirst counts the pairs delivered that were among their
	// endpoint's oldest events (by event id, UUIDv7: the order the API
	// created them), as many as it got: equal
	// to Delivered when every endpoint got its events oldest first, lower
	// when newer events went ahead of older ones still waiting.
	OldestFirst int `json:"oldest_first"`
	// PerEndpoint counts the pairs delivered to each of A's endpoints,
	// in the order they were subscribed: how evenly the tenant's slow
	// lane served its endpoints (they share it, each behind its own
	// wake).
	PerEndpoint []int `json:"per_endpoint"`
	// LastDelivered is when the last pair was answered.
	LastDelivered time.Time `json:"last_delivered"`
}
