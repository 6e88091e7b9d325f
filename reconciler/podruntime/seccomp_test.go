package podruntime

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Only a regular file holding a JSON object is a profile: a directory, a
// file that is not JSON, or JSON that is not an object is refused, and the
// error never echoes the file's content. A link is followed (the gate
// judged the path it resolves to).
func TestReadProfileRefusesWhatIsNotAProfile(t *testing.T) {
	root := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(root, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const profile = `{"defaultAction":"SCMP_ACT_ALLOW"}`
	good := write("good.json", profile)
	link := filepath.Join(root, "link.json")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadSeccompProfile(link); err != nil || got != profile {
		t.Errorf("ReadSeccompProfile(link to a profile) = %q, %v", got, err)
	}
	if err := os.Mkdir(filepath.Join(root, "dir.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	big := write("big.json", `{"a":"`+strings.Repeat("x", MaxSeccompProfile)+`"}`)
	for _, tt := range []struct{ path, want string }{
		{filepath.Join(root, "dir.json"), "not a regular file"},
		{write("word.json", "unconfined"), "not a JSON object"},
		{write("builtin.json", "builtin\n"), "not a JSON object"},
		{write("array.json", `[{"defaultAction":"SCMP_ACT_ALLOW"}]`), "not a JSON object"},
		{write("null.json", "null"), "not a JSON object"},
		{write("blank.json", " \n"), "is empty"},
		{big, "larger than"},
	} {
		got, err := ReadSeccompProfile(tt.path)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ReadSeccompProfile(%s) = %q, %v; want an error %q", filepath.Base(tt.path), got, err, tt.want)
			continue
		}
		if strings.Contains(err.Error(), "unconfined") || strings.Contains(err.Error(), "builtin\n") {
			t.Errorf("the error echoes the file's content: %v", err)
		}
	}
}
