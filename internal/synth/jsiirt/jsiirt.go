// Package jsiirt stops the jsii runtime (the Node process behind
// aws-cdk-go) without the noise it prints by default.
//
// Two lines reach users otherwise:
//
//   - Node's support banner: see package jsiienv, which silences it and
//     must be imported for its side effect.
//
//   - "Runtime process exited abnormally: waitid: no child processes" at exit.
//     Its cause is a race in jsii-runtime-go (internal/kernel/process): a
//     goroutine started with the runtime blocks in exec.Cmd.Wait, and
//     jsii.Close calls Wait on the same command too. When Close's wait reaps
//     the Node process first, the goroutine's waitid fails with ECHILD and it
//     prints that line, although Node exited cleanly. Close runs jsii.Close
//     with stderr routed through a filter that drops exactly that benign
//     ECHILD message; everything else, including a real abnormal exit
//     ("exit status 1", a signal), is passed through unchanged. The filter
//     stays in place until that goroutine has ended (it prints, if at all,
//     just before it ends), found by its frame in the goroutine dump, so
//     Close waits exactly as long as the race takes, not a fixed time.
package jsiirt

import (
	"bytes"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/aws/jsii-runtime-go"
)

// BenignExitMessage is the exact text jsii-runtime-go prints when its two
// concurrent waits race; it carries no newline.
const BenignExitMessage = "Runtime process exited abnormally: waitid: no child processes"

// WaiterFrame is the function of jsii-runtime-go's goroutine that waits for
// the Node process and prints the exit race's message: the anonymous
// function in process.(*Process).ensureStarted. Close waits for it to end.
const WaiterFrame = "github.com/aws/jsii-runtime-go/internal/kernel/process.(*Process).ensureStarted.func"

// waiterTimeout bounds Close's wait for the waiter goroutine, which ends
// as soon as the Node process it waits for is reaped: it is a safeguard
// against a jsii-runtime-go whose goroutine outlives the process, not a
// grace period.
const waiterTimeout = 5 * time.Second

// WaiterRunning reports whether jsii-runtime-go's waiter goroutine (see
// WaiterFrame) is running.
func WaiterRunning() bool {
	buf := make([]byte, 64<<10)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return bytes.Contains(buf[:n], []byte(WaiterFrame))
		}
		buf = make([]byte, 2*len(buf))
	}
}

// RunTests is the TestMain of every test package that synthesizes: it
// runs the tests, stops the jsii runtime with Close and exits with the
// tests' status. m is the *testing.M (an interface here, so that programs
// importing this package do not link package testing).
//
//	func TestMain(m *testing.M) { jsiirt.RunTests(m) }
func RunTests(m interface{ Run() int }) {
	code := m.Run()
	Close()
	os.Exit(code)
}

// Close stops the jsii runtime, dropping only BenignExitMessage from what it
// prints on stderr meanwhile.
func Close() {
	orig := os.Stderr
	r, w, err := os.Pipe()
	if err != nil {
		jsii.Close()
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var buf bytes.Buffer
		_, _ = io.Copy(&buf, r)
		if out := Filter(buf.Bytes()); len(out) > 0 {
			_, _ = orig.Write(out)
		}
	}()
	os.Stderr = w
	jsii.Close()
	// The racing goroutine prints when its own wait fails, which can be
	// just after jsii.Close has returned (its waitid returns ECHILD once
	// Close's wait has reaped Node). Keep the filter in place until that
	// goroutine has ended, so that line lands in it too.
	for deadline := time.Now().Add(waiterTimeout); WaiterRunning() && time.Now().Before(deadline); {
		time.Sleep(100 * time.Microsecond)
	}
	os.Stderr = orig
	_ = w.Close()
	<-done
	_ = r.Close()
}

// Filter removes BenignExitMessage (and the newline after it, if any) from b.
func Filter(b []byte) []byte {
	msg := []byte(BenignExitMessage)
	for {
		i := bytes.Index(b, msg)
		if i < 0 {
			return b
		}
		j := i + len(msg)
		if j < len(b) && b[j] == '\n' {
			j++
		}
		b = append(b[:i:i], b[j:]...)
	}
}
