package dockerx

import "testing"

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
			i, d, h, o, ok := ParseContainerName(name)
			if !ok || i != tt.instance || d != tt.deployment || h != tt.hash || o != tt.ordinal {
				t.Errorf("ParseContainerName(%q) = %q %q %q %d %v", name, i, d, h, o, ok)
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
		if _, _, _, _, ok := ParseContainerName(name); ok {
			t.Errorf("ParseContainerName(%q) ok, want rejection", name)
		}
	}
}
