package sqslocal_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/dev/sqslocal"
)

// Start serves on the port asked for, on loopback only, and Stop ends the
// process; a second Stop is a no-op.
func TestStartStop(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())

	p, err := sqslocal.Start(context.Background(), sqslocal.Options{Port: port})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Stop() })
	assert.Equal(t, "http://127.0.0.1:"+strconv.Itoa(port), p.Endpoint)
	_, err = p.Client.ListQueues(context.Background(), &sqs.ListQueuesInput{})
	require.NoError(t, err)
	assert.Contains(t, p.Output(), "127.0.0.1:"+strconv.Itoa(port), "the engine's own start-up line is captured")

	require.NoError(t, p.Stop())
	select {
	case <-p.Done():
	default:
		t.Fatal("Done not closed after Stop")
	}
	assert.ErrorIs(t, syscall.Kill(p.Pid(), 0), syscall.ESRCH, "the process is gone")
	require.NoError(t, p.Stop())
}

func TestStartFailsClearly(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	_, err = sqslocal.Start(ctx, sqslocal.Options{Port: busy.Addr().(*net.TCPAddr).Port})
	assert.ErrorIs(t, err, sqslocal.ErrPortInUse)
	assert.ErrorContains(t, err, "choose another port")

	_, err = sqslocal.Start(ctx, sqslocal.Options{Command: []string{"/nonexistent/moto_server"}})
	assert.ErrorIs(t, err, sqslocal.ErrNotInstalled)

	// A program that exits at once: its output is in the error.
	_, err = sqslocal.Start(ctx, sqslocal.Options{Command: []string{"sh", "-c", "echo engine broke >&2; exit 3", "sh"}})
	require.Error(t, err)
	assert.False(t, errors.Is(err, sqslocal.ErrNotInstalled))
	assert.ErrorContains(t, err, "exited before answering: engine broke")
}
