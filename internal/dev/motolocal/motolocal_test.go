package motolocal_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/dev/motolocal"
)

// Start serves SQS and S3 on the port asked for, on loopback only, and
// Stop ends the process; a second Stop is a no-op.
func TestStartStop(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	ctx := context.Background()

	p, err := motolocal.Start(ctx, motolocal.Options{Port: port})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Stop() })
	assert.Equal(t, "http://127.0.0.1:"+strconv.Itoa(port), p.Endpoint)
	assert.Equal(t, port, p.Port)
	_, err = p.SQSClient().ListQueues(ctx, &sqs.ListQueuesInput{})
	require.NoError(t, err)
	assert.Contains(t, p.Output(), "127.0.0.1:"+strconv.Itoa(port), "the engine's own start-up line is captured")

	// S3, path-style: a bucket made through one client is read through
	// another.
	_, err = p.S3Client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("start-stop")})
	require.NoError(t, err)
	_, err = p.S3Client().PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("start-stop"), Key: aws.String("a/b.txt"), Body: bytes.NewReader([]byte("hello"))})
	require.NoError(t, err)
	out, err := motolocal.NewS3Client(p.Endpoint).GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("start-stop"), Key: aws.String("a/b.txt")})
	require.NoError(t, err)
	body, err := io.ReadAll(out.Body)
	require.NoError(t, err)
	assert.Equal(t, "hello", string(body))

	require.NoError(t, p.Stop())
	select {
	case <-p.Done():
	default:
		t.Fatal("Done not closed after Stop")
	}
	assert.ErrorIs(t, syscall.Kill(p.Pid(), 0), syscall.ESRCH, "the process is gone")
	require.NoError(t, p.Stop())
	_, err = p.SQSClient(func(o *sqs.Options) { o.RetryMaxAttempts = 1 }).ListQueues(ctx, &sqs.ListQueuesInput{})
	assert.Error(t, err, "nothing answers after Stop")
}

func TestStartFailsClearly(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	busyPort := busy.Addr().(*net.TCPAddr).Port

	_, err = motolocal.Start(ctx, motolocal.Options{Port: busyPort})
	assert.ErrorIs(t, err, motolocal.ErrPortInUse)
	assert.ErrorContains(t, err, "moto_server cannot listen on 127.0.0.1:"+strconv.Itoa(busyPort))
	assert.ErrorContains(t, err, "choose another port")

	// Name names the engine after its role in every message.
	_, err = motolocal.Start(ctx, motolocal.Options{Port: busyPort, Name: "the SQS engine"})
	assert.ErrorIs(t, err, motolocal.ErrPortInUse)
	assert.ErrorContains(t, err, "the SQS engine cannot listen on 127.0.0.1:")

	_, err = motolocal.Start(ctx, motolocal.Options{Command: []string{"/nonexistent/moto_server"}})
	assert.ErrorIs(t, err, motolocal.ErrNotInstalled)

	// A program that exits at once: its output is in the error.
	_, err = motolocal.Start(ctx, motolocal.Options{Command: []string{"sh", "-c", "echo engine broke >&2; exit 3", "sh"}})
	require.Error(t, err)
	assert.False(t, errors.Is(err, motolocal.ErrNotInstalled))
	assert.ErrorContains(t, err, "moto_server exited before answering: engine broke")
	_, err = motolocal.Start(ctx, motolocal.Options{Name: "the SQS engine", Command: []string{"sh", "-c", "exit 3", "sh"}})
	assert.ErrorContains(t, err, "the SQS engine exited before answering")

	// Neither moto_server nor python3 on PATH: the message says how to
	// install it.
	t.Setenv("PATH", t.TempDir())
	_, err = motolocal.Start(ctx, motolocal.Options{})
	assert.ErrorIs(t, err, motolocal.ErrNotInstalled)
	assert.ErrorContains(t, err, "pip install 'moto[server]==5.2.1'")
}
