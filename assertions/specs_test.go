package assertions

import (
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/testkit/cdktest"
)

// These tests restate each seed's tables in the seed's own terms, so that a
// reader can check them against the document line by line. They read the
// synthesized templates only.

// cfnTable is one AWS::DynamoDB::Table of a template, with assertions.
type cfnTable struct {
	t     *testing.T
	name  string
	props map[string]any
	res   map[string]any
}

func tableIn(t *testing.T, stack, logicalPrefix string) cfnTable {
	t.Helper()
	_, r := one(t, tmpl(t, stack), "AWS::DynamoDB::Table", logicalPrefix)
	return cfnTable{t: t, name: stack + "/" + logicalPrefix, props: cdktest.Props(r), res: r}
}

func (c cfnTable) attrType(name string) string {
	for _, a := range c.props["AttributeDefinitions"].([]any) {
		am := a.(map[string]any)
		if am["AttributeName"] == name {
			return am["AttributeType"].(string)
		}
	}
	return ""
}

func keySchema(v any) (pk, sk string) {
	for _, k := range v.([]any) {
		km := k.(map[string]any)
		if km["KeyType"] == "HASH" {
			pk = km["AttributeName"].(string)
		} else {
			sk = km["AttributeName"].(string)
		}
	}
	return pk, sk
}

// key asserts the table's partition key (and sort key; "" for none) and
// the attribute type of each, as "name S".
func (c cfnTable) key(pk, pkType, sk, skType string) {
	c.t.Helper()
	gotPK, gotSK := keySchema(c.props["KeySchema"])
	assert.Equal(c.t, pk, gotPK, "%s partition key", c.name)
	assert.Equal(c.t, sk, gotSK, "%s sort key", c.name)
	assert.Equal(c.t, pkType, c.attrType(pk), "%s type of %s", c.name, pk)
	if sk != "" {
		assert.Equal(c.t, skType, c.attrType(sk), "%s type of %s", c.name, sk)
	}
}

// gsi asserts one GSI: keys with types, and projection.
func (c cfnTable) gsi(name, pk, pkType, sk, skType, projection string) {
	c.t.Helper()
	for _, g := range c.indexes() {
		if g["IndexName"] != name {
			continue
		}
		gotPK, gotSK := keySchema(g["KeySchema"])
		assert.Equal(c.t, pk, gotPK, "%s %s partition key", c.name, name)
		assert.Equal(c.t, sk, gotSK, "%s %s sort key", c.name, name)
		assert.Equal(c.t, pkType, c.attrType(pk), "%s %s type of %s", c.name, name, pk)
		if sk != "" {
			assert.Equal(c.t, skType, c.attrType(sk), "%s %s type of %s", c.name, name, sk)
		}
		assert.Equal(c.t, projection, g["Projection"].(map[string]any)["ProjectionType"], "%s %s projection", c.name, name)
		return
	}
	c.t.Errorf("%s has no GSI %s", c.name, name)
}

func (c cfnTable) indexes() []map[string]any {
	var out []map[string]any
	if gs, ok := c.props["GlobalSecondaryIndexes"].([]any); ok {
		for _, g := range gs {
			out = append(out, g.(map[string]any))
		}
	}
	return out
}

// indexNames asserts the table has exactly these GSIs.
func (c cfnTable) indexNames(names ...string) {
	c.t.Helper()
	var got []string
	for _, g := range c.indexes() {
		got = append(got, g["IndexName"].(string))
	}
	sort.Strings(got)
	sort.Strings(names)
	assert.Equal(c.t, names, got, "%s GSIs", c.name)
}

// ttl asserts the TTL attribute; "" means no TTL.
func (c cfnTable) ttl(attr string) {
	c.t.Helper()
	spec, ok := c.props["TimeToLiveSpecification"].(map[string]any)
	if attr == "" {
		assert.False(c.t, ok, "%s has no TTL", c.name)
		return
	}
	require.True(c.t, ok, "%s has TTL", c.name)
	assert.Equal(c.t, map[string]any{"AttributeName": attr, "Enabled": true}, spec, "%s TTL", c.name)
}

// stateful asserts what every table of every system gets: on demand, PITR,
// encryption at rest, deletion protection, retained on delete.
func (c cfnTable) stateful() {
	c.t.Helper()
	assert.Equal(c.t, "PAY_PER_REQUEST", c.props["BillingMode"], "%s billing", c.name)
	assert.Equal(c.t, true, c.props["PointInTimeRecoverySpecification"].(map[string]any)["PointInTimeRecoveryEnabled"], "%s PITR", c.name)
	assert.Equal(c.t, true, c.props["SSESpecification"].(map[string]any)["SSEEnabled"], "%s encryption", c.name)
	assert.Equal(c.t, true, c.props["DeletionProtectionEnabled"], "%s deletion protection", c.name)
	assert.Equal(c.t, "Retain", c.res["DeletionPolicy"], "%s deletion policy", c.name)
	assert.NotContains(c.t, c.props, "TableName", "%s has a generated name", c.name)
}

func stackTableCount(t *testing.T, stack string, want int) {
	t.Helper()
	assert.Len(t, cdktest.Resources(tmpl(t, stack), "AWS::DynamoDB::Table"), want, "tables in %s", stack)
}

// Seed 002, "Data Models & DynamoDB Schema Design" (event ticketing).
func TestSeed002Ticketing(t *testing.T) {
	const stack = "ticketing-dev-data"
	stackTableCount(t, stack, 4)

	// Table 1: Events. PK eventId (String), no sort key.
	ev := tableIn(t, stack, "Events")
	ev.key("eventId", "S", "", "")
	ev.indexNames("OrganizerIndex", "DateIndex", "CategoryIndex")
	ev.gsi("OrganizerIndex", "organizerId", "S", "date", "S", "ALL") // GSI-1
	ev.gsi("DateIndex", "status", "S", "date", "S", "ALL")           // GSI-2
	ev.gsi("CategoryIndex", "category", "S", "date", "S", "ALL")     // GSI-3
	ev.ttl("")
	ev.stateful()

	// Table 2: Registrations. PK registrationId (String), no sort key.
	reg := tableIn(t, stack, "Registrations")
	reg.key("registrationId", "S", "", "")
	reg.indexNames("UserIndex", "EventIndex", "PaymentIndex")
	reg.gsi("UserIndex", "userId", "S", "registeredAt", "S", "ALL")   // GSI-1
	reg.gsi("EventIndex", "eventId", "S", "registeredAt", "S", "ALL") // GSI-2
	reg.gsi("PaymentIndex", "paymentId", "S", "", "", "ALL")          // GSI-3, sparse: only items with paymentId
	reg.ttl("")
	reg.stateful()

	// Table 3: Tickets. PK ticketId (String), no sort key.
	tk := tableIn(t, stack, "Tickets")
	tk.key("ticketId", "S", "", "")
	tk.indexNames("RegistrationIndex", "UserIndex", "EventIndex", "QRCodeIndex")
	tk.gsi("RegistrationIndex", "registrationId", "S", "", "", "ALL") // GSI-1
	tk.gsi("UserIndex", "userId", "S", "generatedAt", "S", "ALL")     // GSI-2
	tk.gsi("EventIndex", "eventId", "S", "status", "S", "ALL")        // GSI-3
	tk.gsi("QRCodeIndex", "qrCode", "S", "", "", "ALL")               // GSI-4
	// "Enable DynamoDB TTL on expiresAt": expiresAt holds ISO strings, which
	// DynamoDB never expires; TTL is on the Number attribute ttl
	// (docs/seed-deviations.md).
	tk.ttl("ttl")
	tk.stateful()

	// Table 4: Users. PK userId (String), no sort key.
	us := tableIn(t, stack, "Users")
	us.key("userId", "S", "", "")
	us.indexNames("EmailIndex", "CognitoIndex")
	us.gsi("EmailIndex", "email", "S", "", "", "ALL")        // GSI-1
	us.gsi("CognitoIndex", "cognitoSub", "S", "", "", "ALL") // GSI-2
	us.ttl("")
	us.stateful()
}

// Seed 003, "DynamoDB Schema" (tenant design): TenantApiKeys and Events.
func TestSeed003Tenant(t *testing.T) {
	const stack = "tenant-dev-data"
	stackTableCount(t, stack, 2)

	// 1. TenantApiKeys: "pk = api_key (STRING), sk = meta". Deviation: keyed
	// by key_hash, the SHA-256 of the key, with no constant sort key; the
	// TenantIndex lists a tenant's keys (docs/seed-deviations.md).
	keys := tableIn(t, stack, "TenantApiKeys")
	keys.key("key_hash", "S", "", "")
	keys.indexNames("TenantIndex")
	keys.gsi("TenantIndex", "tenant_id", "S", "created_at", "N", "ALL") // created_at (NUMBER) epoch_ms
	keys.ttl("")
	keys.stateful()

	// 2. Events: pk = tenant_id (STRING), sk = event_id (STRING, UUIDv4).
	ev := tableIn(t, stack, "Events")
	ev.key("tenant_id", "S", "event_id", "S")
	// 3. GSI1 status-index: GSI1PK = tenant_id, GSI1SK = status#timestamp
	// (attribute gsi1sk). 4. The optional event-type-index is off by default.
	ev.indexNames("status-index")
	ev.gsi("status-index", "tenant_id", "S", "gsi1sk", "S", "ALL")
	ev.ttl("")
	ev.stateful()

	// With the option on (context tenant:event-type-index=true), GSI2
	// event-type-index: GSI2PK = tenant_id, GSI2SK = event_type#timestamp.
	opt := tableIn(t, stackTenantTypeIndex, "Events")
	opt.indexNames("status-index", "event-type-index")
	opt.gsi("status-index", "tenant_id", "S", "gsi1sk", "S", "ALL")
	opt.gsi("event-type-index", "tenant_id", "S", "gsi2sk", "S", "ALL")
}

// Seed 004, "DATABASE.md — Ferryhook DynamoDB Schema".
func TestSeed004Ferryhook(t *testing.T) {
	const stack = "ferryhook-dev-data"
	stackTableCount(t, stack, 2)

	// ferryhook-main: PAY_PER_REQUEST, PITR enabled. Entities under PK/SK.
	main := tableIn(t, stack, "Main")
	main.key("PK", "S", "SK", "S")
	main.indexNames("GSI1", "GSI2", "GSI3")
	main.gsi("GSI1", "GSI1PK", "S", "GSI1SK", "S", "ALL") // Email Lookup: EMAIL#{email} / USER
	main.gsi("GSI2", "GSI2PK", "S", "GSI2SK", "S", "ALL") // API Key Lookup: KEYHASH#{keyHash} / KEY
	main.gsi("GSI3", "GSI3PK", "S", "GSI3SK", "S", "ALL") // Source Lookup: SRCID#{sourceId} / SOURCE
	main.ttl("")
	main.stateful()

	// ferryhook-events: PAY_PER_REQUEST, PITR enabled, TTL attribute expiresAt.
	ev := tableIn(t, stack, "Events")
	ev.key("PK", "S", "SK", "S")
	ev.indexNames("GSI1")
	// GSI1 Event by ID: EVTID#{eventId} / EVENT. Projection KEYS_ONLY (the
	// seed does not say; bodies reach 256 KB), then GetItem.
	ev.gsi("GSI1", "GSI1PK", "S", "GSI1SK", "S", "KEYS_ONLY")
	ev.ttl("expiresAt")
	ev.stateful()
}

// Seeds 000/001 on the data stack are covered by TestEventsTableOnDemand;
// this checks the stack holds that table and the API-keys table (seed 003's
// TenantApiKeys, keyed by hash) that the authorizer reads.
func TestSeed000TriggersData(t *testing.T) {
	stackTableCount(t, dataStack, 2)
	keys := tableIn(t, dataStack, "ApiKeys")
	keys.key("key_hash", "S", "", "")
	keys.gsi("TenantIndex", "tenant_id", "S", "created_at", "N", "ALL")
	keys.stateful()
	ev := tableIn(t, dataStack, "Events")
	ev.key("user_id", "S", "timestamp#event_id", "S")
	ev.indexNames("EventTypeIndex", "StatusIndex")
	ev.ttl("ttl")
	ev.stateful()
}

// Every stateful stack has termination protection and tags its resources
// with the system and environment. (Termination protection is a stack
// setting, read from the cloud assembly manifest.)
func TestDataStacksAreProtected(t *testing.T) {
	m := manifest(t)
	for _, stack := range []string{dataStack, "ticketing-dev-data", "tenant-dev-data", "ferryhook-dev-data"} {
		art, ok := m.Artifacts[stack]
		require.True(t, ok, "manifest has %s", stack)
		assert.Equal(t, true, art.Properties["terminationProtection"], "%s termination protection", stack)
		for id, r := range cdktest.Resources(tmpl(t, stack), "AWS::DynamoDB::Table") {
			tags := cdktest.Props(r)["Tags"]
			assert.Contains(t, tags, map[string]any{"Key": "triggers:env", "Value": "dev"}, "%s/%s", stack, id)
		}
	}
}

// The logical ids of every stateful table are pinned: a changed id makes
// CloudFormation create a new table and orphan (RETAIN) the old one with
// its data. Change one only with a migration plan.
func TestStatefulLogicalIDsPinned(t *testing.T) {
	want := map[string][]string{
		dataStack:            {"ApiKeys3C34A7E6", "Events948F067E"},
		"ticketing-dev-data": {"Events948F067E", "RegistrationsE002A2BA", "TicketsB51CEDFD", "Users10139FB0"},
		"tenant-dev-data":    {"Events948F067E", "TenantApiKeys2C2C5AF5"},
		"ferryhook-dev-data": {"Events948F067E", "Main139A74C6"},
	}
	for stack, ids := range want {
		assert.ElementsMatch(t, ids, keys(cdktest.Resources(tmpl(t, stack), "AWS::DynamoDB::Table")), stack)
	}
}
