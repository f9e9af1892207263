package modroot_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/synth/modroot"
)

func TestFind(t *testing.T) {
	root := t.TempDir()
	inner := filepath.Join(root, "inner")
	deep := filepath.Join(inner, "a", "b")
	require.NoError(t, os.MkdirAll(deep, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "go.mod"), []byte("module x\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "package.json"), []byte("{}"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(inner, "go.mod"), []byte("module x/inner\n"), 0o644))

	got, err := modroot.Find(deep)
	require.NoError(t, err)
	assert.Equal(t, inner, got, "the nearest go.mod wins")

	got, err = modroot.Find(deep, "package.json")
	require.NoError(t, err)
	assert.Equal(t, root, got, "the nearest directory holding both")

	got, err = modroot.Find(root)
	require.NoError(t, err)
	assert.Equal(t, root, got, "the starting directory itself counts")

	_, err = modroot.Find(deep, "no-such-file")
	assert.ErrorContains(t, err, "go.mod and no-such-file")
}

func TestFromWorkingDir(t *testing.T) {
	got, err := modroot.FromWorkingDir("package.json")
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(got, "go.mod"))
	require.NoError(t, err)
	assert.Contains(t, string(b), "module github.com/triggers-dev/triggers\n", "this repository's root")
}
