package assertions

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/testkit/cdktest"
)

// runbookDoc is docs/runbook.md parsed: the GitHub anchor of every heading
// and, for each section that declares alarms, the alarm ids it declares.
//
// A section declares its alarms on a line of its own:
//
//	Alarms: `ReadThrottleEvents`, `<GSI>ReadThrottleEvents`
//
// Each id is an alarm's construct id; `<operation>` stands for a DynamoDB
// operation name, any other `<...>` for one or more letters, digits or
// hyphens (an index name, a region).
type runbookDoc struct {
	anchors map[string]bool
	// alarms maps a section's anchor to the id patterns it declares.
	alarms map[string][]string
}

// githubSlug returns the anchor GitHub gives a heading (github-slugger):
// lower case; every character that is not a letter, digit, space, hyphen
// or underscore removed (markdown punctuation such as backticks included);
// each space a hyphen.
func githubSlug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

var (
	headingRE    = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	alarmsLineRE = regexp.MustCompile("^Alarms: (`[^`]+`(?:, `[^`]+`)*)\\s*$")
	backtickedRE = regexp.MustCompile("`([^`]+)`")
	// runbookLinkRE finds the runbook link at the end of an alarm
	// description: "Runbook: <url>#<anchor>".
	runbookLinkRE = regexp.MustCompile(`Runbook: (\S+?)#([A-Za-z0-9_-]+)\s*$`)
)

// parseRunbook parses a runbook: headings outside fenced code blocks, with
// GitHub's numbering of repeated slugs ("x", "x-1", ...), and the Alarms
// lines of each section. A line that starts with "Alarms:" but does not
// match the format fails the test.
func parseRunbook(t *testing.T, text string) runbookDoc {
	t.Helper()
	doc := runbookDoc{anchors: map[string]bool{}, alarms: map[string][]string{}}
	seen := map[string]int{}
	section, fence := "", ""
	s := bufio.NewScanner(strings.NewReader(text))
	for line := 1; s.Scan(); line++ {
		l := s.Text()
		if trimmed := strings.TrimLeft(l, " "); strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			switch {
			case fence == "":
				fence = trimmed[:3]
			case strings.HasPrefix(trimmed, fence):
				fence = ""
			}
			continue
		}
		if fence != "" {
			continue
		}
		if m := headingRE.FindStringSubmatch(l); m != nil {
			slug := githubSlug(m[2])
			if n := seen[slug]; n > 0 {
				seen[slug]++
				slug = slug + "-" + strconv.Itoa(n)
			} else {
				seen[slug] = 1
			}
			doc.anchors[slug] = true
			section = slug
			continue
		}
		if strings.HasPrefix(l, "Alarms:") {
			m := alarmsLineRE.FindStringSubmatch(l)
			require.NotNil(t, m, "runbook line %d: %q: write `Alarms: `Id`, `Other``", line, l)
			require.NotEmpty(t, section, "runbook line %d: Alarms line before any heading", line)
			for _, id := range backtickedRE.FindAllStringSubmatch(m[1], -1) {
				doc.alarms[section] = append(doc.alarms[section], id[1])
			}
		}
	}
	require.NoError(t, s.Err())
	return doc
}

// runbook parses docs/runbook.md.
func runbook(t *testing.T) runbookDoc {
	t.Helper()
	root, err := cdktest.ModuleRoot()
	require.NoError(t, err)
	raw, err := os.ReadFile(filepath.Join(root, "docs", "runbook.md"))
	require.NoError(t, err)
	return parseRunbook(t, string(raw))
}

// dynamoDBOperations are the values of DynamoDB's Operation dimension
// (SuccessfulRequestLatency, SystemErrors): what `<operation>` stands for.
var dynamoDBOperations = []string{
	"GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query", "Scan", "BatchGetItem", "BatchWriteItem",
	"TransactGetItems", "TransactWriteItems", "ExecuteStatement", "BatchExecuteStatement", "ExecuteTransaction", "GetRecords",
}

var placeholderRE = regexp.MustCompile(`<[^>]+>`)

// idPattern compiles a declared alarm id: "<operation>" matches a DynamoDB
// operation name, any other "<...>" one or more letters, digits or
// hyphens, the rest literally.
func idPattern(id string) *regexp.Regexp {
	holders := placeholderRE.FindAllString(id, -1)
	parts := placeholderRE.Split(id, -1)
	var b strings.Builder
	b.WriteString("^")
	for i, p := range parts {
		b.WriteString(regexp.QuoteMeta(p))
		if i < len(holders) {
			if holders[i] == "<operation>" {
				b.WriteString("(?:" + strings.Join(dynamoDBOperations, "|") + ")")
			} else {
				b.WriteString("[A-Za-z0-9-]+")
			}
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

// sectionsFor returns the anchors of the sections whose Alarms line names
// the alarm id, sorted.
func (d runbookDoc) sectionsFor(id string) []string {
	var out []string
	for _, anchor := range keysSorted(d.alarms) {
		for _, p := range d.alarms[anchor] {
			if idPattern(p).MatchString(id) {
				out = append(out, anchor)
				break
			}
		}
	}
	return out
}

// templateAlarm is one alarm (metric or composite) of a synthesized stack.
type templateAlarm struct {
	stack, logicalID string
	// id is the alarm's construct id: its path's last part before
	// "/Resource" (from the cloud assembly's logical id metadata).
	id string
	// url and anchor are the runbook link of its description ("" if none).
	url, anchor string
}

func (a templateAlarm) String() string { return a.stack + "/" + a.logicalID + " (" + a.id + ")" }

// templateAlarms returns every AWS::CloudWatch::Alarm and
// AWS::CloudWatch::CompositeAlarm of every synthesized stack.
func templateAlarms(t *testing.T) []templateAlarm {
	t.Helper()
	m := manifest(t)
	var out []templateAlarm
	for _, stack := range keysSorted(templates) {
		art, ok := m.Artifacts[stack]
		require.True(t, ok, "manifest has %s", stack)
		// CDK writes a stack's construct metadata to <stack>.metadata.json
		// (the artifact's additionalMetadataFile), older versions into the
		// manifest: read both.
		meta := art.Metadata
		if raw, err := os.ReadFile(filepath.Join(assemblyDir, stack+".metadata.json")); err == nil {
			require.NoError(t, json.Unmarshal(raw, &meta), "%s.metadata.json", stack)
		}
		paths := map[string]string{}
		for path, entries := range meta {
			for _, e := range entries {
				if e.Type == "aws:cdk:logicalId" {
					if id, ok := e.Data.(string); ok {
						paths[id] = path
					}
				}
			}
		}
		for _, typ := range []string{"AWS::CloudWatch::Alarm", "AWS::CloudWatch::CompositeAlarm"} {
			for logicalID, r := range cdktest.Resources(templates[stack], typ) {
				a := templateAlarm{stack: stack, logicalID: logicalID}
				path, ok := paths[logicalID]
				require.True(t, ok, "%s: no construct path for %s in the manifest", stack, logicalID)
				parts := strings.Split(strings.TrimSuffix(path, "/Resource"), "/")
				a.id = parts[len(parts)-1]
				desc, _ := cdktest.Props(r)["AlarmDescription"].(string)
				if l := runbookLinkRE.FindStringSubmatch(desc); l != nil {
					a.url, a.anchor = l[1], l[2]
				}
				out = append(out, a)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// The runbook is checked in both directions over every synthesized stack
// (the app's and the test variants, which hold TableMonitoring and the
// options the app does not use):
//
//   - every alarm and composite alarm ends its description with
//     "Runbook: <url>#<anchor>", the anchor is a heading of
//     docs/runbook.md (GitHub's slug), and that section's Alarms line
//     names the alarm's construct id;
//   - every id an Alarms line names is an alarm, in some stack, that links
//     to that section;
//   - no alarm is named by two sections: one section per alarm.
//
// Stacks with their own runbook URL (RunbookURL) are held to the same
// anchors: a team's copy of this runbook keeps its sections.
func TestRunbookCoversEveryAlarm(t *testing.T) {
	doc := runbook(t)
	alarms := templateAlarms(t)
	require.NotEmpty(t, alarms)
	linked := map[string][]templateAlarm{} // anchor -> alarms linking to it
	for _, a := range alarms {
		if a.anchor == "" {
			t.Errorf("%s: the description has no runbook link (end it with \"Runbook: <url>#<anchor>\")", a)
			continue
		}
		if !doc.anchors[a.anchor] {
			t.Errorf("%s links to #%s, which is no heading of docs/runbook.md: add the section (or fix the anchor)", a, a.anchor)
			continue
		}
		sections := doc.sectionsFor(a.id)
		declared := false
		for _, s := range sections {
			declared = declared || s == a.anchor
		}
		if !declared {
			t.Errorf("%s links to #%s, whose Alarms line %q does not name %q: add it", a, a.anchor, doc.alarms[a.anchor], a.id)
		}
		if len(sections) > 1 {
			t.Errorf("%s is named by %d sections of docs/runbook.md (%s): keep it in #%s only, merging what the others say", a, len(sections), strings.Join(sections, ", "), a.anchor)
		}
		linked[a.anchor] = append(linked[a.anchor], a)
	}
	for _, anchor := range keysSorted(doc.alarms) {
		for _, id := range doc.alarms[anchor] {
			found := false
			for _, a := range linked[anchor] {
				if idPattern(id).MatchString(a.id) {
					found = true
				}
			}
			if !found {
				t.Errorf("docs/runbook.md #%s names alarm %q, but no synthesized stack has an alarm %q linking there: remove it, or list it once the alarm exists", anchor, id, id)
			}
		}
	}
}

// The slugs and the parser follow GitHub: punctuation dropped, repeated
// headings numbered, headings inside code blocks ignored, Alarms lines
// read per section.
func TestRunbookParser(t *testing.T) {
	for heading, want := range map[string]string{
		"Composite alarms: one page per service": "composite-alarms-one-page-per-service",
		"API 4XX rate":                           "api-4xx-rate",
		"`TableMonitoring` (any table)":          "tablemonitoring-any-table",
		"DynamoDB GSI read throttling":           "dynamodb-gsi-read-throttling",
		"Rotating the cursor_secret":             "rotating-the-cursor_secret",
		"What's new?":                            "whats-new",
	} {
		if got := githubSlug(heading); got != want {
			t.Errorf("githubSlug(%q) = %q, want %q", heading, got, want)
		}
	}
	doc := parseRunbook(t, "# Title\n\n## Same\n\nAlarms: `A`, `<GSI>B`\n\n```sh\n# not a heading\n```\n\n## Same\n\nAlarms: `C`\n")
	require.Equal(t, map[string]bool{"title": true, "same": true, "same-1": true}, doc.anchors)
	require.Equal(t, map[string][]string{"same": {"A", "<GSI>B"}, "same-1": {"C"}}, doc.alarms)
	require.True(t, idPattern("<GSI>B").MatchString("StatusIndexB"))
	require.True(t, idPattern("ReplicationLatency-<region>").MatchString("ReplicationLatency-eu-west-1"))
	require.False(t, idPattern("<GSI>B").MatchString("B"))
	require.False(t, idPattern("A").MatchString("AB"))
	require.True(t, idPattern("<operation>Latency").MatchString("TransactWriteItemsLatency"))
	require.False(t, idPattern("<operation>Latency").MatchString("InboxLatency"), "<operation> is a DynamoDB operation")
	// Two sections naming one alarm are found (the duplicate check of
	// TestRunbookCoversEveryAlarm).
	dup := parseRunbook(t, "## One\n\nAlarms: `<GSI>ReadThrottleEvents`, `QueryLatency`\n\n## Two\n\nAlarms: `<operation>Latency`, `ReadThrottleEvents`\n")
	require.Equal(t, []string{"one", "two"}, dup.sectionsFor("QueryLatency"))
	require.Equal(t, []string{"two"}, dup.sectionsFor("GetItemLatency"))
	require.Equal(t, []string{"one"}, dup.sectionsFor("StatusIndexReadThrottleEvents"))
	require.Equal(t, []string{"two"}, dup.sectionsFor("ReadThrottleEvents"))
	require.Empty(t, dup.sectionsFor("ApiLatency"))
}
