package assertions

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The documentation is one path through the repository: every relative
// link of every Markdown file (README, CHANGELOG, docs/, examples/, stacks/)
// reaches a file that exists and, when it names an anchor, a heading of
// that file.

var (
	// mdLinkRE finds inline Markdown links and images: [text](target).
	mdLinkRE = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	// inlineCodeRE finds inline code, whose brackets are no links.
	inlineCodeRE = regexp.MustCompile("`[^`]*`")
)

// markdownFiles returns the repository's Markdown files, outside
// node_modules, cdk.out and hidden folders.
func markdownFiles(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && path != root && (name == "node_modules" || name == "cdk.out" || name == "bin" || strings.HasPrefix(name, ".")) {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(name, ".md") {
			out = append(out, path)
		}
		return nil
	})
	require.NoError(t, err)
	sort.Strings(out)
	return out
}

// anchorsOf returns the GitHub anchors of a Markdown file's headings
// (outside fenced code), repeated slugs numbered as GitHub does.
func anchorsOf(text string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	fence := ""
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
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
		m := headingRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		slug := githubSlug(m[2])
		if n := seen[slug]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			anchors[slug] = true
		}
		seen[slug]++
	}
	return anchors
}

// links returns a Markdown file's link targets outside fenced code and
// inline code.
func links(text string) []string {
	var out []string
	fence := false
	for _, line := range strings.Split(text, "\n") {
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fence = !fence
			continue
		}
		if fence {
			continue
		}
		line = inlineCodeRE.ReplaceAllString(line, "")
		for _, m := range mdLinkRE.FindAllStringSubmatch(line, -1) {
			out = append(out, m[1])
		}
	}
	return out
}

func TestDocumentationLinks(t *testing.T) {
	root := filepath.Join("..")
	files := markdownFiles(t, root)
	require.Greater(t, len(files), 10, "the repository's Markdown files")
	anchorCache := map[string]map[string]bool{}
	anchors := func(path string) map[string]bool {
		if a, ok := anchorCache[path]; ok {
			return a
		}
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		anchorCache[path] = anchorsOf(string(b))
		return anchorCache[path]
	}
	checked := 0
	for _, file := range files {
		b, err := os.ReadFile(file)
		require.NoError(t, err)
		rel, _ := filepath.Rel(root, file)
		for _, target := range links(string(b)) {
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue // external: not checked offline
			}
			checked++
			path, anchor, _ := strings.Cut(target, "#")
			dest := file
			if path != "" {
				dest = filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
			}
			info, err := os.Stat(dest)
			if !assert.NoError(t, err, "%s links to %q: no such file", rel, target) {
				continue
			}
			if anchor == "" || info.IsDir() {
				continue
			}
			if strings.HasSuffix(dest, ".md") {
				assert.True(t, anchors(dest)[anchor], "%s links to %q: %s has no heading with anchor #%s", rel, target, filepath.Base(dest), anchor)
			}
		}
	}
	assert.Greater(t, checked, 50, "relative links checked")
}

// The check itself finds a broken file, a broken anchor and numbered
// repeated headings.
func TestDocumentationLinksCheck(t *testing.T) {
	a := anchorsOf("# Title\n## Run it: `make dev`\n## Notes\n## Notes\n```\n## not a heading\n```\n")
	assert.Equal(t, map[string]bool{"title": true, "run-it-make-dev": true, "notes": true, "notes-1": true}, a)
	assert.Equal(t, []string{"a.md#x", "../b.md", "https://example.com"},
		links("see [a](a.md#x) and ![b](../b.md) and [c](https://example.com \"t\") and `[d](nope.md)`\n```\n[e](f.md)\n```"))
}
