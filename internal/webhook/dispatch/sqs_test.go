package dispatch_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triggers-dev/triggers/internal/dev/motolocal/mototest"
	"github.com/triggers-dev/triggers/internal/webhook/dispatch"
)

// recording passes every SendMessage to the real engine and keeps the
// input, so a test can read the DelaySeconds sent (a delayed message is
// invisible until it is due).
type recording struct {
	*sqs.Client
	mu   sync.Mutex
	sent []*sqs.SendMessageInput
}

func (r *recording) SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	r.mu.Lock()
	r.sent = append(r.sent, in)
	r.mu.Unlock()
	return r.Client.SendMessage(ctx, in, optFns...)
}

// SQSQueue sends a task as the dispatcher reads it back, on a real SQS
// engine: the JSON body, the task kind attribute, and its delay in whole
// seconds rounded up (a task never arrives early), at most SQS's 15
// minutes (the engine refuses more).
func TestSQSQueueSend(t *testing.T) {
	ctx := context.Background()
	client := &recording{Client: moto.SQSClient()}
	q, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(mototest.QueueName("retry"))})
	require.NoError(t, err)
	queue := dispatch.SQSQueue{Client: client, URL: *q.QueueUrl}
	task := dispatch.Task{Tenant: "acme", EventID: "evt_1", SubscriptionID: "sub_1"}
	cases := []struct {
		delay time.Duration
		want  int32
	}{
		{0, 0}, {-time.Second, 0}, {time.Nanosecond, 1}, {time.Second, 1}, {1500 * time.Millisecond, 2},
		{dispatch.MaxQueueDelay - time.Millisecond, 900}, {dispatch.MaxQueueDelay, 900}, {2 * dispatch.MaxQueueDelay, 900},
	}
	for i, tc := range cases {
		// Each case's task is told apart by its attempt number.
		task.Attempt = i + 1
		require.NoError(t, queue.Send(ctx, task, tc.delay), "delay %s", tc.delay)
		last := client.sent[len(client.sent)-1]
		assert.Equal(t, tc.want, last.DelaySeconds, "delay %s", tc.delay)
		assert.Equal(t, *q.QueueUrl, *last.QueueUrl)
	}
	// The undelayed tasks arrive, the ones due in 15 minutes do not. (The
	// ones due in a second or two may: the sends after them took that
	// long on a busy machine, and the test once failed expecting exactly
	// the undelayed two.)
	got := map[int]bool{}
	for try := 0; try < 5 && !(got[1] && got[2]); try++ {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10, MessageAttributeNames: []string{"All"}, WaitTimeSeconds: 1,
		})
		require.NoError(t, err)
		for _, m := range out.Messages {
			assert.Equal(t, dispatch.KindTask, *m.MessageAttributes[dispatch.AttrKind].StringValue)
			var back dispatch.Task
			require.NoError(t, json.Unmarshal([]byte(*m.Body), &back))
			require.Positive(t, back.Attempt)
			require.LessOrEqual(t, back.Attempt, len(cases))
			assert.Less(t, cases[back.Attempt-1].want, int32(900), "a task due in 15 minutes arrived now (delay %s)", cases[back.Attempt-1].delay)
			want := task
			want.Attempt = back.Attempt
			assert.Equal(t, want, back)
			got[back.Attempt] = true
		}
	}
	assert.True(t, got[1] && got[2], "the two undelayed tasks did not arrive: got attempts %v", got)

	// A queue that does not exist is an error naming the retry queue.
	missing := dispatch.SQSQueue{Client: client, URL: *q.QueueUrl + "-missing"}
	assert.ErrorContains(t, missing.Send(ctx, task, 0), "send to the webhook retry queue")
}

// A wake task's lane wait travels in its body: waiting_since is written
// only when set (a task without it, as the previous version sends, reads
// zero, which the wake takes as its start), and reads back the same.
func TestWakeTaskBodyCarriesItsLaneWait(t *testing.T) {
	since := time.Date(2026, 11, 28, 4, 48, 0, 123_000_000, time.UTC)
	waiting := dispatch.Task{Tenant: "acme", SubscriptionID: "sub_1", Wake: "w1", DueAt: since.Add(time.Second), Refused: 2, WaitingSince: since}
	body, err := json.Marshal(waiting)
	require.NoError(t, err)
	assert.Contains(t, string(body), `"waiting_since":"2026-11-28T04:48:00.123Z"`)
	var back dispatch.Task
	require.NoError(t, json.Unmarshal(body, &back))
	assert.Equal(t, waiting, back)

	plain := dispatch.Task{Tenant: "acme", SubscriptionID: "sub_1", Wake: "w2", DueAt: since}
	body, err = json.Marshal(plain)
	require.NoError(t, err)
	assert.NotContains(t, string(body), "waiting_since")
	assert.NotContains(t, string(body), "refused")
	back = dispatch.Task{}
	require.NoError(t, json.Unmarshal(body, &back))
	assert.True(t, back.WaitingSince.IsZero())
}
