package dataplane

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dockctl/dockctl/internal/testio"
)

// gatedWriter holds every Write until gate is closed, as a log driver
// that stopped reading a container's stdout; entered receives when a
// Write is waiting.
type gatedWriter struct {
	entered chan struct{}
	gate    chan struct{}
	once    sync.Once
	out     testio.Buffer
}

func newGatedWriter() *gatedWriter {
	return &gatedWriter{entered: make(chan struct{}, 1), gate: make(chan struct{})}
}

func (w *gatedWriter) Write(p []byte) (int, error) {
	select {
	case w.entered <- struct{}{}:
	default:
	}
	<-w.gate
	return w.out.Write(p)
}

func (w *gatedWriter) open() { w.once.Do(func() { close(w.gate) }) }

func accessLines(n, from int) string {
	var b strings.Builder
	for i := from; i < from+n; i++ {
		fmt.Fprintf(&b, "line %04d\n", i)
	}
	return b.String()
}

func TestAccessLog(t *testing.T) {
	for _, tc := range []struct {
		name string
		// limit of pending bytes; 0: accessLogLimit
		limit int
		// lines written while the writer is stuck, then after Close
		stuck, afterClose int
		want              string
		wantLog           string
	}{
		{name: "lines written while the writer is stuck are all written by Close, in order",
			stuck: 100, want: accessLines(101, 0)},
		{name: "lines beyond the limit are dropped, counted in the gateway's log",
			limit: 3 * len("line 0000\n"), stuck: 5, want: accessLines(4, 0), wantLog: "lines=2"},
		{name: "a line after Close is written at once",
			stuck: 1, afterClose: 2, want: accessLines(4, 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newGatedWriter()
			var logged testio.Buffer
			l := newAccessLog(w, slog.New(slog.NewTextHandler(&logged, nil)))
			if tc.limit > 0 {
				l.limit = tc.limit
			}
			t.Cleanup(func() { w.open(); l.Close() })
			// The first line is taken by the writing goroutine, which
			// then waits in the writer: the next ones return at once
			// (else this test would not end) and wait in the buffer.
			l.Write([]byte(accessLines(1, 0)))
			<-w.entered
			for i := 1; i <= tc.stuck; i++ {
				if n, err := l.Write([]byte(accessLines(1, i))); n != len("line 0000\n") || err != nil {
					t.Fatalf("Write: %d, %v", n, err)
				}
			}
			w.open()
			l.Close()
			for i := 1 + tc.stuck; i <= tc.stuck+tc.afterClose; i++ {
				l.Write([]byte(accessLines(1, i)))
				if got, want := w.out.String(), accessLines(i+1, 0); got != want {
					t.Fatalf("after a Write following Close:\n%s\nwant\n%s", got, want)
				}
			}
			if got := w.out.String(); got != tc.want {
				t.Errorf("written:\n%s\nwant\n%s", got, tc.want)
			}
			if got := logged.String(); tc.wantLog != "" && !strings.Contains(got, tc.wantLog) || tc.wantLog == "" && got != "" {
				t.Errorf("gateway log %q, want it to say %q", got, tc.wantLog)
			}
		})
	}
}

// The access log line is the one slog's JSONHandler wrote, byte for byte:
// what reads the gateway's stdout parses it the same.
func TestAccessLineIsSlogs(t *testing.T) {
	// The lines of one second share its text (appendLogTime): times in
	// the same second, the next one, in other zones, and back.
	india := time.FixedZone("IST", 5*3600+30*60)
	at := time.Date(2026, 12, 7, 21, 27, 6, 202345000, time.UTC)
	times := []time.Time{at, at.Add(time.Microsecond), at.Add(-202345000), at.Add(797655000), at.Add(797655001),
		at.In(india), at.In(time.Local), at.Add(time.Nanosecond), time.Date(2026, 3, 29, 1, 59, 59, 999999999, time.FixedZone("", -(3*3600+7))),
		time.Date(12026, 1, 1, 0, 0, 0, 5, time.UTC), time.Now()}
	for _, tc := range []struct {
		name string
		e    accessEntry
	}{
		{"a plain request", accessEntry{method: "GET", host: "shop.example.com:8080", path: "/a?b=c", proto: "HTTP/1.1",
			status: 200, bytes: 20, duration: 312 * time.Microsecond, client: "127.0.0.1:45678",
			accessInfo: accessInfo{route: "default/web", backend: "default/web:80", upstream: "172.18.0.5:8080"}}},
		{"no route", accessEntry{method: "POST", host: "x", path: "/", proto: "HTTP/2.0", status: 404, client: "[::1]:1"}},
		{"escapes", accessEntry{method: "GET", host: "x", path: `/"q"\<a>&` + "\x01\x7f\t\n\r", proto: "HTTP/1.1",
			client: "c", accessInfo: accessInfo{route: "é ü \u2028\u2029 \xff end", backend: "日本", upstream: ""}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, now := range times {
				var want strings.Builder
				h := slog.NewJSONHandler(&want, nil)
				r := slog.NewRecord(now, slog.LevelInfo, "request", 0)
				e := tc.e
				r.AddAttrs(slog.String("method", e.method), slog.String("host", e.host), slog.String("path", e.path),
					slog.String("proto", e.proto), slog.Int("status", e.status), slog.Int64("bytes", e.bytes),
					slog.Int64("duration_us", e.duration.Microseconds()), slog.String("client", e.client),
					slog.String("route", e.route), slog.String("backend", e.backend), slog.String("upstream", e.upstream))
				if err := h.Handle(context.Background(), r); err != nil && now.Year() <= 9999 {
					t.Fatal(err)
				}
				if now.Year() > 9999 {
					// slog writes an error for such a year; the line keeps the time as
					// time formats it.
					if got := string(appendLogTime(nil, now)); got != now.Format(time.RFC3339Nano) {
						t.Errorf("time %s, want %s", got, now.Format(time.RFC3339Nano))
					}
					continue
				}
				if got := string(appendAccessLine(nil, now, &tc.e)); got != want.String() {
					t.Errorf("line\n%s\nslog's\n%s", got, want.String())
				}
			}
		})
	}
}

// The cached second of appendLogTime is shared by every writer: lines
// made at once in other seconds and zones (DST changes included) each get
// their own time, as time formats it.
func TestAccessLineTimeIsItsOwnWhenWritersInterleave(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		berlin = time.FixedZone("CET", 3600) // no zone database here
	}
	// 2026-03-29 01:00:00 UTC: Berlin goes from +01:00 to +02:00.
	dst := time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC)
	locs := []*time.Location{time.UTC, time.Local, berlin, time.FixedZone("", -(9*3600 + 30*60))}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				at := dst.Add(time.Duration(i%7-3)*time.Second + time.Duration(w*i)*time.Microsecond + time.Duration(i%3)).In(locs[(w+i)%len(locs)])
				if got, want := string(appendLogTime(nil, at)), at.Format(time.RFC3339Nano); got != want {
					t.Errorf("writer %d: %s, want %s", w, got, want)
					return
				}
			}
		}()
	}
	wg.Wait()
}
