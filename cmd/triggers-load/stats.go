package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// Budget is the end-to-end budget (docs/performance.md): the API's p50 and p99 at most
// this many times raw DynamoDB's, with no errors.
const Budget = 1.2

// Stats summarizes one arm (API or raw) of one cell.
type Stats struct {
	// Count is the number of successful operations measured.
	Count int `json:"count"`
	// Errors is the number of failed ones (an error or an unexpected
	// HTTP status).
	Errors int `json:"errors"`
	// FirstError describes the first failure, if any.
	FirstError string `json:"first_error,omitempty"`
	// P50 and P99 are latency percentiles of the successful operations.
	P50 time.Duration `json:"p50_ns"`
	P99 time.Duration `json:"p99_ns"`
	// Throughput is successful operations per second of wall time.
	Throughput float64 `json:"throughput_per_s"`
	// CPUPerOp is the CPU time this process (load generator, and for the
	// API the gateway, authorizer cache and handler too) spent per
	// operation; EngineCPUPerOp is DynamoDB Local's. 0 when not measured.
	CPUPerOp       time.Duration `json:"cpu_per_op_ns"`
	EngineCPUPerOp time.Duration `json:"engine_cpu_per_op_ns"`
}

// Cell is one row of the report: one workload at one concurrency, the API
// against raw DynamoDB.
type Cell struct {
	// Workload is "ingest" or "inbox".
	Workload string `json:"workload"`
	// Concurrency is the number of concurrent clients.
	Concurrency int `json:"concurrency"`
	// API is the arm through the gateway and handler; Raw the arm that
	// calls DynamoDB directly.
	API Stats `json:"api"`
	Raw Stats `json:"raw"`
	// P50Ratio and P99Ratio are API/raw; 0 when raw has no figure.
	P50Ratio float64 `json:"p50_ratio"`
	P99Ratio float64 `json:"p99_ratio"`
	// Misses lists what broke the budget ("p50", "p99", "errors"); empty
	// when the cell meets it.
	Misses []string `json:"misses"`
}

// Percentile returns the p-th percentile (0 < p <= 100) of sorted by the
// nearest-rank method: the smallest value with at least p% of the values
// at or below it. It returns 0 for no values.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = max(1, min(rank, len(sorted)))
	return sorted[rank-1]
}

// Summarize computes the Stats of one run: the latencies of its
// successful operations, its errors and its wall time.
func Summarize(lat []time.Duration, errors int, firstError string, wall time.Duration) Stats {
	s := slices.Clone(lat)
	slices.Sort(s)
	st := Stats{Count: len(s), Errors: errors, FirstError: firstError, P50: Percentile(s, 50), P99: Percentile(s, 99)}
	if wall > 0 {
		st.Throughput = float64(len(s)) / wall.Seconds()
	}
	return st
}

// NewCell fills in the ratios and the budget's verdict.
func NewCell(workload string, concurrency int, api, raw Stats) Cell {
	c := Cell{Workload: workload, Concurrency: concurrency, API: api, Raw: raw, Misses: []string{}}
	if raw.P50 > 0 {
		c.P50Ratio = float64(api.P50) / float64(raw.P50)
	}
	if raw.P99 > 0 {
		c.P99Ratio = float64(api.P99) / float64(raw.P99)
	}
	if c.P50Ratio == 0 || c.P50Ratio > Budget {
		c.Misses = append(c.Misses, "p50")
	}
	if c.P99Ratio == 0 || c.P99Ratio > Budget {
		c.Misses = append(c.Misses, "p99")
	}
	if api.Errors > 0 || raw.Errors > 0 || api.Count == 0 || raw.Count == 0 {
		c.Misses = append(c.Misses, "errors")
	}
	return c
}

// FormatTable writes the cells as an aligned text table: p50, p99,
// throughput and errors of the API and of raw DynamoDB, the ratios, and
// the budget with MISS marks. Text columns are left-aligned, figures
// right-aligned.
func FormatTable(w io.Writer, cells []Cell) error {
	rows := [][]string{{"workload", "conc", "API p50", "API p99", "API ops/s", "API err", "raw p50", "raw p99", "raw ops/s", "raw err", "p50 API/raw", "p99 API/raw", "budget"}}
	for _, c := range cells {
		verdict := "ok"
		if len(c.Misses) > 0 {
			verdict = "MISS " + strings.Join(c.Misses, ",")
		}
		rows = append(rows, []string{
			c.Workload, fmt.Sprint(c.Concurrency),
			FormatDuration(c.API.P50), FormatDuration(c.API.P99), fmt.Sprintf("%.0f", c.API.Throughput), fmt.Sprint(c.API.Errors),
			FormatDuration(c.Raw.P50), FormatDuration(c.Raw.P99), fmt.Sprintf("%.0f", c.Raw.Throughput), fmt.Sprint(c.Raw.Errors),
			ratio(c.P50Ratio, "p50", c.Misses), ratio(c.P99Ratio, "p99", c.Misses), verdict,
		})
	}
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, f := range r {
			widths[i] = max(widths[i], len(f))
		}
	}
	var b strings.Builder
	for _, r := range rows {
		for i, f := range r {
			pad := strings.Repeat(" ", widths[i]-len(f))
			switch {
			case i == 0:
				b.WriteString(f + pad)
			case i == len(r)-1:
				b.WriteString("  " + f)
			default:
				b.WriteString("  " + pad + f)
			}
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "budget: API/raw <= %.1fx at p50 and p99, 0 errors; ! marks a ratio over it\n", Budget)
	if len(cells) > 0 && cells[0].API.CPUPerOp > 0 {
		b.WriteString("\nCPU per operation, this process (client, and for the API the gateway and handler) + DynamoDB Local:\n")
		for _, c := range cells {
			fmt.Fprintf(&b, "%-8s %3d  API %s + %s   raw %s + %s\n", c.Workload, c.Concurrency,
				FormatDuration(c.API.CPUPerOp), FormatDuration(c.API.EngineCPUPerOp),
				FormatDuration(c.Raw.CPUPerOp), FormatDuration(c.Raw.EngineCPUPerOp))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func ratio(r float64, name string, misses []string) string {
	if r == 0 {
		return "-"
	}
	s := fmt.Sprintf("%.2fx", r)
	if slices.Contains(misses, name) {
		s += "!"
	}
	return s
}

// FormatDuration prints a latency in milliseconds with three significant
// decimals for sub-10 ms values ("0.842ms", "12.4ms").
func FormatDuration(d time.Duration) string {
	ms := float64(d) / float64(time.Millisecond)
	switch {
	case d == 0:
		return "-"
	case ms < 10:
		return fmt.Sprintf("%.3fms", ms)
	case ms < 100:
		return fmt.Sprintf("%.1fms", ms)
	}
	return fmt.Sprintf("%.0fms", ms)
}
