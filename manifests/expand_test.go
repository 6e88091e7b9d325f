package manifests

import "testing"

func TestExpandVars(t *testing.T) {
	vars := map[string]string{"A": "a", "EMPTY": "", "B": "$(A)"}
	lookup := func(n string) (string, bool) { v, ok := vars[n]; return v, ok }
	for _, tt := range []struct{ in, want string }{
		{"", ""},
		{"plain", "plain"},
		{"$(A)", "a"},
		{"x$(A)y$(A)z", "xayaz"},
		{"$(EMPTY)|", "|"},
		{"$(NOPE)", "$(NOPE)"},
		{"$$(A)", "$(A)"},
		{"$$$(A)", "$a"},
		{"$$", "$"},
		{"$", "$"},
		{"a$", "a$"},
		{"$x", "$x"},
		{"$(A", "$(A"},
		{"$()", "$()"},
		{"$(B)", "$(A)"}, // no recursion
		{"echo $(date) $HOME", "echo $(date) $HOME"},
	} {
		if got := ExpandVars(tt.in, lookup); got != tt.want {
			t.Errorf("ExpandVars(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
