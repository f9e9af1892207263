package streampoll_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/triggers-dev/triggers/internal/dev/streampoll"
	"github.com/triggers-dev/triggers/internal/streamconsumer"
)

// The local delivery loop of `make dev`: poll the events table's stream on
// DynamoDB Local and run the consumer on every batch, printing deliveries.
func ExampleStreamReader_Poll() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var db *dynamodb.Client             // for DynamoDB Local
	var streams *dynamodbstreams.Client // same endpoint
	arn, err := streampoll.LatestStreamARN(ctx, db, "events")
	if err != nil {
		panic(err)
	}
	consumer, err := streamconsumer.New(streamconsumer.Config{Publisher: streampoll.WriterSink(os.Stdout), QueueURL: "local"})
	if err != nil {
		panic(err)
	}
	reader := streampoll.NewStreamReader(streams, arn, streampoll.StreamReaderOptions{})
	err = reader.Poll(ctx, consumer.Handle, streampoll.PollOptions{Interval: 500 * time.Millisecond, Logger: slog.Default()})
	fmt.Println(err)
}
