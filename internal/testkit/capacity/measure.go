package capacity

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/triggers-dev/triggers/schema"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/triggers-dev/triggers/internal/apikey"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/httpapi"
	"github.com/triggers-dev/triggers/internal/store"
)

// Operation names of the document's rows.
const (
	OpIngest           = "ingest"
	OpIdempotentIngest = "idempotent ingest"
	OpRepeat           = "repeat of an idempotent ingest"
	OpAck              = "ack (mark delivered)"
	OpStatusChange     = "status change"
	OpInboxPage        = "inbox page (50 events)"
	OpGet              = "get by id"
	OpKeyLookup        = "authorizer key lookup"
)

// InboxPageSize is the page the inbox row reads: the API's default.
const InboxPageSize = event.DefaultLimit

// Row is the capacity one API operation consumed at one payload size.
type Row struct {
	Operation string
	// Request is the HTTP request measured, such as "POST /v1/events".
	Request string
	// Payload is the size of the event's payload JSON in bytes.
	Payload int
	// Units are the units reported, by table or index.
	Units Units
	// Calls lists the DynamoDB calls, in order ("PutItem",
	// "TransactWriteItems (canceled)"...).
	Calls []string
	// Unreported lists the calls DynamoDB answered with an error, whose
	// capacity no response reports (a canceled transaction).
	Unreported []string
}

// Config says where to measure.
type Config struct {
	// DB is a DynamoDB client with the Recorder installed (Option).
	DB *dynamodb.Client
	// Recorder is the one installed on DB.
	Recorder *Recorder
	// EventsTable and KeysTable are empty tables made from
	// schema.EventsFor(Profile) and schema.APIKeys.
	EventsTable, KeysTable string
	// Profile is the events table's profile (default schema.ProfileSeed).
	Profile schema.EventsProfile
}

// Measurement is what Measure found.
type Measurement struct {
	// Profile is the events table's profile measured.
	Profile schema.EventsProfile
	// Rows are the operations at each payload size, then the key lookup.
	Rows []Row
	// OneUnitPayload is the largest payload (bytes of payload JSON) whose
	// event item still takes one write unit on the table.
	OneUnitPayload int
}

// Measure runs each operation of the document through the real HTTP
// handler (httpapi over store) at each payload size and returns the
// capacity each consumed on the events table and its indexes (the key
// lookup row: on the API-keys table). Every size gets its own tenant.
func Measure(ctx context.Context, cfg Config, payloads []int) (Measurement, error) {
	out := Measurement{Profile: cfg.Profile}
	if out.Profile == "" {
		out.Profile = schema.ProfileSeed
	}
	st := store.New(cfg.DB, cfg.EventsTable, store.WithProfile(out.Profile))
	api, err := httpapi.New(httpapi.Config{
		Store:        st,
		CursorSecret: []byte(strings.Repeat("capacity-cursor-secret-", 2)),
		Logger:       slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return out, err
	}
	var rows []Row
	for _, size := range payloads {
		m := measurer{cfg: cfg, api: api, tenant: fmt.Sprintf("capacity-%s-%d", out.Profile, size), size: size}
		r, err := m.rows(ctx)
		if err != nil {
			return out, fmt.Errorf("payload %d bytes: %w", size, err)
		}
		rows = append(rows, r...)
	}
	keys := apikey.NewStore(cfg.DB, cfg.KeysTable)
	key, _, err := keys.Create(ctx, "capacity-keys-"+string(out.Profile), "capacity")
	if err != nil {
		return out, err
	}
	cfg.Recorder.Reset()
	if _, err := keys.Authenticate(ctx, key); err != nil {
		return out, fmt.Errorf("authenticate: %w", err)
	}
	row, err := row(cfg.Recorder, cfg.KeysTable, OpKeyLookup, "REQUEST authorizer, cache miss", 0)
	if err != nil {
		return out, err
	}
	out.Rows = append(rows, row)
	out.OneUnitPayload, err = oneUnitPayload(ctx, cfg, st)
	return out, err
}

// probeTime is when oneUnitPayload's events are made: its ttl (plus the
// default retention) has no trailing zero, as most ttls do not.
var probeTime = time.Date(2026, 11, 23, 10, 17, 23, 123456000, time.UTC)

// oneUnitPayload finds, by bisection over real PutItems through the
// store, the largest payload whose event item takes one write unit on the
// table.
func oneUnitPayload(ctx context.Context, cfg Config, st *store.Store) (int, error) {
	m := measurer{tenant: "capacity-probe-" + string(cfg.Profile)}
	units := func(size int) (float64, error) {
		m.size = size
		req, err := event.ParseCreate(m.body())
		if err != nil {
			return 0, err
		}
		// The metadata of the HTTP rows (httptest's client address), at a
		// fixed time: DynamoDB sizes a number by its significant digits, so
		// a ttl ending in zeros would make the item a byte smaller and the
		// limit found depend on the clock.
		e, err := event.New(req, probeTime, event.DefaultRetention, event.Metadata{SourceIP: "192.0.2.1", APIVersion: event.APIVersion})
		if err != nil {
			return 0, err
		}
		cfg.Recorder.Reset()
		if err := st.Put(ctx, m.tenant, e); err != nil {
			return 0, err
		}
		u, err := Sum(cfg.Recorder.Calls(), cfg.EventsTable)
		return u.Write[TableKey], err
	}
	lo, hi := minPayload, 1<<10 // lo fits in one unit, hi does not
	if u, err := units(lo); err != nil || u != 1 {
		return 0, fmt.Errorf("the smallest event takes %v write units (%v), want 1", u, err)
	}
	if u, err := units(hi); err != nil || u <= 1 {
		return 0, fmt.Errorf("a 1 KB payload takes %v write units (%v), want more than 1", u, err)
	}
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		u, err := units(mid)
		if err != nil {
			return 0, err
		}
		if u == 1 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, nil
}

type measurer struct {
	cfg    Config
	api    http.Handler
	tenant string
	size   int
}

// minPayload is the smallest payload body() makes.
const minPayload = len(`{"data":""}`)

func (m *measurer) body() []byte {
	payload := `{"data":"` + strings.Repeat("x", m.size-minPayload) + `"}`
	return []byte(`{"event_type":"capacity.test","payload":` + payload + `}`)
}

// call serves one request and checks its status.
func (m *measurer) call(ctx context.Context, method, target string, body []byte, header http.Header, want int) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req := httptest.NewRequestWithContext(httpapi.WithTenant(ctx, m.tenant), method, target, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	m.api.ServeHTTP(rec, req)
	if rec.Code != want {
		return nil, fmt.Errorf("%s %s: status %d, want %d: %s", method, target, rec.Code, want, rec.Body.String())
	}
	return rec.Body.Bytes(), nil
}

// ingest posts one event and returns its id.
func (m *measurer) ingest(ctx context.Context, header http.Header, want int) (string, error) {
	b, err := m.call(ctx, http.MethodPost, "/v1/events", m.body(), header, want)
	if err != nil {
		return "", err
	}
	var e struct {
		ID string `json:"event_id"`
	}
	if err := json.Unmarshal(b, &e); err != nil {
		return "", err
	}
	return e.ID, nil
}

// measured resets the recorder, runs f, and returns the row.
func (m *measurer) measured(op, request string, f func() error) (Row, error) {
	m.cfg.Recorder.Reset()
	if err := f(); err != nil {
		return Row{}, fmt.Errorf("%s: %w", op, err)
	}
	return row(m.cfg.Recorder, m.cfg.EventsTable, op, request, m.size)
}

func row(rec *Recorder, table, op, request string, size int) (Row, error) {
	calls := rec.Calls()
	u, err := Sum(calls, table)
	if err != nil {
		return Row{}, fmt.Errorf("%s: %w", op, err)
	}
	r := Row{Operation: op, Request: request, Payload: size, Units: u}
	for _, c := range calls {
		name := c.Operation
		if c.Err != nil {
			name += " (failed: no capacity reported)"
			r.Unreported = append(r.Unreported, c.Operation)
		}
		r.Calls = append(r.Calls, name)
	}
	return r, nil
}

func (m *measurer) rows(ctx context.Context) ([]Row, error) {
	var rows []Row
	add := func(r Row, err error) error {
		if err == nil {
			rows = append(rows, r)
		}
		return err
	}
	idem := http.Header{"Idempotency-Key": {fmt.Sprintf("capacity-%d", m.size)}}
	var id string
	steps := []func() error{
		func() error {
			return add(m.measured(OpIngest, "POST /v1/events", func() (err error) {
				id, err = m.ingest(ctx, nil, http.StatusCreated)
				return err
			}))
		},
		func() error {
			return add(m.measured(OpIdempotentIngest, "POST /v1/events with Idempotency-Key", func() error {
				_, err := m.ingest(ctx, idem, http.StatusCreated)
				return err
			}))
		},
		func() error {
			return add(m.measured(OpRepeat, "the same request again (200, the original event)", func() error {
				_, err := m.ingest(ctx, idem, http.StatusOK)
				return err
			}))
		},
		func() error {
			return add(m.measured(OpGet, "GET /v1/events/{id}", func() error {
				_, err := m.call(ctx, http.MethodGet, "/v1/events/"+id, nil, nil, http.StatusOK)
				return err
			}))
		},
		func() error {
			return add(m.measured(OpAck, `POST /v1/inbox/ack {"event_ids":[id]}`, func() error {
				b, err := m.call(ctx, http.MethodPost, "/v1/inbox/ack", []byte(`{"event_ids":["`+id+`"]}`), nil, http.StatusOK)
				if err == nil && !bytes.Contains(b, []byte(`"delivered":["`+id+`"]`)) {
					err = fmt.Errorf("ack: %s", b)
				}
				return err
			}))
		},
		func() error {
			other, err := m.ingest(ctx, nil, http.StatusCreated)
			if err != nil {
				return err
			}
			return add(m.measured(OpStatusChange, `PATCH /v1/events/{id} {"status":"failed"}`, func() error {
				_, err := m.call(ctx, http.MethodPatch, "/v1/events/"+other, []byte(`{"status":"failed"}`), nil, http.StatusOK)
				return err
			}))
		},
		func() error {
			// A full page of undelivered events.
			for range InboxPageSize {
				if _, err := m.ingest(ctx, nil, http.StatusCreated); err != nil {
					return err
				}
			}
			return add(m.measured(OpInboxPage, fmt.Sprintf("GET /v1/inbox?limit=%d", InboxPageSize), func() error {
				b, err := m.call(ctx, http.MethodGet, fmt.Sprintf("/v1/inbox?limit=%d", InboxPageSize), nil, nil, http.StatusOK)
				if err != nil {
					return err
				}
				var page struct {
					Events []json.RawMessage `json:"events"`
				}
				if err := json.Unmarshal(b, &page); err != nil {
					return err
				}
				if len(page.Events) != InboxPageSize {
					return fmt.Errorf("the page holds %d events, want %d", len(page.Events), InboxPageSize)
				}
				return nil
			}))
		},
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return nil, err
		}
	}
	return rows, nil
}
