package fnconfig_test

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/lambda/fnconfig"
)

func TestLoadArchiver(t *testing.T) {
	c, err := fnconfig.LoadArchiver(env(map[string]string{"ARCHIVE_BUCKET": " triggers-dev-data-archive-1a2b3c "}))
	require.NoError(t, err)
	assert.Equal(t, fnconfig.Archiver{Bucket: "triggers-dev-data-archive-1a2b3c", Prefix: "expired/", LogLevel: slog.LevelInfo}, c)

	c, err = fnconfig.LoadArchiver(env(map[string]string{"ARCHIVE_BUCKET": "b.example", "ARCHIVE_PREFIX": "ttl/expired/", "LOG_LEVEL": "debug", "S3_ENDPOINT": "http://127.0.0.1:9000"}))
	require.NoError(t, err)
	assert.Equal(t, fnconfig.Archiver{Bucket: "b.example", Prefix: "ttl/expired/", LogLevel: slog.LevelDebug, Endpoint: "http://127.0.0.1:9000"}, c)

	c, err = fnconfig.LoadArchiver(env(map[string]string{"ARCHIVE_BUCKET": "archive", "DEAD_LETTER_QUEUE_URL": "https://sqs.eu-west-1.amazonaws.com/123456789012/failures", "SQS_ENDPOINT": "http://127.0.0.1:9324"}))
	require.NoError(t, err)
	assert.Equal(t, fnconfig.Archiver{Bucket: "archive", Prefix: "expired/", LogLevel: slog.LevelInfo,
		DeadLetterQueueURL: "https://sqs.eu-west-1.amazonaws.com/123456789012/failures", SQSEndpoint: "http://127.0.0.1:9324"}, c)

	tests := []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"nothing", nil, []string{"ARCHIVE_BUCKET is not set"}},
		{"ARN instead of name", map[string]string{"ARCHIVE_BUCKET": "arn:aws:s3:::archive"}, []string{`ARCHIVE_BUCKET="arn:aws:s3:::archive" is not a bucket name`}},
		{"prefix without slash", map[string]string{"ARCHIVE_BUCKET": "archive", "ARCHIVE_PREFIX": "expired"}, []string{`ARCHIVE_PREFIX="expired" must end in "/"`}},
		{"absolute prefix", map[string]string{"ARCHIVE_BUCKET": "archive", "ARCHIVE_PREFIX": "/expired/"}, []string{"ARCHIVE_PREFIX"}},
		{"queue ARN instead of URL", map[string]string{"ARCHIVE_BUCKET": "archive", "DEAD_LETTER_QUEUE_URL": "arn:aws:sqs:eu-west-1:123456789012:failures"}, []string{`DEAD_LETTER_QUEUE_URL="arn:aws:sqs:eu-west-1:123456789012:failures" is not a queue URL`}},
		{"bad level and no bucket", map[string]string{"LOG_LEVEL": "loud"}, []string{"ARCHIVE_BUCKET", "LOG_LEVEL"}},
	}
	for _, tt := range tests {
		_, err := fnconfig.LoadArchiver(env(tt.env))
		require.Error(t, err, tt.name)
		for _, w := range tt.want {
			assert.Contains(t, err.Error(), w, tt.name)
		}
	}
}
