//go:build cgo

package main

// Built with cgo, the program links the C library dynamically and has a
// program interpreter: what CheckHelperBinary must refuse.

// int helperbin_answer(void) { return 42; }
import "C"

var _ = C.helperbin_answer()
