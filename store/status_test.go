package store

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dockctl/dockctl/manifests"
)

func TestStatus(t *testing.T) {
	s := openTemp(t)
	path := filepath.Join(s.Dir(), "status", "web.json")

	st, err := s.ReadStatus("", "web")
	if err != nil || !reflect.DeepEqual(st, &Status{}) {
		t.Fatalf("ReadStatus of a never-written status = %+v, %v; want zero", st, err)
	}

	ts := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	first := &Status{
		ObservedGeneration: 3,
		Conditions: []manifests.DeploymentCondition{{
			Type: manifests.ConditionAvailable, Status: "True", Reason: "MinimumReplicasAvailable",
			LastUpdateTime: ts, LastTransitionTime: ts,
		}},
		Message: "ok",
		Extra:   map[string]json.RawMessage{"backoff": json.RawMessage(`{"restarts":2}`)},
	}
	if err := s.WriteStatus("", "web", first); err != nil {
		t.Fatal(err)
	}
	got, err := s.ReadStatus("", "web")
	if err != nil {
		t.Fatal(err)
	}
	if got.UpdatedAt.IsZero() {
		t.Error("WriteStatus did not set UpdatedAt")
	}
	if !SameStatus(got, first) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, first)
	}

	tests := []struct {
		name    string
		st      Status
		written bool
	}{
		{"identical content is not rewritten", *first, false},
		{"only UpdatedAt differs: not rewritten", func() Status { c := *first; c.UpdatedAt = ts.Add(time.Hour); return c }(), false},
		{"new observed generation is written", func() Status { c := *first; c.ObservedGeneration = 4; return c }(), true},
		{"extra blob change is written", func() Status {
			c := *first
			c.ObservedGeneration = 4
			c.Extra = map[string]json.RawMessage{"backoff": json.RawMessage(`{"restarts":3}`)}
			return c
		}(), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, _ := os.Stat(path)
			if err := s.WriteStatus("", "web", &tt.st); err != nil {
				t.Fatal(err)
			}
			after, _ := os.Stat(path)
			// Every write renames a temporary file created while the old
			// one still exists, hence a different inode.
			if written := !os.SameFile(before, after); written != tt.written {
				t.Errorf("written = %v, want %v", written, tt.written)
			}
		})
	}

	// A corrupt status is reported on read and replaced on write.
	if err := os.WriteFile(path, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReadStatus("", "web"); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "state file status/web.json") {
		t.Errorf("ReadStatus of a corrupt file: %v", err)
	}
	if err := s.WriteStatus("", "web", first); err != nil {
		t.Fatalf("WriteStatus over a corrupt file: %v", err)
	}
	if got, err := s.ReadStatus("", "web"); err != nil || got.ObservedGeneration != 3 {
		t.Errorf("after replacing a corrupt status: %+v, %v", got, err)
	}

	if err := s.WriteStatus("", "../x", first); err == nil {
		t.Error("WriteStatus accepted a path as name")
	}
	if tf := tempFiles(t, s.Dir()); len(tf) > 0 {
		t.Errorf("temporary files left: %v", tf)
	}
}
