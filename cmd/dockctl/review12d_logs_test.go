package main

import (
	"bytes"
	"context"
	"fmt"
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

// kubectl logs -f deployment/web follows one pod of the deployment (the
// first, unless --all-pods), and --max-log-requests limits only the
// requests of a selector or of several containers. dockctl prints every
// replica of a deployment (its [pod/NAME/CONTAINER] prefix stands for
// kubectl's --all-pods), and issue 12's --max-log-requests now counts
// them: `dockctl logs -f deployment/web` of a deployment of six replicas,
// which followed them all before, fails with "you are attempting to
// follow 6 log streams, but maximum allowed concurrency is 5" — for a
// command kubectl never refuses.
func TestReview12dLogsFollowOfADeploymentOfSixReplicas(t *testing.T) {
	api := startDockerAPI(t)
	t.Setenv("DOCKER_HOST", api.host)
	base := []string{"--state-dir", t.TempDir(), "--instance", "t"}
	for i := range 6 {
		api.add(fmt.Sprintf("t_web-abc-%d", i), "running", map[string]string{dockerx.LabelInstance: "t", dockerx.LabelDeployment: "web", dockerx.LabelTemplateHash: "abc"}, fmt.Sprintf("line of %d", i))
	}
	out, errOut, err := run(t, "", append(base, "logs", "deployment/web", "-f")...)
	if err != nil {
		t.Fatalf("logs -f deployment/web of six replicas: %v (stderr %q)", err, errOut)
	}
	if n := strings.Count(out, "line of "); n != 6 {
		t.Errorf("printed %d replicas' lines, want 6:\n%s", n, out)
	}
}
