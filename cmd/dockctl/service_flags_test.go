package main

import (
	"strings"
	"testing"
)

// --service-address (default 0.0.0.0) is checked before the controller
// starts.
func TestServiceAddressFlag(t *testing.T) {
	tests := []struct {
		args    []string
		address string
		wantErr string
	}{
		{args: nil, address: "0.0.0.0"},
		{args: []string{"--service-address=127.0.0.1"}, address: "127.0.0.1"},
		{args: []string{"--service-address=::1"}, address: "::1"},
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
			if err != nil || o.serviceAddress != tt.address {
				t.Fatalf("address %q (%v), want %q", o.serviceAddress, err, tt.address)
			}
		})
	}
}
