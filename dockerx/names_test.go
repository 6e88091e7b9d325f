package dockerx

import (
	"strconv"
	"strings"
	"testing"
)

func TestContainerNameRoundTrip(t *testing.T) {
	tests := []struct {
		instance, deployment, hash string
		ordinal                    int
		want                       string
	}{
		{"default", "web", "5d8f7c9b6", 0, "default_web-5d8f7c9b6-0"},
		{"prod", "my-api-v2", "abc", 12, "prod_my-api-v2-abc-12"},
		{"i-1", "a", "h", 3, "i-1_a-h-3"},
	}
	for _, tt := range tests {
		got := ContainerName(tt.instance, tt.deployment, tt.hash, tt.ordinal)
		if got != tt.want {
			t.Errorf("ContainerName = %q, want %q", got, tt.want)
		}
		for _, name := range []string{got, "/" + got} {
			i, d, h, o, ok := parseContainerName(name)
			if !ok || i != tt.instance || d != tt.deployment || h != tt.hash || o != tt.ordinal {
				t.Errorf("parseContainerName(%q) = %q %q %q %d %v", name, i, d, h, o, ok)
			}
		}
	}
}

func TestParseContainerNameRejects(t *testing.T) {
	for _, name := range []string{
		"", "web-abc-0", "_web-abc-0", "default_web", "default_web-0",
		"default_-abc-0", "default_web--0", "default_web-abc-", "default_web-abc-x",
		"default_web-abc--1", "default_web-abc-01", "default_web-abc-+1", "a_b_c-d-0",
	} {
		if _, _, _, _, ok := parseContainerName(name); ok {
			t.Errorf("parseContainerName(%q) ok, want rejection", name)
		}
	}
}

// parseContainerName is the inverse of ContainerName; it exists to show
// that ContainerName is unambiguous. ok is false for a name
// ContainerName cannot have produced (a leading "/" as Docker reports names
// is accepted).
func parseContainerName(name string) (instance, deployment, hash string, ordinal int, ok bool) {
	name = strings.TrimPrefix(name, "/")
	instance, rest, found := strings.Cut(name, "_")
	if !found || instance == "" {
		return "", "", "", 0, false
	}
	i := strings.LastIndexByte(rest, '-')
	if i < 0 {
		return "", "", "", 0, false
	}
	ordStr := rest[i+1:]
	rest = rest[:i]
	ordinal, err := strconv.Atoi(ordStr)
	// Reject "+1", "-1" and "01": only the canonical form round-trips.
	if err != nil || ordinal < 0 || strconv.Itoa(ordinal) != ordStr {
		return "", "", "", 0, false
	}
	j := strings.LastIndexByte(rest, '-')
	if j <= 0 || j == len(rest)-1 {
		return "", "", "", 0, false
	}
	deployment, hash = rest[:j], rest[j+1:]
	if strings.Contains(deployment, "_") || strings.Contains(hash, "_") {
		return "", "", "", 0, false
	}
	return instance, deployment, hash, ordinal, true
}
