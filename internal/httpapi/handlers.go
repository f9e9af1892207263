package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/event"
	"github.com/triggers-dev/triggers/internal/shard"
)

// ackConcurrency bounds the parallel UpdateItem calls of one ack request.
const ackConcurrency = 8

var (
	errTooLarge = &apiError{status: http.StatusRequestEntityTooLarge, code: "payload_too_large", message: "the body is larger than 256 KiB"}
	errMedia    = &apiError{status: http.StatusUnsupportedMediaType, code: "unsupported_media_type", message: "send Content-Type: application/json"}
)

// readBody checks the content type and reads at most event.MaxBodyBytes.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if cts := r.Header.Values("Content-Type"); len(cts) > 1 {
		// Only the first would be read: application/json then
		// text/plain was taken for JSON (found by review).
		return nil, &apiError{status: http.StatusUnsupportedMediaType, code: "unsupported_media_type", message: fmt.Sprintf("Content-Type is given %d times: send one, application/json", len(cts))}
	}
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return nil, errMedia
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return nil, &apiError{status: http.StatusUnsupportedMediaType, code: "unsupported_media_type", message: fmt.Sprintf("Content-Type charset %q is not supported: send UTF-8 JSON (charset=utf-8, or no charset)", truncatePath(cs))}
	}
	if ce := r.Header.Values("Content-Encoding"); len(ce) > 0 && !(len(ce) == 1 && strings.EqualFold(strings.TrimSpace(ce[0]), "identity")) {
		return nil, &apiError{status: http.StatusUnsupportedMediaType, code: "unsupported_media_type", message: fmt.Sprintf("Content-Encoding %q is not supported: send the body uncompressed", truncatePath(strings.Join(ce, ", ")))}
	}
	if r.ContentLength > event.MaxBodyBytes {
		return nil, errTooLarge
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, event.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, errTooLarge
		}
		return nil, &apiError{status: http.StatusBadRequest, code: "invalid_body", message: "the body could not be read", cause: err}
	}
	return data, nil
}

func (a *API) metadata(r *http.Request, ri *reqInfo) event.Metadata {
	return event.Metadata{SourceIP: sourceIP(r), APIVersion: event.APIVersion, CorrelationID: ri.correlationID}
}

// requestHash identifies a create request for idempotency: the event type
// and the payload re-encoded canonically (sorted keys, numbers as sent,
// HTML escaping on, a newline: json.Encoder's output for the payload
// decoded to map[string]any).
func requestHash(req event.CreateRequest) string {
	h := sha256.New()
	h.Write([]byte(req.EventType))
	h.Write([]byte{0})
	b, _ := req.Payload.AppendJSON(nil, true)
	h.Write(append(b, '\n'))
	return hex.EncodeToString(h.Sum(nil))
}

// createEvent serves POST /v1/events.
func (a *API) createEvent(w http.ResponseWriter, r *http.Request, ri *reqInfo, _ string) (int, any, error) {
	key, err := idempotencyKey(r)
	if err != nil {
		return 0, nil, err
	}
	data, err := readBody(w, r)
	if err != nil {
		return 0, nil, err
	}
	req, err := event.ParseCreate(data)
	if err != nil {
		return 0, nil, err
	}
	e, err := event.New(req, a.now(), a.retention, a.metadata(r, ri))
	if err != nil {
		return 0, nil, err
	}
	e.ID = shardID(r.Context(), e.ID)
	if key == "" {
		if err := a.store.Put(r.Context(), ri.tenant, e); err != nil {
			return 0, nil, err
		}
		w.Header().Set("Location", BasePath(r.Context())+"/v1/events/"+e.ID)
		ri.ingested = 1
		return http.StatusCreated, e, nil
	}
	stored, created, err := a.store.PutIdempotent(r.Context(), ri.tenant, e, key, requestHash(req))
	if err != nil {
		return 0, nil, err
	}
	w.Header().Set("Location", BasePath(r.Context())+"/v1/events/"+stored.ID)
	if created {
		ri.ingested = 1
		return http.StatusCreated, stored, nil
	}
	return http.StatusOK, stored, nil
}

// BatchResult is one entry of a batch response.
type BatchResult struct {
	Index  int                   `json:"index"`
	Status int                   `json:"status"`
	Event  *event.Event          `json:"event,omitempty"`
	Error  *contract.ErrorDetail `json:"error,omitempty"`
}

type batchResponse struct {
	Results []BatchResult `json:"results"`
}

// createBatch serves POST /v1/events/batch.
func (a *API) createBatch(w http.ResponseWriter, r *http.Request, ri *reqInfo, _ string) (int, any, error) {
	// An Idempotency-Key was refused before (checkNoIdempotencyKey).
	data, err := readBody(w, r)
	if err != nil {
		return 0, nil, err
	}
	reqs, errs, err := event.ParseBatch(data)
	if err != nil {
		return 0, nil, err
	}
	results := make([]BatchResult, len(reqs))
	var toStore []event.Event
	var idx []int
	now := a.now()
	md := a.metadata(r, ri)
	for i := range reqs {
		results[i].Index = i
		if errs[i] == nil {
			var e event.Event
			// One microsecond apart, so the batch keeps its order in
			// the inbox (sort keys are timestamp#event_id).
			e, errs[i] = event.New(reqs[i], now.Add(time.Duration(i)*time.Microsecond), a.retention, md)
			if errs[i] == nil {
				e.ID = shardID(r.Context(), e.ID)
				toStore = append(toStore, e)
				idx = append(idx, i)
			}
		}
		if errs[i] != nil {
			results[i].setError(errs[i], ri.requestID)
		}
	}
	storeErrs := a.store.PutBatch(r.Context(), ri.tenant, toStore)
	var firstErr error
	for j, i := range idx {
		if storeErrs[j] != nil {
			results[i].setError(storeErrs[j], ri.requestID)
			if firstErr == nil && results[i].Status >= 500 {
				firstErr = storeErrs[j]
			}
			continue
		}
		e := toStore[j]
		results[i].Status = http.StatusCreated
		results[i].Event = &e
	}
	for _, res := range results {
		if res.Error != nil {
			ri.reject(res.Error.Code)
		} else {
			ri.ingested++
		}
	}
	if firstErr != nil {
		// Logged once with the request; the response is still a 207.
		a.log.WarnContext(r.Context(), "batch items not stored", "request_id", ri.requestID, "tenant", ri.tenant, "correlation_id", ri.correlationID, "error", firstErr.Error())
	}
	return http.StatusMultiStatus, batchResponse{Results: results}, nil
}

func (b *BatchResult) setError(err error, requestID string) {
	ae := toAPIError(err)
	b.Status = ae.status
	b.Error = &contract.ErrorDetail{Code: ae.code, Message: ae.message, RequestID: requestID}
}

// getEvent serves GET /v1/events/{event_id}.
func (a *API) getEvent(w http.ResponseWriter, r *http.Request, ri *reqInfo, id string) (int, any, error) {
	e, err := a.store.Get(r.Context(), ri.tenant, id)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, e, nil
}

// patchEvent serves PATCH /v1/events/{event_id}.
func (a *API) patchEvent(w http.ResponseWriter, r *http.Request, ri *reqInfo, id string) (int, any, error) {
	data, err := readBody(w, r)
	if err != nil {
		return 0, nil, err
	}
	to, err := event.ParseStatus(data)
	if err != nil {
		return 0, nil, err
	}
	e, err := a.store.TransitionOnce(r.Context(), ri.tenant, id, event.Sources(to), to)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, e, nil
}

// AckConflict names an event that could not be acknowledged because of its
// status.
type AckConflict struct {
	EventID string       `json:"event_id"`
	Status  event.Status `json:"status"`
}

// AckResponse is the body of a successful ack.
type AckResponse struct {
	Delivered        []string      `json:"delivered"`
	AlreadyDelivered []string      `json:"already_delivered"`
	Unknown          []string      `json:"unknown"`
	Conflicts        []AckConflict `json:"conflicts"`
}

// ack serves POST /v1/inbox/ack: received -> delivered for each id.
func (a *API) ack(w http.ResponseWriter, r *http.Request, ri *reqInfo, _ string) (int, any, error) {
	data, err := readBody(w, r)
	if err != nil {
		return 0, nil, err
	}
	ids, err := event.ParseAck(data)
	if err != nil {
		return 0, nil, err
	}
	type outcome struct {
		status event.Status
		err    error
	}
	outcomes := make([]outcome, len(ids))
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	sem := make(chan struct{}, ackConcurrency)
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			_, err := a.store.Transition(ctx, ri.tenant, id, []event.Status{event.Received}, event.Delivered)
			outcomes[i] = outcome{err: err}
		}()
	}
	wg.Wait()
	resp := AckResponse{Delivered: []string{}, AlreadyDelivered: []string{}, Unknown: []string{}, Conflicts: []AckConflict{}}
	for i, o := range outcomes {
		var te *event.TransitionError
		switch {
		case o.err == nil:
			resp.Delivered = append(resp.Delivered, ids[i])
		case errors.As(o.err, &te) && te.From == event.Delivered:
			resp.AlreadyDelivered = append(resp.AlreadyDelivered, ids[i])
		case errors.As(o.err, &te):
			resp.Conflicts = append(resp.Conflicts, AckConflict{EventID: ids[i], Status: te.From})
		case errors.Is(o.err, event.ErrNotFound):
			resp.Unknown = append(resp.Unknown, ids[i])
		default:
			// Storage failed: the ack is idempotent, so the client retries
			// the whole request.
			return 0, nil, o.err
		}
	}
	return http.StatusOK, resp, nil
}

// InboxPage is the body of GET /v1/inbox.
type InboxPage struct {
	Events     []event.Event `json:"events"`
	NextCursor *string       `json:"next_cursor"`
}

// AppendJSON appends the page's JSON to dst exactly as encoding/json with
// HTML escaping off writes it (without the trailing newline), each event
// by event.Event.AppendJSON.
func (p InboxPage) AppendJSON(dst []byte) ([]byte, error) {
	if p.Events == nil {
		dst = append(dst, `{"events":null`...)
	} else {
		dst = append(dst, `{"events":[`...)
		for i, e := range p.Events {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = e.AppendJSON(dst); err != nil {
				return dst, err
			}
		}
		dst = append(dst, ']')
	}
	dst = append(dst, `,"next_cursor":`...)
	if p.NextCursor == nil {
		dst = append(dst, "null"...)
	} else {
		dst = event.AppendString(dst, *p.NextCursor, false)
	}
	return append(dst, '}'), nil
}

// listInbox serves GET /v1/inbox.
func (a *API) listInbox(w http.ResponseWriter, r *http.Request, ri *reqInfo, _ string) (int, any, error) {
	p, err := event.ParseRawListQuery(r.URL.RawQuery)
	if err != nil {
		return 0, nil, err
	}
	// The page is written straight from the stored payloads
	// (InboxPage.AppendJSON).
	q := event.InboxQuery{Tenant: ri.tenant, Status: p.Status, EventType: p.EventType, Ascending: p.Ascending, Limit: p.Limit}
	shape := p.Shape()
	if p.Cursor != "" {
		pos, err := a.cursors.Decode(ri.tenant, shape, p.Cursor)
		if err != nil {
			return 0, nil, err
		}
		q.After = &pos
	}
	page, err := a.store.List(r.Context(), q)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, a.inboxPage(ri.tenant, shape, page), nil
}

func (a *API) inboxPage(tenant, shape string, page event.Page) InboxPage {
	out := InboxPage{Events: page.Events}
	if out.Events == nil {
		out.Events = []event.Event{}
	}
	if page.Next != nil {
		c := a.cursors.Encode(tenant, shape, *page.Next)
		out.NextCursor = &c
	}
	return out
}

// shardID returns a new event's id with the shard it goes to written into
// it (shard.Assign), for a tenant whose context has several write
// shards; the store writes the event to the shard the id names.
func shardID(ctx context.Context, id string) string {
	if c, ok := shard.FromContext(ctx); ok && c.Write > 1 {
		id, _ = shard.Assign(id, c.Write)
	}
	return id
}
