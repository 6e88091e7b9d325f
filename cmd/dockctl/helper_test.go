package main

import (
	"net"
	"strconv"
	"strings"
	"testing"
)

// TestHelperCommand: `dockctl helper` hands its arguments, flags included,
// to dataplane.Main untouched and exits with its status; it is hidden.
func TestHelperCommand(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	tests := []struct {
		name     string
		args     []string
		wantExit int
		wantOut  string
	}{
		{"probe flags reach the helper", []string{"helper", "probe", "--spec", `{"kind":"tcp","address":"127.0.0.1","port":` + strconv.Itoa(port) + `,"timeoutMillis":20000}`}, 0, "success: connected"},
		{"root flags are the helper's too", []string{"helper", "--state-dir", "/nonexistent"}, 2, ""},
		{"no mode", []string{"helper"}, 2, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := run(t, "", tc.args...)
			if got := exitCode(err); got != tc.wantExit {
				t.Errorf("exit %d (%v), want %d", got, err, tc.wantExit)
			}
			if !strings.Contains(out, tc.wantOut) {
				t.Errorf("stdout %q, want %q", out, tc.wantOut)
			}
		})
	}
	help, _, err := run(t, "", "--help")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(help, "helper") {
		t.Errorf("the hidden helper command shows in --help:\n%s", help)
	}
}
