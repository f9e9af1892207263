package fnconfig

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/triggers-dev/triggers/contract"
)

// Environment variables of the archiver.
const (
	EnvArchiveBucket = contract.EnvArchiveBucket
	EnvArchivePrefix = contract.EnvArchivePrefix
	// EnvS3Endpoint overrides the S3 endpoint (an S3-compatible local
	// server, say); empty on AWS.
	EnvS3Endpoint = contract.EnvS3Endpoint
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
}

// validBucket is S3's rule for (general purpose) bucket names, in short:
// `^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`, checked by hand because compiling
// that regexp (61 repetitions) cost every cold start 0.2 ms of package
// init (issue 17).
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
// LOG_LEVEL (debug, info, warn, error; default info) and S3_ENDPOINT are
// optional.
func LoadArchiver(getenv func(string) string) (Archiver, error) {
	var errs []error
	c := Archiver{
		Bucket:   strings.TrimSpace(getenv(EnvArchiveBucket)),
		Prefix:   strings.TrimSpace(getenv(EnvArchivePrefix)),
		Endpoint: strings.TrimSpace(getenv(EnvS3Endpoint)),
	}
	switch {
	case c.Bucket == "":
		errs = append(errs, fmt.Errorf("%s is not set: set it to the archive bucket's name", EnvArchiveBucket))
	case !validBucket(c.Bucket):
		errs = append(errs, fmt.Errorf("%s=%q is not a bucket name: use the name (3-63 characters of a-z, 0-9, '.', '-'), not an ARN or URL", EnvArchiveBucket, c.Bucket))
	}
	if c.Prefix == "" {
		c.Prefix = contract.DefaultArchivePrefix
	}
	if !strings.HasSuffix(c.Prefix, "/") || strings.HasPrefix(c.Prefix, "/") {
		errs = append(errs, fmt.Errorf("%s=%q must end in \"/\" and not start with one (default %q)", EnvArchivePrefix, c.Prefix, contract.DefaultArchivePrefix))
	}
	lvl, err := parseLevel(getenv(EnvLogLevel))
	if err != nil {
		errs = append(errs, err)
	}
	c.LogLevel = lvl
	return c, errors.Join(errs...)
}
