package main

import (
	"fmt"
	"io"
)

// warnIgnored prints the one warning line about the fields of the bundle
// that have no meaning on one host and are ignored (issue 11, item 6):
// never silently, never an error.
func warnIgnored(w io.Writer, b *bundle) {
	if b.ignored != "" {
		fmt.Fprintf(w, "Warning: %s\n", b.ignored)
	}
}
