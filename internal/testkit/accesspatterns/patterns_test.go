package accesspatterns

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/ddb/ddbtest"
	"github.com/triggers-dev/triggers/schema"
)

var db *ddbtest.Local

var update = flag.Bool("update", false, "rewrite stacks/ACCESS_PATTERNS.md")

func TestMain(m *testing.M) { os.Exit(ddbtest.MainWith(m, &db, ddbtest.Options{NoStreams: true})) }

const ttlFar = 4102444800 // 2100-01-01, epoch seconds

// fixtures are sample items per table, shaped as the seeds show them.
var fixtures = map[string][]map[string]any{
	"events": {
		triggersEvent("user-123", "2025-11-11T10:00:00.000001Z", "evt-1", "user.created", "received"),
		triggersEvent("user-123", "2025-11-11T10:00:00.000002Z", "evt-2", "order.completed", "delivered"),
		triggersEvent("user-123", "2025-11-11T10:00:00.000003Z", "evt-3", "order.completed", "failed"),
		triggersEvent("user-123", "2025-11-11T10:00:00.000004Z", "evt-4", "order.completed", "failed"),
		triggersEvent("user-456", "2025-11-11T10:00:00.000005Z", "evt-5", "order.completed", "failed"),
		// A subscription's list of attempts (one entry per attempt; the
		// attempts themselves live in their events' attempt partitions).
		{"user_id": "attemptref#user-123#sub_1", "timestamp#event_id": "evt-3#001", "record_type": "attempt_ref", "ttl": ttlFar},
		{"user_id": "attemptref#user-123#sub_1", "timestamp#event_id": "evt-3#002", "record_type": "attempt_ref", "ttl": ttlFar},
		{"user_id": "attemptref#user-123#sub_1", "timestamp#event_id": "evt-4#001", "record_type": "attempt_ref", "ttl": ttlFar},
		{"user_id": "attemptref#user-123#sub_2", "timestamp#event_id": "evt-4#001", "record_type": "attempt_ref", "ttl": ttlFar},
	},
	"ticketing-events": {
		{"eventId": "EVENT#1", "organizerId": "USER#org1", "date": "2025-12-15T09:00:00Z", "status": "active", "category": "Technology", "name": "Tech Conference 2025", "capacity": 500},
		{"eventId": "EVENT#2", "organizerId": "USER#org1", "date": "2026-01-10T09:00:00Z", "status": "active", "category": "Business", "name": "Founders Meetup"},
		{"eventId": "EVENT#3", "organizerId": "USER#org2", "date": "2025-11-01T09:00:00Z", "status": "cancelled", "category": "Technology", "name": "Old Summit"},
		{"eventId": "EVENT#4", "organizerId": "USER#org2", "date": "2026-03-01T09:00:00Z", "status": "active", "category": "Technology", "name": "Spring Hack"},
	},
	"ticketing-registrations": {
		{"registrationId": "REG#1", "userId": "USER#u1", "eventId": "EVENT#1", "registeredAt": "2025-12-03T11:30:00Z", "paymentId": "pi_1", "status": "confirmed"},
		{"registrationId": "REG#2", "userId": "USER#u2", "eventId": "EVENT#1", "registeredAt": "2025-12-04T10:00:00Z", "paymentId": "pi_2", "status": "confirmed"},
		{"registrationId": "REG#3", "userId": "USER#u1", "eventId": "EVENT#2", "registeredAt": "2025-12-05T10:00:00Z", "status": "confirmed"}, // free: no paymentId
	},
	"ticketing-tickets": {
		{"ticketId": "TICKET#1", "registrationId": "REG#1", "userId": "USER#u1", "eventId": "EVENT#1", "generatedAt": "2025-12-03T11:31:00Z", "status": "valid", "qrCode": "TICKET#1|EVENT#1|USER#u1", "eventDate": "2025-12-15T09:00:00Z", "expiresAt": "2025-12-15T23:59:59Z", "ttl": ttlFar},
		{"ticketId": "TICKET#2", "registrationId": "REG#2", "userId": "USER#u2", "eventId": "EVENT#1", "generatedAt": "2025-12-04T10:01:00Z", "status": "used", "qrCode": "TICKET#2|EVENT#1|USER#u2", "eventDate": "2025-12-15T09:00:00Z", "ttl": ttlFar},
		{"ticketId": "TICKET#3", "registrationId": "REG#3", "userId": "USER#u1", "eventId": "EVENT#2", "generatedAt": "2025-12-05T10:01:00Z", "status": "valid", "qrCode": "TICKET#3|EVENT#2|USER#u1", "eventDate": "2026-01-10T09:00:00Z", "ttl": ttlFar},
	},
	"ticketing-users": {
		{"userId": "USER#u1", "email": "jane@example.com", "cognitoSub": "sub-1", "name": "Jane Smith"},
		{"userId": "USER#u2", "email": "bob@example.com", "cognitoSub": "sub-2", "name": "Bob Stone"},
	},
	"apikeys": {
		{"key_hash": "hash-1", "key_prefix": "trg_aaaa", "tenant_id": "t1", "status": "active", "created_at": 1000},
		{"key_hash": "hash-2", "key_prefix": "trg_bbbb", "tenant_id": "t1", "status": "revoked", "created_at": 2000},
		{"key_hash": "hash-3", "key_prefix": "trg_cccc", "tenant_id": "t2", "status": "active", "created_at": 1500},
	},
	"tenant-events-with-type-index": {
		{"tenant_id": "t1", "event_id": "e1", "status": "undelivered", "timestamp": 1732140249123, "event_type": "user.created", "gsi1sk": "undelivered#1732140249123", "gsi2sk": "user.created#1732140249123", "payload": map[string]any{"a": 1}},
		{"tenant_id": "t1", "event_id": "e2", "status": "delivered", "timestamp": 1732140250000, "event_type": "order.completed", "gsi1sk": "delivered#1732140250000", "gsi2sk": "order.completed#1732140250000"},
		{"tenant_id": "t1", "event_id": "e3", "status": "undelivered", "timestamp": 1732140260000, "event_type": "order.completed", "gsi1sk": "undelivered#1732140260000", "gsi2sk": "order.completed#1732140260000"},
		{"tenant_id": "t2", "event_id": "e4", "status": "undelivered", "timestamp": 1732140240000, "event_type": "user.created", "gsi1sk": "undelivered#1732140240000", "gsi2sk": "user.created#1732140240000"},
	},
	"ferryhook-main": {
		{"PK": "USER#u1", "SK": "PROFILE", "userId": "u1", "email": "a@example.com", "GSI1PK": "EMAIL#a@example.com", "GSI1SK": "USER", "plan": "pro"},
		{"PK": "USER#u2", "SK": "PROFILE", "userId": "u2", "email": "b@example.com", "GSI1PK": "EMAIL#b@example.com", "GSI1SK": "USER", "plan": "free"},
		{"PK": "USER#u1", "SK": "SRC#s1", "sourceId": "s1", "userId": "u1", "GSI3PK": "SRCID#s1", "GSI3SK": "SOURCE", "provider": "stripe"},
		{"PK": "USER#u1", "SK": "SRC#s2", "sourceId": "s2", "userId": "u1", "GSI3PK": "SRCID#s2", "GSI3SK": "SOURCE", "provider": "github"},
		{"PK": "SRC#s1", "SK": "CONN#c1", "connectionId": "c1", "sourceId": "s1", "userId": "u1"},
		{"PK": "SRC#s1", "SK": "CONN#c2", "connectionId": "c2", "sourceId": "s1", "userId": "u1"},
		{"PK": "USER#u1", "SK": "KEY#k1", "keyId": "k1", "userId": "u1", "keyHash": "h1", "keyPrefix": "fh_live_", "GSI2PK": "KEYHASH#h1", "GSI2SK": "KEY"},
	},
	"ferryhook-events": {
		{"PK": "SRC#s1", "SK": "EVT#1732140249123#evt_a", "eventId": "evt_a", "sourceId": "s1", "GSI1PK": "EVTID#evt_a", "GSI1SK": "EVENT", "body": `{"n":1}`, "receivedAt": 1732140249123, "expiresAt": ttlFar},
		{"PK": "SRC#s1", "SK": "EVT#1732140250000#evt_b", "eventId": "evt_b", "sourceId": "s1", "GSI1PK": "EVTID#evt_b", "GSI1SK": "EVENT", "body": `{"n":2}`, "receivedAt": 1732140250000, "expiresAt": ttlFar},
		{"PK": "SRC#s2", "SK": "EVT#1732140255000#evt_c", "eventId": "evt_c", "sourceId": "s2", "GSI1PK": "EVTID#evt_c", "GSI1SK": "EVENT", "body": `{"n":3}`, "receivedAt": 1732140255000, "expiresAt": ttlFar},
		{"PK": "EVT#evt_a", "SK": "ATT#1", "eventId": "evt_a", "attemptNumber": 1, "statusCode": 500, "expiresAt": ttlFar},
		{"PK": "EVT#evt_a", "SK": "ATT#2", "eventId": "evt_a", "attemptNumber": 2, "statusCode": 200, "expiresAt": ttlFar},
	},
}

// triggersEvent is an item shaped like seed 000's example item.
func triggersEvent(user, ts, id, typ, status string) map[string]any {
	return map[string]any{
		"user_id": user, "timestamp#event_id": ts + "#" + id, "event_id": id, "event_type": typ,
		"payload": map[string]any{"n": 1}, "status": status, "timestamp": ts, "ttl": ttlFar, "retry_count": 0,
		"metadata":             map[string]any{"source_ip": "192.0.2.1", "api_version": "v1"},
		"event_type#timestamp": typ + "#" + ts, "status#timestamp": status + "#" + ts,
	}
}

// want is each pattern's expected result: the id attribute's values in
// order, or a count.
type want struct {
	idAttr string
	ids    []string
	count  int32
}

var expected = map[string]want{
	"000/Create event (POST /v1/events)":                                                                                         {idAttr: "event_id", ids: []string{"evt-new"}},
	"000/Get event by ID (GET /v1/events/{id})":                                                                                  {idAttr: "event_id", ids: []string{"evt-1"}},
	"000/Query events by user, newest first (GET /v1/inbox?status=all)":                                                          {idAttr: "event_id", ids: []string{"evt-new", "evt-4", "evt-3", "evt-2", "evt-1"}}, // pattern 1 ran first
	"000/Query events by type (GET /v1/inbox?event_type=)":                                                                       {idAttr: "event_id", ids: []string{"evt-4", "evt-3", "evt-2"}},
	"000/Query events by status (GET /v1/inbox, status=received by default)":                                                     {idAttr: "event_id", ids: []string{"evt-4", "evt-3"}},
	"000/Update event status (PATCH /v1/events/{id}: failed -> retrying)":                                                        {idAttr: "status", ids: []string{"retrying"}},
	"000/A subscription's attempts, newest event first (GET /v1/subscriptions/{id}/attempts; then BatchGetItem of the attempts)": {idAttr: "timestamp#event_id", ids: []string{"evt-4#001", "evt-3#002", "evt-3#001"}},
	"002/Get event by ID":                                           {idAttr: "eventId", ids: []string{"EVENT#1"}},
	"002/List all active events":                                    {idAttr: "eventId", ids: []string{"EVENT#1", "EVENT#2", "EVENT#4"}},
	"002/List organizer's events":                                   {idAttr: "eventId", ids: []string{"EVENT#1", "EVENT#2"}},
	"002/List events by category":                                   {idAttr: "eventId", ids: []string{"EVENT#3", "EVENT#1", "EVENT#4"}},
	"002/Search events by date range":                               {idAttr: "eventId", ids: []string{"EVENT#1", "EVENT#2"}},
	"002/Get registration by ID":                                    {idAttr: "registrationId", ids: []string{"REG#1"}},
	"002/List user's registrations":                                 {idAttr: "registrationId", ids: []string{"REG#1", "REG#3"}},
	"002/List event registrations":                                  {idAttr: "registrationId", ids: []string{"REG#1", "REG#2"}},
	"002/Find registration by payment (sparse index)":               {idAttr: "registrationId", ids: []string{"REG#2"}},
	"002/Count registrations for event":                             {count: 2},
	"002/Get ticket by ID":                                          {idAttr: "ticketId", ids: []string{"TICKET#1"}},
	"002/Get ticket by registration":                                {idAttr: "ticketId", ids: []string{"TICKET#2"}},
	"002/List user's tickets":                                       {idAttr: "ticketId", ids: []string{"TICKET#1", "TICKET#3"}},
	"002/List event tickets":                                        {idAttr: "ticketId", ids: []string{"TICKET#2", "TICKET#1"}}, // sorted by status: used < valid
	"002/Validate QR code":                                          {idAttr: "ticketId", ids: []string{"TICKET#1"}},
	"002/Count valid tickets":                                       {count: 1},
	"002/Get user's upcoming tickets (query example)":               {idAttr: "ticketId", ids: []string{"TICKET#3"}},
	"002/Get user by ID":                                            {idAttr: "userId", ids: []string{"USER#u1"}},
	"002/Lookup user by email":                                      {idAttr: "userId", ids: []string{"USER#u1"}},
	"002/Map Cognito user to internal user":                         {idAttr: "userId", ids: []string{"USER#u2"}},
	"003/Authenticate an API key (GetItem on the key's SHA-256)":    {idAttr: "key_hash", ids: []string{"hash-1"}},
	"003/List a tenant's keys, newest first":                        {idAttr: "key_hash", ids: []string{"hash-2", "hash-1"}},
	"003/Inbox: a tenant's undelivered events, earliest first":      {idAttr: "event_id", ids: []string{"e1", "e3"}},
	"003/Get one event":                                             {idAttr: "event_id", ids: []string{"e2"}},
	"003/A tenant's events of one type (optional event-type-index)": {idAttr: "event_id", ids: []string{"e2", "e3"}},
	"004/Get user by ID":                                            {idAttr: "userId", ids: []string{"u1"}},
	"004/Get user by email":                                         {idAttr: "userId", ids: []string{"u1"}},
	"004/List sources for user":                                     {idAttr: "sourceId", ids: []string{"s1", "s2"}},
	"004/Get source by ID (for ingestion)":                          {idAttr: "sourceId", ids: []string{"s2"}},
	"004/List connections for source":                               {idAttr: "connectionId", ids: []string{"c1", "c2"}},
	"004/Authenticate API key":                                      {idAttr: "keyId", ids: []string{"k1"}},
	"004/List events for source (newest first)":                     {idAttr: "eventId", ids: []string{"evt_b", "evt_a"}},
	"004/Get event by ID":                                           {idAttr: "body", ids: []string{`{"n":2}`}}, // the full item, body included
	"004/List attempts for event":                                   {idAttr: "SK", ids: []string{"ATT#1", "ATT#2"}},
	"004/List user's API keys":                                      {idAttr: "keyId", ids: []string{"k1"}},
}

// loadTables creates every table the patterns use from its schema and
// writes the fixtures; it returns physical names by schema name.
func loadTables(t *testing.T) map[string]string {
	t.Helper()
	ctx := context.Background()
	names := map[string]string{}
	for name, tab := range Tables() {
		items, ok := fixtures[name]
		if !ok {
			continue
		}
		phys := db.CreateTable(t, tab)
		names[name] = phys
		for _, it := range items {
			av, err := attributevalue.MarshalMap(it)
			require.NoError(t, err)
			_, err = db.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(phys), Item: av})
			require.NoError(t, err, "put %v into %s", it, name)
		}
	}
	return names
}

func TestEveryPatternAgainstDynamoDBLocal(t *testing.T) {
	tables := loadTables(t)
	ctx := context.Background()
	seen := map[string]bool{}
	for _, p := range Patterns() {
		key := p.Seed + "/" + p.Name
		seen[key] = true
		t.Run(key, func(t *testing.T) {
			w, ok := expected[key]
			require.True(t, ok, "no expected result for pattern %q", key)
			phys, ok := tables[p.Table]
			require.True(t, ok, "no fixtures for table %q", p.Table)
			if p.Index != "" {
				_, ok := Tables()[p.Table].Index(p.Index)
				require.True(t, ok, "table %s has no index %s", p.Table, p.Index)
			}
			res, err := p.Run(ctx, db.Client, phys)
			require.NoError(t, err)
			if p.Count {
				assert.Equal(t, w.count, res.Count, "Select=COUNT")
				assert.Empty(t, res.Items)
				return
			}
			var got []string
			for _, it := range res.Items {
				var v any
				require.NoError(t, attributevalue.Unmarshal(it[w.idAttr], &v), "item %v has no %s", it, w.idAttr)
				got = append(got, v.(string))
			}
			assert.Equal(t, w.ids, got, "%s returned", key)
		})
	}
	for key := range expected {
		assert.True(t, seen[key], "expected result for unknown pattern %q", key)
	}
}

// PaymentIndex is sparse: registrations without paymentId are not in it.
// (A scan, on purpose: this checks the index, it is not an access pattern.)
func TestPaymentIndexIsSparse(t *testing.T) {
	tables := loadTables(t)
	out, err := db.Client.Scan(context.Background(), &dynamodb.ScanInput{
		TableName: aws.String(tables["ticketing-registrations"]),
		IndexName: aws.String(schema.TicketingPaymentIndex),
		Select:    types.SelectCount,
	})
	require.NoError(t, err)
	assert.Equal(t, int32(2), out.Count, "3 registrations, 2 with paymentId")
}

// Tenant isolation is a property of the key: one tenant's inbox never
// returns another's events.
func TestTenantInboxIsolation(t *testing.T) {
	tables := loadTables(t)
	p := Tenant()[2]
	p.Values = map[string]any{":t": "t2", ":s": "undelivered#"}
	res, err := p.Run(context.Background(), db.Client, tables[p.Table])
	require.NoError(t, err)
	require.Len(t, res.Items, 1)
	var id string
	require.NoError(t, attributevalue.Unmarshal(res.Items[0]["event_id"], &id))
	assert.Equal(t, "e4", id)
}

func TestNoPatternScans(t *testing.T) {
	for _, p := range Patterns() {
		assert.Contains(t, []Operation{GetItem, Query, PutItem, UpdateItem}, p.Op, p.Name)
		if p.Op == Query {
			assert.NotEmpty(t, p.KeyCondition, p.Name)
		}
	}
}

// stacks/ACCESS_PATTERNS.md is generated from the declarations.
func TestAccessPatternsDocument(t *testing.T) {
	path := filepath.Join("..", "..", "..", "stacks", "ACCESS_PATTERNS.md")
	got := Markdown()
	if os.Getenv("UPDATE_GOLDEN") == "1" || *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run with UPDATE_GOLDEN=1 to create %s", path)
	assert.Equal(t, string(want), got, "%s is stale: rerun with UPDATE_GOLDEN=1", path)
}

// Seed 000's writes keep their guarantees: a second create with the same
// key fails its condition, and a status change from the wrong status
// fails, leaving the item as it was.
func TestTriggersWritesAreConditional(t *testing.T) {
	tables := loadTables(t)
	ctx := context.Background()
	create, update := Triggers()[0], Triggers()[5]
	phys := tables[create.Table]
	_, err := create.Run(ctx, db.Client, phys)
	require.NoError(t, err)
	_, err = create.Run(ctx, db.Client, phys)
	var ccf *types.ConditionalCheckFailedException
	assert.ErrorAs(t, err, &ccf, "a second create of the same key")

	res, err := update.Run(ctx, db.Client, phys)
	require.NoError(t, err)
	var retries int
	require.NoError(t, attributevalue.Unmarshal(res.Items[0]["retry_count"], &retries))
	assert.Equal(t, 1, retries, "failed -> retrying counts a retry")
	_, err = update.Run(ctx, db.Client, phys)
	assert.ErrorAs(t, err, &ccf, "retrying -> retrying is not a transition")
}
