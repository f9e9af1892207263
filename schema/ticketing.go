package schema

// Tables of the event-ticketing system (seed 002). Attribute names are the
// seed's. Each function returns a fresh value.

// Index names of the ticketing tables.
const (
	TicketingOrganizerIndex    = "OrganizerIndex"
	TicketingDateIndex         = "DateIndex"
	TicketingCategoryIndex     = "CategoryIndex"
	TicketingUserIndex         = "UserIndex"
	TicketingEventIndex        = "EventIndex"
	TicketingPaymentIndex      = "PaymentIndex"
	TicketingRegistrationIndex = "RegistrationIndex"
	TicketingQRCodeIndex       = "QRCodeIndex"
	TicketingEmailIndex        = "EmailIndex"
	TicketingCognitoIndex      = "CognitoIndex"
)

// TicketingTTLAttribute is the tickets' expiry attribute. Deviation from
// seed 002, which puts TTL on expiresAt, an ISO 8601 string: DynamoDB only
// expires items whose TTL attribute is a Number of epoch seconds, so TTL is
// on "ttl" (epoch seconds of expiresAt + 90 days, the seed's "expired:
// delete after 90 days"), and expiresAt keeps its ISO string for display.
const TicketingTTLAttribute = "ttl"

// TicketingEvents is seed 002's Events table: eventId, with OrganizerIndex
// (organizerId, date), DateIndex (status, date) and CategoryIndex
// (category, date), all projecting ALL.
func TicketingEvents() Table {
	return Table{
		Name:         "ticketing-events",
		PartitionKey: S("eventId"),
		GlobalIndexes: []Index{
			{Name: TicketingOrganizerIndex, PartitionKey: S("organizerId"), SortKey: Ptr(S("date")), Projection: All()},
			{Name: TicketingDateIndex, PartitionKey: S("status"), SortKey: Ptr(S("date")), Projection: All()},
			{Name: TicketingCategoryIndex, PartitionKey: S("category"), SortKey: Ptr(S("date")), Projection: All()},
		},
	}
}

// TicketingRegistrations is seed 002's Registrations table: registrationId,
// with UserIndex (userId, registeredAt), EventIndex (eventId, registeredAt)
// and the sparse PaymentIndex (paymentId), all projecting ALL.
func TicketingRegistrations() Table {
	return Table{
		Name:         "ticketing-registrations",
		PartitionKey: S("registrationId"),
		GlobalIndexes: []Index{
			{Name: TicketingUserIndex, PartitionKey: S("userId"), SortKey: Ptr(S("registeredAt")), Projection: All()},
			{Name: TicketingEventIndex, PartitionKey: S("eventId"), SortKey: Ptr(S("registeredAt")), Projection: All()},
			{Name: TicketingPaymentIndex, PartitionKey: S("paymentId"), Projection: All(), Sparse: true},
		},
	}
}

// TicketingTickets is seed 002's Tickets table: ticketId, with
// RegistrationIndex (registrationId), UserIndex (userId, generatedAt),
// EventIndex (eventId, status) and QRCodeIndex (qrCode), all projecting ALL,
// and TTL on TicketingTTLAttribute.
func TicketingTickets() Table {
	return Table{
		Name:         "ticketing-tickets",
		PartitionKey: S("ticketId"),
		GlobalIndexes: []Index{
			{Name: TicketingRegistrationIndex, PartitionKey: S("registrationId"), Projection: All()},
			{Name: TicketingUserIndex, PartitionKey: S("userId"), SortKey: Ptr(S("generatedAt")), Projection: All()},
			{Name: TicketingEventIndex, PartitionKey: S("eventId"), SortKey: Ptr(S("status")), Projection: All()},
			{Name: TicketingQRCodeIndex, PartitionKey: S("qrCode"), Projection: All()},
		},
		TTLAttribute: TicketingTTLAttribute,
	}
}

// TicketingUsers is seed 002's (optional) Users table: userId, with
// EmailIndex (email) and CognitoIndex (cognitoSub), projecting ALL.
func TicketingUsers() Table {
	return Table{
		Name:         "ticketing-users",
		PartitionKey: S("userId"),
		GlobalIndexes: []Index{
			{Name: TicketingEmailIndex, PartitionKey: S("email"), Projection: All()},
			{Name: TicketingCognitoIndex, PartitionKey: S("cognitoSub"), Projection: All()},
		},
	}
}
