package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Every command, subcommands and hidden ones included, has an Example in
// its --help.
func TestEveryCommandHasExample(t *testing.T) {
	var walk func(*cobra.Command)
	n := 0
	walk = func(c *cobra.Command) {
		n++
		if strings.TrimSpace(c.Example) == "" {
			t.Errorf("%q has no Example", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCommand())
	if n < 20 {
		t.Fatalf("walked %d commands only", n)
	}
}
