package contract

// Names the archive of expired events (constructs/archive and
// internal/archive, lambda/archiver) agree on.
const (
	// EnvArchiveBucket is the archive bucket's name (archiver function).
	EnvArchiveBucket = "ARCHIVE_BUCKET"
	// EnvArchivePrefix is the key prefix every archived object starts
	// with (archiver function); the function's role may write under it
	// only.
	EnvArchivePrefix = "ARCHIVE_PREFIX"
	// EnvS3Endpoint overrides the S3 endpoint (local only; the constructs
	// never set it).
	EnvS3Endpoint = "S3_ENDPOINT"

	// DefaultArchivePrefix is the archive's default key prefix: objects
	// are expired/tenant=<tenant>/date=<YYYY-MM-DD>/<batch id>.jsonl.gz.
	DefaultArchivePrefix = "expired/"
)
