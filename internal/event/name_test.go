package event_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/triggers-dev/triggers/internal/event"
)

// The rules as the docs state them, as regular expressions: the
// reference the hand-written checks are compared with.
var (
	tenantRef    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$`)
	eventTypeRef = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)
)

func checkName(t *testing.T, s string) {
	t.Helper()
	if got, want := event.ValidTenantID(s), tenantRef.MatchString(s); got != want {
		t.Errorf("ValidTenantID(%q) = %v, the rule says %v", s, got, want)
	}
	if got, want := event.ValidEventType(s), eventTypeRef.MatchString(s); got != want {
		t.Errorf("ValidEventType(%q) = %v, the rule says %v", s, got, want)
	}
}

// Every byte first, every byte after a valid first character, and the
// length limits.
func TestNamesAgreeWithTheRule(t *testing.T) {
	for b := 0; b < 256; b++ {
		checkName(t, string([]byte{byte(b)}))
		checkName(t, string([]byte{'a', byte(b)}))
		checkName(t, string([]byte{'a', byte(b), 'z'}))
	}
	for _, s := range []string{"", strings.Repeat("a", 127), strings.Repeat("a", 128), strings.Repeat("a", 129),
		"a" + strings.Repeat("-", 127), "a" + strings.Repeat("-", 128), "a\n", "é", "aé", "order.paid", "user_1:x-y"} {
		checkName(t, s)
	}
	if !event.ValidTenantID(strings.Repeat("a", 128)) || event.ValidTenantID(strings.Repeat("a", 129)) {
		t.Error("the length limit is 128")
	}
}

func FuzzNames(f *testing.F) {
	for _, s := range []string{"", "a", "order.paid", "-a", "a-", strings.Repeat("b", 128), "a\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkName(t, s) })
}

// An unknown field is reported at the byte after its name, counted from
// the start of the body (in a batch too).
func TestUnknownFieldOffsets(t *testing.T) {
	_, err := event.ParseCreate([]byte(`{"event_type":"t","payload":{},"extra":1}`))
	if err == nil || err.Error() != `invalid_json: unknown field "extra" at byte 38: use event_type, payload` {
		t.Errorf("ParseCreate: %v", err)
	}
	_, errs, err := event.ParseBatch([]byte(`{"events":[{"event_type":"t","payload":{}},{"event_type":"t","payload":{},"Payload":1}]}`))
	if err != nil || len(errs) != 2 || errs[0] != nil || errs[1] == nil ||
		errs[1].Error() != `invalid_json: unknown field "Payload" at byte 83: field names are case-sensitive; use "payload"` {
		t.Errorf("ParseBatch: %v %v", errs, err)
	}
}
