package main

import (
	"strings"
	"testing"

	"github.com/dockctl/dockctl/dockerx"
)

// kubectl wait visits its objects with the resource builder's
// ContinueOnError: an object whose condition is not met (--timeout=0), or
// that is not found, is an error collected while the others are still
// judged, each met one printed ("pod/B condition met"), and the errors
// are reported together at the end (exit 1). dockctl's wait stops at the
// first failure: the pods after it are never judged nor reported, and
// the errors of the others are lost, so a script cannot tell which of its
// pods were ready.
func TestReview12fWaitSeveralReportsEach(t *testing.T) {
	api, base, _ := waitInstance(t)
	api.addContainer("t1_web-abc-0", "t1", "web", map[string]string{"app": "web"}) // running: Ready
	api.add("t1_web-abc-1", "created", map[string]string{dockerx.LabelInstance: "t1", dockerx.LabelDeployment: "web",
		dockerx.LabelTemplateHash: "abc", "app": "web"}) // not Ready
	for _, tt := range []struct {
		args     []string
		wantOut  string
		wantErrs []string
	}{
		{[]string{"pod/web-abc-1", "pod/web-abc-0"}, "pod/web-abc-0 condition met\n",
			[]string{"condition not met for pods/web-abc-1"}},
		{[]string{"pod/nope", "pod/web-abc-0"}, "pod/web-abc-0 condition met\n",
			[]string{`pods "nope" not found`}},
		{[]string{"pod/nope", "pod/web-abc-1", "pod/web-abc-0"}, "pod/web-abc-0 condition met\n",
			[]string{`pods "nope" not found`, "condition not met for pods/web-abc-1"}},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			args := append([]string{"wait", "--for=condition=Ready", "--timeout=0"}, tt.args...)
			out, errOut, err := run(t, "", append(base, args...)...)
			if out != tt.wantOut {
				t.Errorf("stdout %q, want %q (kubectl judges every object)", out, tt.wantOut)
			}
			if err == nil {
				t.Fatalf("no error, want %q", tt.wantErrs)
			}
			for _, want := range tt.wantErrs {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q (stderr %q) does not say %q", err, errOut, want)
				}
			}
		})
	}
}
