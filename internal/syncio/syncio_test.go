package syncio

import (
	"bytes"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestBufferConcurrentAndBounded(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = b.Write([]byte("line\n"))
		}()
	}
	wg.Wait()
	assert.Equal(t, strings.Repeat("line\n", 20), b.String())

	small := Buffer{Max: 8}
	n, err := small.Write([]byte("0123456789"))
	assert.NoError(t, err)
	assert.Equal(t, 10, n)
	n, err = small.Write([]byte("more"))
	assert.NoError(t, err)
	assert.Equal(t, 4, n, "writes past Max succeed")
	assert.Equal(t, "0123456789", small.String(), "nothing kept past Max")
}

func TestWriterKeepsWritesWhole(t *testing.T) {
	var out bytes.Buffer
	w := &Writer{W: &out}
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = w.Write([]byte("abcdefghij\n"))
		}()
	}
	wg.Wait()
	assert.Equal(t, strings.Repeat("abcdefghij\n", 50), out.String())
}
