package main

import (
	"io"
	"strings"
	"testing"
)

// --subnet is parsed into the options, and a value the controller could
// never create a network with is refused before anything starts, naming
// the flag.
func TestControllerSubnetFlag(t *testing.T) {
	o := &controllerOptions{}
	cmd := newControllerCommandWith(&globalOptions{}, o)
	if f := cmd.Flags().Lookup("subnet"); f == nil || f.DefValue != "" {
		t.Fatalf("--subnet: %+v, want a flag with no default (a free subnet is chosen)", f)
	}
	if err := cmd.Flags().Parse([]string{"--subnet", "192.168.77.0/24"}); err != nil || o.subnet != "192.168.77.0/24" {
		t.Fatalf("--subnet 192.168.77.0/24: %v, parsed %q", err, o.subnet)
	}
	for _, tt := range []struct{ value, says string }{
		{"10.0.0.0/25", "too small"},
		{"10.0.0.1/24", "did you mean 10.0.0.0/24"},
		{"fd00::/64", "IPv4"},
		{"10.0.0.0", "CIDR"},
	} {
		cmd := newControllerCommand(&globalOptions{stateDir: t.TempDir()})
		cmd.SetArgs([]string{"--subnet", tt.value, "--metrics-addr", ""})
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "--subnet "+tt.value) || !strings.Contains(err.Error(), tt.says) {
			t.Fatalf("--subnet %s: err = %v, want a refusal naming the flag and saying %q", tt.value, err, tt.says)
		}
	}
}
