package main

import "testing"

// pr is the printer of -o output.
func pr(t *testing.T, output string) *printer {
	t.Helper()
	p, err := newPrinter(printFlags{output: output})
	if err != nil {
		t.Fatal(err)
	}
	return p
}
