package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

// figure is one measured number, or the reason there is none (Value nil):
// the report never prints a number this run did not measure.
type figure struct {
	Section string    `json:"section"`
	Name    string    `json:"name"`
	Value   *float64  `json:"value"`
	Unit    string    `json:"unit,omitempty"`
	Samples []float64 `json:"samplesMs,omitempty"`
	// Detail is printed after the value: what a count is out of, the
	// kinds it breaks down into, the run's own conditions.
	Detail string `json:"detail,omitempty"`
	NA     string `json:"na,omitempty"`
}

func (f figure) key() string { return f.Section + "/" + f.Name }

// ratio is num / den of two figures of the run. Goal, when set, is what
// the regression guard (guard.go) judges it against; a ratio without one
// is informational. Target is the goal as printed, kept in the JSON for
// readers of earlier reports.
type ratio struct {
	Name string `json:"name"`
	Num  string `json:"numerator"`
	Den  string `json:"denominator"`
	// DenValue, when set, is the denominator itself: a target of an
	// absolute goal (150 MiB), Den then naming it.
	DenValue *float64 `json:"denominatorValue,omitempty"`
	Value    *float64 `json:"value"`
	Target   string   `json:"target,omitempty"`
	Goal     *goal    `json:"goal,omitempty"`
}

type machine struct {
	NProc         int    `json:"nproc"`
	CPU           string `json:"cpu"`
	MemTotal      string `json:"memTotal"`
	Kernel        string `json:"kernel"`
	LoadAvgStart  string `json:"loadavgStart"`
	LoadAvgEnd    string `json:"loadavgEnd"`
	DockerVersion string `json:"dockerVersion"`
	DockerAPI     string `json:"dockerAPIVersion"`
	StorageDriver string `json:"storageDriver"`
	CgroupDriver  string `json:"cgroupDriver"`
	Go            string `json:"go"`
}

type report struct {
	mu       sync.Mutex
	RunID    string            `json:"runId"`
	Command  []string          `json:"command"`
	Env      map[string]string `json:"env"`
	Started  time.Time         `json:"started"`
	Duration string            `json:"duration"`
	Machine  machine           `json:"machine"`
	Settings settings          `json:"settings"`
	Baseline string            `json:"baseline,omitempty"` // -baseline: the revision compared against
	Figures  []figure          `json:"figures"`
	Ratios   []ratio           `json:"ratios"`
	Guard    []judgement       `json:"guard"`
	Notes    []string          `json:"notes"`
}

func newReport(e *env, s settings) *report {
	r := &report{RunID: e.runID, Command: os.Args, Started: time.Now(), Settings: s, Env: map[string]string{}}
	for _, k := range []string{"BENCH_QUICK", "BENCH_SWARM", "BENCH_RECOVERY", "BENCH_JSON", "BENCH_SECTIONS", "BENCH_DEADLINE", "BENCH_BASELINE", "BENCH_GUARD", "BENCH_SCALE_PODS", "DOCKER_HOST"} {
		if v, ok := os.LookupEnv(k); ok {
			r.Env[k] = v
		}
	}
	m := &r.Machine
	m.NProc = runtime.NumCPU()
	m.Go = runtime.Version()
	m.Kernel = readTrim("/proc/sys/kernel/osrelease")
	m.LoadAvgStart = loadavg()
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		line, _, _ := strings.Cut(string(b), "\n")
		m.MemTotal = strings.Join(strings.Fields(strings.TrimPrefix(line, "MemTotal:")), " ")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if v, err := e.cli.ServerVersion(ctx); err == nil {
		m.DockerVersion, m.DockerAPI = v.Version, v.APIVersion
	}
	if info, err := e.cli.Info(ctx); err == nil {
		m.StorageDriver, m.CgroupDriver = info.Driver, info.CgroupDriver
	}
	return r
}

func readTrim(path string) string {
	b, _ := os.ReadFile(path)
	return strings.TrimSpace(string(b))
}

func loadavg() string {
	f := strings.Fields(readTrim("/proc/loadavg"))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

func (r *report) printHeader(w io.Writer) {
	m := r.Machine
	fmt.Fprintf(w, "dockbench run %s, %s\n", r.RunID, r.Started.Format(time.RFC3339))
	fmt.Fprintf(w, "command:  %s", strings.Join(r.Command, " "))
	for _, k := range sortedKeys(r.Env) {
		fmt.Fprintf(w, " %s=%s", k, r.Env[k])
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "machine:  nproc %d, %s, %s RAM, kernel %s, load average %s\n", m.NProc, m.CPU, m.MemTotal, m.Kernel, m.LoadAvgStart)
	fmt.Fprintf(w, "docker:   Engine %s (API %s), storage %s, cgroup driver %s; %s\n", m.DockerVersion, m.DockerAPI, m.StorageDriver, m.CgroupDriver, m.Go)
	fmt.Fprintf(w, "mode:     quick=%t swarm=%t", r.Settings.Quick, r.Settings.Swarm)
	if r.Baseline != "" {
		fmt.Fprintf(w, " baseline=%s", r.Baseline)
	}
	fmt.Fprint(w, "\n\n")
}

func (r *report) add(f figure) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Figures = append(r.Figures, f)
}

func (r *report) value(section, name string, v float64, unit string) {
	r.add(figure{Section: section, Name: name, Value: &v, Unit: unit})
}

// count records a number with what it is out of or made of beside it.
func (r *report) count(section, name string, v float64, unit, detail string) {
	r.add(figure{Section: section, Name: name, Value: &v, Unit: unit, Detail: detail})
}

func (r *report) duration(section, name string, d time.Duration) {
	r.value(section, name, ms(d), "ms")
}

func (r *report) na(section, name, why string) {
	r.add(figure{Section: section, Name: name, NA: why})
}

// latencies records p50 and p90 (nearest rank) of samples, plus min and max
// so that a p90 over few samples can be read for what it is.
func (r *report) latencies(section, name string, samples []time.Duration) {
	if len(samples) == 0 {
		r.na(section, name, "no samples")
		return
	}
	sorted := append([]time.Duration(nil), samples...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	raw := make([]float64, len(samples))
	for i, s := range samples {
		raw[i] = ms(s)
	}
	p := func(q float64) float64 {
		i := int(math.Ceil(q*float64(len(sorted)))) - 1
		return ms(sorted[max(i, 0)])
	}
	p50, p90, hi := p(0.5), p(0.9), ms(sorted[len(sorted)-1])
	r.add(figure{Section: section, Name: name + " p50", Value: &p50, Unit: "ms", Samples: raw})
	r.add(figure{Section: section, Name: name + " p90", Value: &p90, Unit: "ms"})
	r.add(figure{Section: section, Name: name + fmt.Sprintf(" max of %d", len(samples)), Value: &hi, Unit: "ms"})
}

// ratio registers num / den, computed at the end of the run; g is its
// goal, nil for an informational ratio.
func (r *report) ratio(name, num, den string, g *goal) {
	q := ratio{Name: name, Num: num, Den: den, Goal: g}
	if g != nil {
		q.Target = g.String()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Ratios = append(r.Ratios, q)
}

// ratioToTarget registers num / target: an absolute goal (RSS at most
// 150 MiB) judged by the guard, which judges ratios, as num over its
// target at most 1. what names the target as the report prints it.
func (r *report) ratioToTarget(name, num string, target float64, what string, g *goal) {
	q := ratio{Name: name, Num: num, Den: "target " + what, DenValue: &target, Goal: g}
	if g != nil {
		q.Target = g.String()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Ratios = append(r.Ratios, q)
}

func (r *report) note(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

func (r *report) lookup(key string) *float64 {
	for _, f := range r.Figures {
		if f.key() == key {
			return f.Value
		}
	}
	return nil
}

// finish computes the ratios from the figures (a ratio whose parts were
// not both measured stays empty), judges those with a goal and stamps the
// end of the run.
func (r *report) finish() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.Ratios {
		n, d := r.lookup(r.Ratios[i].Num), r.Ratios[i].DenValue
		if d == nil {
			d = r.lookup(r.Ratios[i].Den)
		}
		if n != nil && d != nil && *d != 0 {
			v := *n / *d
			r.Ratios[i].Value = &v
		}
	}
	r.Guard = judgeRatios(r.Ratios)
	r.Machine.LoadAvgEnd = loadavg()
	r.Duration = time.Since(r.Started).Round(time.Second).String()
}

func (r *report) print(w io.Writer) {
	r.finish()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SECTION\tFIGURE\tVALUE")
	for _, f := range r.Figures {
		v := "n/a (" + f.NA + ")"
		if f.Value != nil {
			v = formatValue(*f.Value, f.Unit)
			if f.Detail != "" {
				v += " (" + f.Detail + ")"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", f.Section, f.Name, v)
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RATIO\tVALUE\tTARGET")
	for _, q := range r.Ratios {
		v := "n/a"
		if q.Value != nil {
			v = fmt.Sprintf("%.2f×", *q.Value)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", q.Name, v, q.Target)
	}
	tw.Flush()
	fmt.Fprintln(w)
	printGuard(w, r.Guard, r.Settings.Guard)
	if len(r.Notes) > 0 {
		fmt.Fprintln(w, "\nnotes:")
		for _, n := range r.Notes {
			fmt.Fprintln(w, "  -", n)
		}
	}
	fmt.Fprintf(w, "\nrun took %s; load average at start %s, at end %s (figures from a busy machine are not results)\n",
		r.Duration, r.Machine.LoadAvgStart, r.Machine.LoadAvgEnd)
}

func (r *report) writeJSON(path string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func formatValue(v float64, unit string) string {
	switch {
	case unit == "ms" && v >= 10000:
		return fmt.Sprintf("%.2f s", v/1000)
	case unit == "ms":
		return fmt.Sprintf("%.0f ms", v)
	case unit == "µs" && v >= 1000:
		return fmt.Sprintf("%.2f ms", v/1000)
	case unit == "µs":
		return fmt.Sprintf("%.0f µs", v)
	case v >= 1000 || (v == math.Trunc(v) && math.Abs(v) < 1e15):
		// Counts: 12345 requests, not 1.23e+04.
		return strings.TrimSpace(fmt.Sprintf("%.0f %s", v, unit))
	}
	return strings.TrimSpace(fmt.Sprintf("%.3g %s", v, unit))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func sortedKeys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
