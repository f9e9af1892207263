package fnconfig_test

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/lambda/fnconfig"
)

func TestLoadConsumer(t *testing.T) {
	const queue = "https://sqs.eu-west-1.amazonaws.com/123456789012/delivery"
	c, err := fnconfig.LoadConsumer(env(map[string]string{"DELIVERY_QUEUE_URL": " " + queue + " "}))
	require.NoError(t, err)
	assert.Equal(t, fnconfig.Consumer{QueueURL: queue, LogLevel: slog.LevelInfo}, c)

	c, err = fnconfig.LoadConsumer(env(map[string]string{"DELIVERY_QUEUE_URL": "http://localhost:9324/000000000000/q", "LOG_LEVEL": "Error", "SQS_ENDPOINT": "http://localhost:9324"}))
	require.NoError(t, err)
	assert.Equal(t, fnconfig.Consumer{QueueURL: "http://localhost:9324/000000000000/q", LogLevel: slog.LevelError, Endpoint: "http://localhost:9324"}, c)

	c, err = fnconfig.LoadConsumer(env(map[string]string{"DELIVERY_QUEUE_URL": queue, "DEAD_LETTER_QUEUE_URL": " " + queue + "-failures "}))
	require.NoError(t, err)
	assert.Equal(t, queue+"-failures", c.DeadLetterQueueURL)

	tests := []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"nothing", nil, []string{"DELIVERY_QUEUE_URL is not set"}},
		{"queue name instead of URL", map[string]string{"DELIVERY_QUEUE_URL": "delivery"}, []string{`DELIVERY_QUEUE_URL="delivery" is not a queue URL`}},
		{"ARN instead of URL", map[string]string{"DELIVERY_QUEUE_URL": "arn:aws:sqs:eu-west-1:123456789012:delivery"}, []string{"is not a queue URL"}},
		{"bad level and no queue", map[string]string{"LOG_LEVEL": "loud"}, []string{"DELIVERY_QUEUE_URL", "LOG_LEVEL"}},
	}
	for _, tt := range tests {
		_, err := fnconfig.LoadConsumer(env(tt.env))
		require.Error(t, err, tt.name)
		for _, w := range tt.want {
			assert.Contains(t, err.Error(), w, tt.name)
		}
	}
}
