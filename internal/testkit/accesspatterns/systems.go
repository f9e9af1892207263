package accesspatterns

import (
	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/schema"
)

// Triggers returns seed 000's access patterns (Patterns 1-6), as the
// runtime's store issues them (internal/store): the id of an event yields
// its sort key, so Pattern 2 is one GetItem; index prefixes end in "#" so
// "failed" never matches "failed_permanently"; status changes are
// conditional on the current status.
func Triggers() []Pattern {
	ev := schema.Events().Name
	const ts = "2025-11-11T10:30:45.123456Z"
	return []Pattern{
		{Seed: "000", Name: "Create event (POST /v1/events)", Table: ev, Op: PutItem,
			Item: map[string]any{
				schema.AttrUserID: "user-123", schema.AttrTimestampEventID: ts + "#evt-new", schema.AttrEventID: "evt-new",
				schema.AttrEventType: "user.created", schema.AttrPayload: map[string]any{"email": "user@example.com"},
				schema.AttrStatus: "received", schema.AttrTimestamp: ts, schema.AttrTTL: 4102444800, schema.AttrRetryCount: 0,
				schema.AttrMetadata:    map[string]any{contract.MetadataSourceIP: "192.0.2.1", contract.MetadataAPIVersion: "v1"},
				schema.AttrEventTypeTS: "user.created#" + ts, schema.AttrStatusTS: "received#" + ts,
			},
			Condition: "attribute_not_exists(#sk)", Names: map[string]string{"#sk": schema.AttrTimestampEventID}},
		{Seed: "000", Name: "Get event by ID (GET /v1/events/{id})", Table: ev, Op: GetItem,
			Key: map[string]any{schema.AttrUserID: "user-123", schema.AttrTimestampEventID: "2025-11-11T10:00:00.000001Z#evt-1"}},
		{Seed: "000", Name: "Query events by user, newest first (GET /v1/inbox?status=all)", Table: ev, Op: Query,
			KeyCondition: "user_id = :uid", Values: map[string]any{":uid": "user-123"}, Descending: true, Limit: 100},
		{Seed: "000", Name: "Query events by type (GET /v1/inbox?event_type=)", Table: ev, Index: schema.EventTypeIndex, Op: Query,
			KeyCondition: "user_id = :uid AND begins_with(#et, :et)", Names: map[string]string{"#et": schema.AttrEventTypeTS},
			Values: map[string]any{":uid": "user-123", ":et": "order.completed#"}, Descending: true, Limit: 50},
		{Seed: "000", Name: "Query events by status (GET /v1/inbox, status=received by default)", Table: ev, Index: schema.StatusIndex, Op: Query,
			KeyCondition: "user_id = :uid AND begins_with(#st, :st)", Names: map[string]string{"#st": schema.AttrStatusTS},
			Values: map[string]any{":uid": "user-123", ":st": "failed#"}, Descending: true, Limit: 50},
		{Seed: "000", Name: "Update event status (PATCH /v1/events/{id}: failed -> retrying)", Table: ev, Op: UpdateItem,
			Key:       map[string]any{schema.AttrUserID: "user-123", schema.AttrTimestampEventID: "2025-11-11T10:00:00.000003Z#evt-3"},
			Update:    "SET #status = :to, #st = :st, retry_count = retry_count + :one",
			Condition: "#status = :from",
			Names:     map[string]string{"#status": schema.AttrStatus, "#st": schema.AttrStatusTS},
			Values:    map[string]any{":to": "retrying", ":from": "failed", ":st": "retrying#2025-11-11T10:00:00.000003Z", ":one": 1}},
		{Seed: "000", Name: "A subscription's attempts, newest event first (GET /v1/subscriptions/{id}/attempts; then BatchGetItem of the attempts)", Table: ev, Op: Query,
			KeyCondition: "user_id = :pk", Values: map[string]any{":pk": "attemptref#user-123#sub_1"}, Descending: true, Limit: 50},
	}
}

// Ticketing returns seed 002's access patterns, with sample values that
// match the fixtures in this package's tests.
func Ticketing() []Pattern {
	ev, reg, tk, us := schema.TicketingEvents().Name, schema.TicketingRegistrations().Name, schema.TicketingTickets().Name, schema.TicketingUsers().Name
	st := map[string]string{"#status": "status"}
	stDate := map[string]string{"#status": "status", "#date": "date"}
	return []Pattern{
		{Seed: "002", Name: "Get event by ID", Table: ev, Op: GetItem, Key: map[string]any{"eventId": "EVENT#1"}},
		{Seed: "002", Name: "List all active events", Table: ev, Index: schema.TicketingDateIndex, Op: Query,
			KeyCondition: "#status = :active", Names: st, Values: map[string]any{":active": "active"}},
		{Seed: "002", Name: "List organizer's events", Table: ev, Index: schema.TicketingOrganizerIndex, Op: Query,
			KeyCondition: "organizerId = :org", Values: map[string]any{":org": "USER#org1"}},
		{Seed: "002", Name: "List events by category", Table: ev, Index: schema.TicketingCategoryIndex, Op: Query,
			KeyCondition: "category = :cat", Values: map[string]any{":cat": "Technology"}},
		{Seed: "002", Name: "Search events by date range", Table: ev, Index: schema.TicketingDateIndex, Op: Query,
			KeyCondition: "#status = :active AND #date BETWEEN :from AND :to", Names: stDate,
			Values: map[string]any{":active": "active", ":from": "2025-12-01T00:00:00Z", ":to": "2026-01-31T23:59:59Z"}},

		{Seed: "002", Name: "Get registration by ID", Table: reg, Op: GetItem, Key: map[string]any{"registrationId": "REG#1"}},
		{Seed: "002", Name: "List user's registrations", Table: reg, Index: schema.TicketingUserIndex, Op: Query,
			KeyCondition: "userId = :u", Values: map[string]any{":u": "USER#u1"}},
		{Seed: "002", Name: "List event registrations", Table: reg, Index: schema.TicketingEventIndex, Op: Query,
			KeyCondition: "eventId = :e", Values: map[string]any{":e": "EVENT#1"}},
		{Seed: "002", Name: "Find registration by payment (sparse index)", Table: reg, Index: schema.TicketingPaymentIndex, Op: Query,
			KeyCondition: "paymentId = :p", Values: map[string]any{":p": "pi_2"}},
		{Seed: "002", Name: "Count registrations for event", Table: reg, Index: schema.TicketingEventIndex, Op: Query,
			KeyCondition: "eventId = :e", Values: map[string]any{":e": "EVENT#1"}, Count: true},

		{Seed: "002", Name: "Get ticket by ID", Table: tk, Op: GetItem, Key: map[string]any{"ticketId": "TICKET#1"}},
		{Seed: "002", Name: "Get ticket by registration", Table: tk, Index: schema.TicketingRegistrationIndex, Op: Query,
			KeyCondition: "registrationId = :r", Values: map[string]any{":r": "REG#2"}},
		{Seed: "002", Name: "List user's tickets", Table: tk, Index: schema.TicketingUserIndex, Op: Query,
			KeyCondition: "userId = :u", Values: map[string]any{":u": "USER#u1"}},
		{Seed: "002", Name: "List event tickets", Table: tk, Index: schema.TicketingEventIndex, Op: Query,
			KeyCondition: "eventId = :e", Values: map[string]any{":e": "EVENT#1"}},
		{Seed: "002", Name: "Validate QR code", Table: tk, Index: schema.TicketingQRCodeIndex, Op: Query,
			KeyCondition: "qrCode = :qr", Values: map[string]any{":qr": "TICKET#1|EVENT#1|USER#u1"}},
		{Seed: "002", Name: "Count valid tickets", Table: tk, Index: schema.TicketingEventIndex, Op: Query,
			KeyCondition: "eventId = :e AND #status = :valid", Names: st, Values: map[string]any{":e": "EVENT#1", ":valid": "valid"}, Count: true},
		{Seed: "002", Name: "Get user's upcoming tickets (query example)", Table: tk, Index: schema.TicketingUserIndex, Op: Query,
			KeyCondition: "userId = :u", Filter: "eventDate > :now AND #status = :valid", Names: st,
			Values: map[string]any{":u": "USER#u1", ":now": "2026-01-01T00:00:00Z", ":valid": "valid"}},

		{Seed: "002", Name: "Get user by ID", Table: us, Op: GetItem, Key: map[string]any{"userId": "USER#u1"}},
		{Seed: "002", Name: "Lookup user by email", Table: us, Index: schema.TicketingEmailIndex, Op: Query,
			KeyCondition: "email = :m", Values: map[string]any{":m": "jane@example.com"}},
		{Seed: "002", Name: "Map Cognito user to internal user", Table: us, Index: schema.TicketingCognitoIndex, Op: Query,
			KeyCondition: "cognitoSub = :s", Values: map[string]any{":s": "sub-2"}},
	}
}

// Tenant returns seed 003's access patterns.
func Tenant() []Pattern {
	keys, ev := schema.APIKeys().Name, schema.TenantEvents(true).Name
	return []Pattern{
		{Seed: "003", Name: "Authenticate an API key (GetItem on the key's SHA-256)", Table: keys, Op: GetItem,
			Key: map[string]any{schema.AttrKeyHash: "hash-1"}},
		{Seed: "003", Name: "List a tenant's keys, newest first", Table: keys, Index: schema.TenantIndex, Op: Query,
			KeyCondition: "tenant_id = :t", Values: map[string]any{":t": "t1"}, Descending: true},
		{Seed: "003", Name: "Inbox: a tenant's undelivered events, earliest first", Table: ev, Index: schema.TenantStatusIndex, Op: Query,
			KeyCondition: "tenant_id = :t AND begins_with(gsi1sk, :s)", Values: map[string]any{":t": "t1", ":s": "undelivered#"}, Limit: 100},
		{Seed: "003", Name: "Get one event", Table: ev, Op: GetItem, Key: map[string]any{"tenant_id": "t1", "event_id": "e2"}},
		{Seed: "003", Name: "A tenant's events of one type (optional event-type-index)", Table: ev, Index: schema.TenantEventTypeIndex, Op: Query,
			KeyCondition: "tenant_id = :t AND begins_with(gsi2sk, :et)", Values: map[string]any{":t": "t1", ":et": "order.completed#"}, Limit: 100},
	}
}

// Ferryhook returns seed 004's access patterns (its "Common Access
// Patterns" table, in order).
func Ferryhook() []Pattern {
	main, ev := schema.FerryhookMain().Name, schema.FerryhookEvents().Name
	return []Pattern{
		{Seed: "004", Name: "Get user by ID", Table: main, Op: GetItem, Key: map[string]any{"PK": "USER#u1", "SK": "PROFILE"}},
		{Seed: "004", Name: "Get user by email", Table: main, Index: schema.FerryhookGSI1, Op: Query,
			KeyCondition: "GSI1PK = :e", Values: map[string]any{":e": "EMAIL#a@example.com"}},
		{Seed: "004", Name: "List sources for user", Table: main, Op: Query,
			KeyCondition: "PK = :u AND begins_with(SK, :src)", Values: map[string]any{":u": "USER#u1", ":src": "SRC#"}},
		{Seed: "004", Name: "Get source by ID (for ingestion)", Table: main, Index: schema.FerryhookGSI3, Op: Query,
			KeyCondition: "GSI3PK = :s", Values: map[string]any{":s": "SRCID#s2"}},
		{Seed: "004", Name: "List connections for source", Table: main, Op: Query,
			KeyCondition: "PK = :s AND begins_with(SK, :conn)", Values: map[string]any{":s": "SRC#s1", ":conn": "CONN#"}},
		{Seed: "004", Name: "Authenticate API key", Table: main, Index: schema.FerryhookGSI2, Op: Query,
			KeyCondition: "GSI2PK = :h", Values: map[string]any{":h": "KEYHASH#h1"}},
		{Seed: "004", Name: "List events for source (newest first)", Table: ev, Op: Query,
			KeyCondition: "PK = :s AND begins_with(SK, :evt)", Values: map[string]any{":s": "SRC#s1", ":evt": "EVT#"}, Descending: true, Limit: 50},
		{Seed: "004", Name: "Get event by ID", Table: ev, Index: schema.FerryhookGSI1, Op: Query,
			KeyCondition: "GSI1PK = :id", Values: map[string]any{":id": "EVTID#evt_b"}, FetchItems: true},
		{Seed: "004", Name: "List attempts for event", Table: ev, Op: Query,
			KeyCondition: "PK = :e AND begins_with(SK, :att)", Values: map[string]any{":e": "EVT#evt_a", ":att": "ATT#"}},
		{Seed: "004", Name: "List user's API keys", Table: main, Op: Query,
			KeyCondition: "PK = :u AND begins_with(SK, :key)", Values: map[string]any{":u": "USER#u1", ":key": "KEY#"}},
	}
}
