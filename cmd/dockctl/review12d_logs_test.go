package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/dockctl/dockctl/dockerx"
)

// review12dLogs serves each container's log from a string.
type review12dLogs map[string]string

func (l review12dLogs) LogsWith(_ context.Context, id string, _ dockerx.LogsOptions) (io.ReadCloser, error) {
	return io.NopCloser(strings.NewReader(l[id])), nil
}

// kubectl copies a log line by line with bufio.Reader.ReadBytes('\n'),
// whatever a line's length (DefaultConsumeRequest), so a container that
// logs a long line (a JSON document, a stack trace on one line, a
// base64 blob) has it printed whole, and the lines after it too. printLogs
// reads each stream with a bufio.Scanner capped at 1 MiB: a longer line
// fails the stream with "bufio.Scanner: token too long", it and every
// line after it are lost, and without --ignore-errors the command fails
// (with -f, every other stream is stopped too).
func TestReview12dLogsLineLongerThanOneMiB(t *testing.T) {
	long := strings.Repeat("x", 2<<20)
	for _, follow := range []bool{false, true} {
		name := "snapshot"
		if follow {
			name = "follow"
		}
		t.Run(name, func(t *testing.T) {
			src := review12dLogs{"a": "before\n" + long + "\nafter\n", "b": "other\n"}
			streams := []logStream{{id: "a", name: "t1.web-0", prefix: "[pod/web-0/web] "}, {id: "b", name: "t1.web-1", prefix: "[pod/web-1/web] "}}
			o := &logsOptions{follow: follow, maxLogRequests: defaultMaxLogRequests}
			var out bytes.Buffer
			err := printLogs(t.Context(), src, streams, o, &out)
			if err != nil {
				t.Fatalf("printLogs: %v", err)
			}
			for _, want := range []string{"[pod/web-0/web] before\n", "[pod/web-0/web] " + long + "\n", "[pod/web-0/web] after\n", "[pod/web-1/web] other\n"} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("line %.40q… (%d bytes) missing from the output", want, len(want))
				}
			}
		})
	}
}
