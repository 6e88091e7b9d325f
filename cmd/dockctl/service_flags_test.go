package main

import (
	"strings"
	"testing"
)

// --subnet (default: chosen) and --service-address (default 0.0.0.0) are
// checked before the controller starts.
func TestServiceNetworkFlags(t *testing.T) {
	tests := []struct {
		args            []string
		subnet, address string
		wantErr         string
	}{
		{args: nil, subnet: "", address: "0.0.0.0"},
		{args: []string{"--subnet=10.50.0.0/20", "--service-address=127.0.0.1"}, subnet: "10.50.0.0/20", address: "127.0.0.1"},
		{args: []string{"--service-address=::1"}, address: "::1"},
		{args: []string{"--subnet=10.50.0.1/20"}, wantErr: "--subnet"},
		{args: []string{"--subnet=10.50.0.0/30"}, wantErr: "--subnet"},
		{args: []string{"--service-address=localhost"}, wantErr: "--service-address"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			o := &controllerOptions{}
			cmd := newControllerCommandWith(&globalOptions{}, o)
			if err := cmd.ParseFlags(tt.args); err != nil {
				t.Fatal(err)
			}
			err := o.checkServiceNetwork()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("checkServiceNetwork: %v, want an error naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil || o.subnet != tt.subnet || o.serviceAddress != tt.address {
				t.Fatalf("subnet %q address %q (%v), want %q %q", o.subnet, o.serviceAddress, err, tt.subnet, tt.address)
			}
		})
	}
}
