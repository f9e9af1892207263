package kmslocal_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/dev/kmslocal"
)

// Start builds (first time) and runs the pinned local-kms on a port it
// picks; keys made there encrypt and decrypt; Stop ends the process and
// frees the port.
func TestStartEncryptStop(t *testing.T) {
	ctx := context.Background()
	p, err := kmslocal.Start(ctx, kmslocal.Options{Install: true})
	require.NoError(t, err)
	defer p.Stop()
	assert.Equal(t, "http://127.0.0.1:"+strconv.Itoa(p.Port), p.Endpoint)

	arn, err := p.EnsureKey(ctx, "alias/test-key")
	require.NoError(t, err)
	assert.Regexp(t, `^arn:aws:kms:`+kmslocal.Region+`:`+kmslocal.AccountID+`:key/`, arn)
	again, err := p.EnsureKey(ctx, "alias/test-key")
	require.NoError(t, err)
	assert.Equal(t, arn, again, "the alias finds the same key")
	_, err = p.EnsureKey(ctx, "test-key")
	assert.ErrorContains(t, err, "must start with alias/")

	enc, err := p.Client.Encrypt(ctx, &kms.EncryptInput{KeyId: aws.String(arn), Plaintext: []byte("hello"), EncryptionContext: map[string]string{"a": "b"}})
	require.NoError(t, err)
	dec, err := p.Client.Decrypt(ctx, &kms.DecryptInput{KeyId: aws.String(arn), CiphertextBlob: enc.CiphertextBlob, EncryptionContext: map[string]string{"a": "b"}})
	require.NoError(t, err)
	assert.Equal(t, "hello", string(dec.Plaintext))
	_, err = p.Client.Decrypt(ctx, &kms.DecryptInput{KeyId: aws.String(arn), CiphertextBlob: enc.CiphertextBlob, EncryptionContext: map[string]string{"a": "c"}})
	assert.Error(t, err, "the encryption context is bound to the ciphertext")

	require.NoError(t, p.Stop())
	select {
	case <-p.Done():
	default:
		t.Fatal("Stop returned before the process exited")
	}
	require.NoError(t, p.Stop(), "Stop twice is a no-op")
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(p.Port), time.Second)
	if err == nil {
		c.Close()
		t.Fatalf("port %d still answers after Stop", p.Port)
	}
}

// With DataDir the keys outlive the process: a second run finds the key
// by its alias and decrypts what the first one encrypted.
func TestDataDirKeepsKeys(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "kms")
	p, err := kmslocal.Start(ctx, kmslocal.Options{Install: true, DataDir: dir})
	require.NoError(t, err)
	arn, err := p.EnsureKey(ctx, "alias/kept")
	require.NoError(t, err)
	enc, err := p.Client.Encrypt(ctx, &kms.EncryptInput{KeyId: aws.String(arn), Plaintext: []byte("kept")})
	require.NoError(t, err)
	require.NoError(t, p.Stop())
	_, err = os.Stat(dir)
	require.NoError(t, err, "a given DataDir is kept")

	p2, err := kmslocal.Start(ctx, kmslocal.Options{Install: true, DataDir: dir})
	require.NoError(t, err)
	defer p2.Stop()
	again, err := p2.EnsureKey(ctx, "alias/kept")
	require.NoError(t, err)
	assert.Equal(t, arn, again)
	dec, err := p2.Client.Decrypt(ctx, &kms.DecryptInput{KeyId: aws.String(arn), CiphertextBlob: enc.CiphertextBlob})
	require.NoError(t, err)
	assert.Equal(t, "kept", string(dec.Plaintext))
}

// A missing binary without Install says how to build it; a wrong path
// is ErrNotInstalled.
func TestNotInstalled(t *testing.T) {
	_, err := kmslocal.Start(context.Background(), kmslocal.Options{Binary: filepath.Join(t.TempDir(), "none")})
	assert.ErrorIs(t, err, kmslocal.ErrNotInstalled)

	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, kmslocal.ToolsDir), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, kmslocal.ToolsDir, "go.mod"), []byte("module x\n\ngo 1.26\n\nrequire "+kmslocal.Module+" v0.0.0-20260228092603-2a5e92d09ab6 // indirect\n"), 0o644))
	v, err := kmslocal.PinnedVersion(root)
	require.NoError(t, err)
	assert.Equal(t, "v0.0.0-20260228092603-2a5e92d09ab6", v)
	_, err = kmslocal.Binary(context.Background(), root, false)
	assert.ErrorIs(t, err, kmslocal.ErrNotInstalled)
	assert.ErrorContains(t, err, "go build")

	require.NoError(t, os.WriteFile(filepath.Join(root, kmslocal.ToolsDir, "go.mod"), []byte("module x\n"), 0o644))
	_, err = kmslocal.PinnedVersion(root)
	assert.ErrorIs(t, err, kmslocal.ErrNotInstalled)
}

// The project's own tools module pins local-kms (what Binary builds).
func TestToolsModulePinsLocalKMS(t *testing.T) {
	root, err := kmslocal.ModuleRoot()
	require.NoError(t, err)
	v, err := kmslocal.PinnedVersion(root)
	require.NoError(t, err)
	assert.NotEmpty(t, v)
	mod, err := os.ReadFile(filepath.Join(root, kmslocal.ToolsDir, "go.mod"))
	require.NoError(t, err)
	assert.Contains(t, string(mod), "tool "+kmslocal.Module, "a tool directive: go tool local-kms works in tools/")
}
