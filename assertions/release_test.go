package assertions

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A construct library's logical ids are its API: a resource whose logical
// id changes is replaced by CloudFormation (a table or a queue with its
// data), and an output whose name changes breaks the stacks that read it.
// releasedIDs records, for every golden snapshot, the logical ids of its
// resources and outputs as of the last release (docs/releasing.md); a
// snapshot that lost one since fails this test unless CHANGELOG.md's
// Unreleased section has a "**Breaking**" line naming it.

const releasedIDsFile = "testdata/released/logical-ids.json"

var release = flag.Bool("release", false, "rewrite "+releasedIDsFile+" from the golden snapshots (when cutting a release)")

// releasedIDs is the shape of releasedIDsFile.
type releasedIDs struct {
	// Version is the release the ids are from.
	Version string `json:"version"`
	// Stacks maps a golden snapshot's stack to its resources' logical ids
	// (with their types) and its outputs' names.
	Stacks map[string]stackIDs `json:"stacks"`
}

type stackIDs struct {
	Resources map[string]string `json:"resources"`
	Outputs   []string          `json:"outputs"`
}

// idsOf reads the logical ids of one golden snapshot. API Gateway
// deployments are left out: CDK names them after a hash of the API, so
// they change (and are replaced, harmlessly) with any change to it.
func idsOf(t *testing.T, path string) stackIDs {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var tpl struct {
		Resources map[string]struct {
			Type string `json:"Type"`
		} `json:"Resources"`
		Outputs map[string]any `json:"Outputs"`
	}
	require.NoError(t, json.Unmarshal(b, &tpl), path)
	out := stackIDs{Resources: map[string]string{}, Outputs: []string{}}
	for id, r := range tpl.Resources {
		if r.Type != "AWS::ApiGateway::Deployment" {
			out.Resources[id] = r.Type
		}
	}
	for name := range tpl.Outputs {
		out.Outputs = append(out.Outputs, name)
	}
	sort.Strings(out.Outputs)
	return out
}

// goldenSnapshots returns every golden snapshot by stack name.
func goldenSnapshots(t *testing.T) map[string]string {
	t.Helper()
	paths, err := filepath.Glob("testdata/*.json")
	require.NoError(t, err)
	out := map[string]string{}
	for _, p := range paths {
		out[strings.TrimSuffix(filepath.Base(p), ".json")] = p
	}
	require.NotEmpty(t, out)
	return out
}

// unreleasedBreaking returns the "**Breaking**" entries of CHANGELOG.md's
// Unreleased section, each as one string.
func unreleasedBreaking(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "CHANGELOG.md"))
	require.NoError(t, err)
	text := string(b)
	start := strings.Index(text, "## [Unreleased]")
	require.GreaterOrEqual(t, start, 0, "CHANGELOG.md has no ## [Unreleased] section")
	section := text[start+len("## [Unreleased]"):]
	if end := strings.Index(section, "\n## ["); end >= 0 {
		section = section[:end]
	}
	var entries []string
	for _, e := range strings.Split(section, "\n- ") {
		if strings.HasPrefix(e, "**Breaking**") {
			entries = append(entries, e)
		}
	}
	return entries
}

// Logical ids of the last release are kept, or their change is a
// Breaking line of the changelog.
func TestLogicalIDsKeptSinceRelease(t *testing.T) {
	snapshots := goldenSnapshots(t)
	if *release {
		r := releasedIDs{Version: os.Getenv("TRIGGERS_RELEASE"), Stacks: map[string]stackIDs{}}
		require.NotEmpty(t, r.Version, "set TRIGGERS_RELEASE to the version being cut, such as 0.2.0")
		for stack, path := range snapshots {
			r.Stacks[stack] = idsOf(t, path)
		}
		b, err := json.MarshalIndent(r, "", "  ")
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Dir(releasedIDsFile), 0o755))
		require.NoError(t, os.WriteFile(releasedIDsFile, append(b, '\n'), 0o644))
		return
	}
	b, err := os.ReadFile(releasedIDsFile)
	require.NoError(t, err, "the logical ids of the last release; cut one with -release (docs/releasing.md)")
	var released releasedIDs
	require.NoError(t, json.Unmarshal(b, &released))
	now := map[string]stackIDs{}
	for stack, path := range snapshots {
		now[stack] = idsOf(t, path)
	}
	missing := missingIDs(released, now, unreleasedBreaking(t))
	assert.Empty(t, missing, "logical ids released in %s are gone from the golden snapshots: CloudFormation replaces such a resource (with its data) and breaks stacks reading such an output. Keep the construct id, or add a \"**Breaking**\" line naming each id to CHANGELOG.md's Unreleased section (docs/releasing.md)", released.Version)
}

// missingIDs returns the released stacks, resources and outputs that now
// lacks, unless a breaking entry names them.
func missingIDs(released releasedIDs, now map[string]stackIDs, breaking []string) []string {
	named := func(id string) bool {
		for _, e := range breaking {
			if strings.Contains(e, id) {
				return true
			}
		}
		return false
	}
	var missing []string
	for stack, ids := range released.Stacks {
		cur, ok := now[stack]
		if !ok {
			if !named(stack) {
				missing = append(missing, fmt.Sprintf("stack %s (no golden snapshot any more)", stack))
			}
			continue
		}
		for id, typ := range ids.Resources {
			if _, ok := cur.Resources[id]; !ok && !named(id) {
				missing = append(missing, fmt.Sprintf("%s: resource %s (%s)", stack, id, typ))
			}
		}
		for _, o := range ids.Outputs {
			if !slices.Contains(cur.Outputs, o) && !named(o) {
				missing = append(missing, fmt.Sprintf("%s: output %s", stack, o))
			}
		}
	}
	sort.Strings(missing)
	return missing
}

// The check itself: ids missing from a snapshot are found, deployments
// are left out, and a Breaking line naming an id excuses it.
func TestReleasedIDsCheck(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"Resources":{"Table1":{"Type":"AWS::DynamoDB::Table"},"Deployment9f":{"Type":"AWS::ApiGateway::Deployment"}},"Outputs":{"Out":{}}}`), 0o644))
	got := idsOf(t, path)
	assert.Equal(t, stackIDs{Resources: map[string]string{"Table1": "AWS::DynamoDB::Table"}, Outputs: []string{"Out"}}, got, "deployments are left out")

	released := releasedIDs{Version: "0.1.0", Stacks: map[string]stackIDs{
		"app":  {Resources: map[string]string{"Table1": "AWS::DynamoDB::Table", "Queue2": "AWS::SQS::Queue"}, Outputs: []string{"Out", "Url"}},
		"gone": {Resources: map[string]string{"X": "AWS::SNS::Topic"}},
	}}
	now := map[string]stackIDs{"app": {Resources: map[string]string{"Table1": "AWS::DynamoDB::Table", "Queue3": "AWS::SQS::Queue"}, Outputs: []string{"Out"}}}
	assert.Equal(t, []string{"app: output Url", "app: resource Queue2 (AWS::SQS::Queue)", "stack gone (no golden snapshot any more)"},
		missingIDs(released, now, nil), "an added id is fine, a removed one is not")
	assert.Equal(t, []string{"app: output Url"},
		missingIDs(released, now, []string{"**Breaking** (deployed stacks): the queue Queue2 is replaced", "**Breaking**: stack gone is removed"}))
	for _, e := range unreleasedBreaking(t) {
		assert.True(t, strings.HasPrefix(e, "**Breaking**"), e)
	}
}
