// Command triggers-local serves the Triggers HTTP API v1 on a plain HTTP
// server, for development against DynamoDB Local (or real tables). Requests
// authenticate with API keys from the API-keys table, exactly as the Lambda
// authorizer does.
//
//	triggers-local -endpoint-url http://localhost:8000 -create-tables
//
// Flags default from the environment: EVENTS_TABLE, API_KEYS_TABLE,
// CURSOR_SECRET, DYNAMODB_ENDPOINT, RETENTION_DAYS, LOG_LEVEL.
package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/triggers-dev/triggers/internal/apikey"
	"github.com/triggers-dev/triggers/internal/appconfig"
	"github.com/triggers-dev/triggers/internal/awsdb"
	"github.com/triggers-dev/triggers/internal/httpapi"
	"github.com/triggers-dev/triggers/internal/store"
	"github.com/triggers-dev/triggers/schema"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv, nil))
}

func orDefault(v, d string) string {
	if v == "" {
		return d
	}
	return v
}

// run serves until ctx ends; ready, when set, receives the bound address.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string, ready chan<- string) int {
	fs := flag.NewFlagSet("triggers-local", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8080", "listen address")
	endpoint := fs.String("endpoint-url", getenv(appconfig.EnvDynamoDBEndpoint), "DynamoDB endpoint, such as http://localhost:8000 (default $DYNAMODB_ENDPOINT, else AWS)")
	eventsTable := fs.String("events-table", orDefault(getenv(appconfig.EnvEventsTable), "triggers-events"), "events table (default $EVENTS_TABLE or triggers-events)")
	keysTable := fs.String("keys-table", orDefault(getenv(appconfig.EnvAPIKeysTable), "triggers-apikeys"), "API-keys table (default $API_KEYS_TABLE or triggers-apikeys)")
	createTables := fs.Bool("create-tables", false, "create both tables if missing (DynamoDB Local)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	secret := []byte(getenv(appconfig.EnvCursorSecret))
	if len(secret) == 0 {
		b := make([]byte, 48)
		_, _ = rand.Read(b)
		secret = []byte(base64.RawURLEncoding.EncodeToString(b))
		fmt.Fprintln(stderr, "triggers-local: CURSOR_SECRET not set; using a random one (cursors die with the process)")
	}
	cfg, err := appconfig.LoadAPI(func(k string) string {
		switch k {
		case appconfig.EnvEventsTable:
			return *eventsTable
		case appconfig.EnvCursorSecret:
			return string(secret)
		case appconfig.EnvCursorSecretARN:
			return "" // the local server takes the key itself
		}
		return getenv(k)
	})
	if err != nil {
		fmt.Fprintf(stderr, "triggers-local: %v\n", err)
		return 2
	}
	log := appconfig.Logger(stdout, cfg.LogLevel)
	client, err := awsdb.NewClient(ctx, awsdb.Options{EndpointURL: *endpoint})
	if err != nil {
		fmt.Fprintf(stderr, "triggers-local: %v\n", err)
		return 1
	}
	if *createTables {
		for _, t := range []struct {
			tbl  schema.Table
			name string
		}{{schema.Events(), *eventsTable}, {schema.APIKeys(), *keysTable}} {
			if _, err := awsdb.CreateTable(ctx, client, t.tbl, t.name, true); err != nil {
				fmt.Fprintf(stderr, "triggers-local: %v\n", err)
				return 1
			}
		}
	}
	api, err := httpapi.New(httpapi.Config{
		Store:         store.New(client, *eventsTable),
		CursorSecret:  cfg.CursorSecret,
		Authenticator: apikey.NewStore(client, *keysTable),
		Retention:     cfg.Retention,
		Logger:        log,
	})
	if err != nil {
		fmt.Fprintf(stderr, "triggers-local: %v\n", err)
		return 1
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "triggers-local: %v\n", err)
		return 1
	}
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second}
	log.Info("listening", "addr", ln.Addr().String(), "events_table", *eventsTable, "keys_table", *keysTable, "endpoint", *endpoint)
	if ready != nil {
		ready <- ln.Addr().String()
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		fmt.Fprintf(stderr, "triggers-local: %v\n", err)
		return 1
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "triggers-local: shutdown: %v\n", err)
		return 1
	}
	return 0
}
