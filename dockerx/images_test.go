package dockerx

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/dockctl/dockctl/manifests"
)

func TestEnsureImage(t *testing.T) {
	const okStream = `{"status":"Pulling from library/x"}` + "\n" + `{"status":"Digest: sha256:1"}` + "\n"
	const errStream = `{"status":"Pulling"}` + "\n" + `{"errorDetail":{"message":"manifest unknown"},"error":"manifest unknown"}` + "\n"
	tests := []struct {
		name      string
		policy    string
		present   bool
		pullErr   error
		stream    string
		wantPulls int
		wantIs    []error
		wantMsg   string
	}{
		{name: "never present", policy: manifests.PullNever, present: true},
		{name: "never absent", policy: manifests.PullNever, wantIs: []error{ErrNotFound},
			wantMsg: `image "x:1" not present and imagePullPolicy is Never`},
		{name: "ifnotpresent present", policy: manifests.PullIfNotPresent, present: true},
		{name: "empty policy means ifnotpresent", policy: "", present: true},
		{name: "ifnotpresent absent pulls", policy: manifests.PullIfNotPresent, stream: okStream, wantPulls: 1},
		{name: "ifnotpresent pull error in stream", policy: manifests.PullIfNotPresent, stream: errStream, wantPulls: 1,
			wantIs: []error{ErrImagePull}, wantMsg: `pull image "x:1": manifest unknown`},
		{name: "always pulls", policy: manifests.PullAlways, present: true, stream: okStream, wantPulls: 1},
		{name: "always offline but present", policy: manifests.PullAlways, present: true,
			pullErr: errors.New("dial tcp: lookup registry-1.docker.io: no such host"), wantPulls: 1},
		{name: "always offline and absent", policy: manifests.PullAlways, pullErr: errors.New("no such host"), wantPulls: 1,
			wantIs: []error{ErrImagePull}},
		{name: "unknown policy", policy: "Sometimes", wantMsg: `unknown imagePullPolicy "Sometimes"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeAPI{inspectImg: map[string]bool{"x:1": tt.present}, pullErr: tt.pullErr, pullStream: tt.stream}
			err := newFakeClient(f).EnsureImage(context.Background(), "x:1", tt.policy, nil)
			wantErr := len(tt.wantIs) > 0 || tt.wantMsg != ""
			if (err != nil) != wantErr {
				t.Fatalf("EnsureImage = %v, want error: %v", err, wantErr)
			}
			for _, w := range tt.wantIs {
				if !errors.Is(err, w) {
					t.Errorf("errors.Is(%v, %v) = false", err, w)
				}
			}
			if tt.wantMsg != "" && !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("error %q does not contain %q", err, tt.wantMsg)
			}
			if len(f.pulls) != tt.wantPulls {
				t.Errorf("pulls %v, want %d", f.pulls, tt.wantPulls)
			}
			if tt.wantPulls > 0 && !reflect.DeepEqual(f.pulls[0], "x:1") {
				t.Errorf("pulled %v", f.pulls)
			}
		})
	}
}
