package triggersapi

import (
	"regexp"
	"strings"
	"testing"

	"github.com/triggers-dev/triggers/contract"
	"github.com/triggers-dev/triggers/internal/testkit/docstest"
)

// docs/api.md's Errors section names every code API Gateway's own answers
// carry (the gateway responses and the rate-limit web ACL's bodies), as
// internal/httpapi's TestErrorsSectionNamesEveryCode does for the
// function's: clients switch on them whoever answered. Found by review:
// bad_request (DEFAULT_4XX) was missing.
func TestErrorsSectionNamesEveryGatewayCode(t *testing.T) {
	section := docstest.Section(t, "docs/api.md", "\n## Errors\n", "\n## ")
	codes := map[string]bool{}
	for _, g := range gatewayErrors(contract.KeySourcesBearer) {
		codes[g.code] = true
	}
	for _, body := range []string{throttledBody, tooLargeBody} {
		m := regexp.MustCompile(`"code":"([a-z_]+)"`).FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("no code in %s", body)
		}
		codes[m[1]] = true
	}
	for code := range codes {
		if !strings.Contains(section, "`"+code+"`") {
			t.Errorf("docs/api.md's Errors section does not name %s, which API Gateway answers with", code)
		}
	}
}

// docs/constructs.md's "Permissions" of the webhook function name each of
// its actions on the events table (WebhookEventsTableActions), action by
// action as it says. Found by review: ConditionCheckItem (the settle
// transaction's check) was missing.
func TestConstructsDocNamesTheWebhookTableActions(t *testing.T) {
	section := docstest.Section(t, "docs/constructs.md", "**Permissions** of the webhook function's role", "\n\n")
	for _, a := range WebhookEventsTableActions() {
		name := strings.TrimPrefix(a, "dynamodb:")
		if !strings.Contains(section, "`"+name+"`") && !strings.Contains(section, "`"+a+"`") {
			t.Errorf("docs/constructs.md's webhook Permissions paragraph does not name %s", a)
		}
	}
}
