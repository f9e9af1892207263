package schema

// Catalog returns every table this module defines, for checks that must
// cover all of them (for example that CloudFormation and CreateTable agree,
// and that every table validates).
func Catalog() []Table {
	return []Table{
		Events(), EventsFor(ProfileLean),
		APIKeys(),
		TicketingEvents(), TicketingRegistrations(), TicketingTickets(), TicketingUsers(),
		TenantEvents(false), TenantEvents(true),
		FerryhookMain(), FerryhookEvents(),
	}
}
