package fnconfig

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/triggers-dev/triggers/contract"
)

// Archiver is the configuration of the archiver function.
type Archiver struct {
	// Bucket is the archive bucket's name.
	Bucket string
	// Prefix starts every object key; it ends in "/".
	Prefix string
	// LogLevel is LOG_LEVEL (default info).
	LogLevel slog.Level
	// Endpoint overrides the S3 endpoint; empty on AWS.
	Endpoint string
	// DeadLetterQueueURL is DEAD_LETTER_QUEUE_URL: where records that can
	// never be archived are parked. Empty: they are batch item failures.
	DeadLetterQueueURL string
	// SQSEndpoint is SQS_ENDPOINT: overrides the SQS endpoint of the
	// dead-letter queue; empty on AWS.
	SQSEndpoint string
}

// validBucket is S3's rule for (general purpose) bucket names, in short:
// `^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`, checked by hand because compiling
// that regexp (61 repetitions) cost every cold start 0.2 ms of package
// init (docs/performance.md, "Cold start").
func validBucket(s string) bool {
	if len(s) < 3 || len(s) > 63 {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		case (c == '.' || c == '-') && i > 0 && i < len(s)-1:
		default:
			return false
		}
	}
	return true
}

// LoadArchiver reads the archiver's configuration (documented in
// docs/runtime.md): ARCHIVE_BUCKET (a bucket name, not an ARN) is
// required; ARCHIVE_PREFIX (default "expired/", must end in "/"),
// DEAD_LETTER_QUEUE_URL (an absolute http or https URL), LOG_LEVEL (debug,
// info, warn, error; default info), S3_ENDPOINT and SQS_ENDPOINT are
// optional.
func LoadArchiver(getenv func(string) string) (Archiver, error) {
	var errs []error
	c := Archiver{
		Bucket:   strings.TrimSpace(getenv(contract.EnvArchiveBucket)),
		Prefix:   strings.TrimSpace(getenv(contract.EnvArchivePrefix)),
		Endpoint: strings.TrimSpace(getenv(contract.EnvS3Endpoint)),

		DeadLetterQueueURL: strings.TrimSpace(getenv(contract.EnvDeadLetterQueueURL)),
		SQSEndpoint:        strings.TrimSpace(getenv(contract.EnvSQSEndpoint)),
	}
	switch {
	case c.Bucket == "":
		errs = append(errs, fmt.Errorf("%s is not set: set it to the archive bucket's name", contract.EnvArchiveBucket))
	case !validBucket(c.Bucket):
		errs = append(errs, fmt.Errorf("%s=%q is not a bucket name: use the name (3-63 characters of a-z, 0-9, '.', '-'), not an ARN or URL", contract.EnvArchiveBucket, c.Bucket))
	}
	if c.Prefix == "" {
		c.Prefix = contract.DefaultArchivePrefix
	}
	if !strings.HasSuffix(c.Prefix, "/") || strings.HasPrefix(c.Prefix, "/") {
		errs = append(errs, fmt.Errorf("%s=%q must end in \"/\" and not start with one (default %q)", contract.EnvArchivePrefix, c.Prefix, contract.DefaultArchivePrefix))
	}
	if c.DeadLetterQueueURL != "" {
		if err := checkQueueURL(contract.EnvDeadLetterQueueURL, c.DeadLetterQueueURL, ", or leave it unset"); err != nil {
			errs = append(errs, err)
		}
	}
	lvl, err := parseLevel(getenv(contract.EnvLogLevel))
	if err != nil {
		errs = append(errs, err)
	}
	c.LogLevel = lvl
	return c, errors.Join(errs...)
}
