// Package syncio has the two concurrency-safe writers that servers, child
// processes and tests share: a Buffer to collect output, and a Writer that
// serializes writes to another writer.
package syncio

import (
	"bytes"
	"io"
	"sync"
)

// Buffer is a bytes.Buffer safe for concurrent Write and String. With a
// positive Max it stops keeping output past Max bytes (writes still
// succeed), so a chatty child process cannot grow it without bound.
type Buffer struct {
	// Max bounds what is kept; 0 keeps everything.
	Max int

	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p (or drops it once Max is reached).
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.Max > 0 && b.buf.Len() >= b.Max {
		return len(p), nil
	}
	return b.buf.Write(p)
}

// String returns what was kept.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Writer serializes writes to W, so lines written in one call never
// interleave.
type Writer struct {
	W io.Writer

	mu sync.Mutex
}

// Write writes p to W.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.W.Write(p)
}
