package main

import (
	"fmt"
	"io"
)

// warnIgnored prints the one warning line about the fields of the bundle
// that have no meaning on one host and are ignored: never silently, so a
// user knows the cluster's scheduling or identity settings do nothing here,
// and never an error, so that real manifests apply.
func warnIgnored(w io.Writer, b *bundle) {
	if b.ignored != "" {
		fmt.Fprintf(w, "Warning: %s\n", b.ignored)
	}
}
