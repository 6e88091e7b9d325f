package workload

import (
	"slices"
	"strings"
	"testing"
)

func TestGeneratedNamesAreStableAndFree(t *testing.T) {
	a := GenerateNames("web", 3, map[string]bool{})
	b := GenerateNames("web", 3, map[string]bool{})
	if !slices.Equal(a, b) {
		t.Fatalf("names differ between two calls: %q, %q", a, b)
	}
	for _, n := range a {
		if !strings.HasPrefix(n, "web-") || len(n) != len("web-")+SuffixLen || strings.ContainsAny(n[4:], "aeiou013") {
			t.Errorf("name %q is not web-xxxxx of the suffix alphabet", n)
		}
	}
	taken := map[string]bool{a[0]: true}
	c := GenerateNames("web", 1, taken)
	if c[0] == a[0] || c[0] != a[1] || !taken[c[0]] {
		t.Errorf("with %q taken got %q, want %q and it taken", a[0], c, a[1])
	}
}

func TestGeneratedNameIsADNSLabel(t *testing.T) {
	n := GenerateNames(strings.Repeat("x", 80), 1, map[string]bool{})[0]
	if len(n) != 63 {
		t.Errorf("len(%q) = %d, want 63", n, len(n))
	}
}
