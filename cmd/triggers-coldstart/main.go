// Command triggers-coldstart measures the cold start of every Lambda
// function of this module (lambda/<fn>) against a hello-world
// aws-lambda-go function built the same way (the floor, testdata/hello),
// in one run, interleaved, and prints the stripped linux/arm64 binary
// sizes (docs/performance.md, "Cold start").
//
// Init is the time from starting the process to its first Runtime API
// `next` call: the binaries are built for the host with the deployed flags
// (-tags lambda.norpc, CGO_ENABLED=0, -trimpath, -buildvcs=false,
// -ldflags "-s -w") and started against a local Runtime API with a
// deployed-like environment whose AWS endpoints are a local address that
// accepts and drops connections, so that a network call before `next`
// shows (column "net", and as a delay or a failed start).
//
//	go run ./cmd/triggers-coldstart            # 40 rounds, every function
//	go run ./cmd/triggers-coldstart -n 10 api  # 10 rounds, api and the floor
//
// It exits 1 when a function did not reach `next`; budgets that are not
// met are printed, not failed (timings on a shared machine are noisy).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// The cold-start budgets (docs/performance.md).
const (
	// RatioBudget is the most a function's median init may be, as a
	// multiple of the floor's.
	RatioBudget = 1.2
	// SizeBudget is the most a stripped linux/arm64 binary may weigh.
	SizeBudget = 10_000_000
)

func main() {
	n := flag.Int("n", 40, "rounds: starts of each function, interleaved")
	sizes := flag.Bool("sizes", true, "also build for linux/arm64 and print the sizes")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: triggers-coldstart [-n rounds] [-sizes=false] [function...]\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if err := run(context.Background(), os.Stdout, *n, *sizes, flag.Args()); err != nil {
		fmt.Fprintf(os.Stderr, "triggers-coldstart: %v\n", err)
		os.Exit(1)
	}
}

// Report is what one run measured.
type Report struct {
	Results []Result
	// Sizes are the stripped linux/arm64 binaries' sizes by function
	// (empty without -sizes).
	Sizes map[string]int64
}

func run(ctx context.Context, w io.Writer, rounds int, withSizes bool, only []string) error {
	rep, err := measure(ctx, rounds, withSizes, only)
	if err != nil {
		return err
	}
	rep.Print(w)
	var failed []string
	for _, r := range rep.Results {
		if n, _ := r.Failures(); n > 0 {
			failed = append(failed, r.Name)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("did not reach next: %s", strings.Join(failed, ", "))
	}
	return nil
}

func measure(ctx context.Context, rounds int, withSizes bool, only []string) (Report, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" || strings.TrimSpace(string(out)) == os.DevNull {
		return Report{}, fmt.Errorf("run it inside the module (go env GOMOD: %q, %v)", out, err)
	}
	root := strings.TrimSuffix(strings.TrimSpace(string(out)), "/go.mod")
	fns, err := Functions(root)
	if err != nil {
		return Report{}, err
	}
	for _, o := range only {
		if !slices.Contains(fns, o) {
			return Report{}, fmt.Errorf("no function %q under lambda/ (have %s)", o, strings.Join(fns, ", "))
		}
	}
	if len(only) > 0 {
		fns = only
	}
	dir, err := os.MkdirTemp("", "triggers-coldstart-")
	if err != nil {
		return Report{}, err
	}
	defer os.RemoveAll(dir)
	bins, err := Build(ctx, root, dir+"/host", "", "", fns)
	if err != nil {
		return Report{}, err
	}
	var rep Report
	if withSizes {
		arm, err := Build(ctx, root, dir+"/arm64", "linux", "arm64", fns)
		if err != nil {
			return Report{}, err
		}
		rep.Sizes = map[string]int64{}
		for fn, p := range arm {
			st, err := os.Stat(p)
			if err != nil {
				return Report{}, err
			}
			rep.Sizes[fn] = st.Size()
		}
	}
	h, err := NewHarness()
	if err != nil {
		return Report{}, err
	}
	defer h.Close()
	rep.Results = h.Measure(bins, append([]string{Floor}, fns...), rounds)
	return rep, nil
}

// Print writes the init table (median, p90, ratio to the floor beside the
// budget, connections before `next`) and the sizes table.
func (rep Report) Print(w io.Writer) {
	var floor, floorCPU time.Duration
	for _, r := range rep.Results {
		if r.Name == Floor {
			floor, floorCPU = Quantile(r.Inits(), 0.5), Quantile(r.CPUs(), 0.5)
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "function\truns\tmedian\tp90\tratio\tbudget\t\tcpu\tcpu ratio\tnet\t\n")
	for _, r := range rep.Results {
		inits := r.Inits()
		med, p90 := Quantile(inits, 0.5), Quantile(inits, 0.9)
		ratio, budget, verdict := "", "", ""
		if r.Name == Floor {
			ratio, budget, verdict = "1.00x", "floor", ""
		} else if floor > 0 && len(inits) > 0 {
			x := float64(med) / float64(floor)
			ratio, budget, verdict = fmt.Sprintf("%.2fx", x), fmt.Sprintf("<= %.1fx", RatioBudget), "ok"
			if x > RatioBudget {
				verdict = "MISS"
			}
		}
		if len(inits) < len(r.Runs) {
			verdict = fmt.Sprintf("%d FAILED", len(r.Runs)-len(inits))
		}
		cpu, cpuRatio := Quantile(r.CPUs(), 0.5), ""
		if floorCPU > 0 && len(inits) > 0 {
			cpuRatio = fmt.Sprintf("%.2fx", float64(cpu)/float64(floorCPU))
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t\n", r.Name, len(inits), ms(med), ms(p90), ratio, budget, verdict, ms(cpu), cpuRatio, r.Conns())
	}
	tw.Flush()
	for _, r := range rep.Results {
		if n, err := r.Failures(); n > 0 {
			fmt.Fprintf(w, "%s: %d of %d starts failed; the first: %v\n", r.Name, n, len(r.Runs), err)
		}
	}
	if len(rep.Sizes) == 0 {
		return
	}
	fmt.Fprintf(w, "\nstripped linux/arm64 binaries (-trimpath -ldflags \"-s -w\" -tags lambda.norpc)\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "function\tbytes\tMB\tbudget\t\t\n")
	for _, r := range rep.Results {
		size, ok := rep.Sizes[r.Name]
		if !ok {
			continue
		}
		budget, verdict := fmt.Sprintf("<= %.0f MB", SizeBudget/1e6), "ok"
		if r.Name == Floor {
			budget, verdict = "floor", ""
		} else if size > SizeBudget {
			verdict = "MISS"
		}
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%s\t%s\t\n", r.Name, size, float64(size)/1e6, budget, verdict)
	}
	tw.Flush()
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }
