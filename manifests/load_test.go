package manifests

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A directory is read with its subdirectories, unless TopLevelOnly
// (kubectl's -f DIR without -R): then its own files only.
func TestLoadAllRecursesUnlessTopLevelOnly(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "sub", "deeper"), 0o755); err != nil {
		t.Fatal(err)
	}
	for p, name := range map[string]string{"a.yaml": "top", "sub/b.yaml": "nested", "sub/deeper/c.yml": "deepest"} {
		doc := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + "}\n"
		if err := os.WriteFile(filepath.Join(dir, p), []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		topOnly bool
		want    []string
	}{
		{false, []string{"deepest", "nested", "top"}},
		{true, []string{"top"}},
	} {
		docs, _, err := LoadAll([]string{dir}, nil, LoadOptions{TopLevelOnly: tt.topOnly})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, d := range docs {
			got = append(got, d.ConfigMap.Metadata.Name)
		}
		slices.Sort(got)
		if !slices.Equal(got, tt.want) {
			t.Errorf("TopLevelOnly %v: read %v, want %v", tt.topOnly, got, tt.want)
		}
	}
}
