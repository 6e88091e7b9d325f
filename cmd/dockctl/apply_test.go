package main

import (
	"regexp"
	"strings"
	"testing"
)

// A command run without its files says which flag gives them, naming only
// flags the command has: kubectl's "must specify one of -f and -k" names
// its kustomize flag, which dockctl's apply and diff do not have, so a
// user following the message would get "unknown shorthand flag: 'k'".
func TestNoFilenameErrorNamesOnlyFlagsTheCommandHas(t *testing.T) {
	flagRE := regexp.MustCompile(`(?:^|[\s(])(--?[a-zA-Z][a-zA-Z-]*)`)
	for _, args := range [][]string{{"apply"}, {"diff"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			base := []string{"--state-dir", t.TempDir(), "--instance", "t1"}
			_, _, err := run(t, "", append(base, args...)...)
			if err == nil {
				t.Fatal("no error without -f")
			}
			msg := err.Error()
			if !strings.Contains(msg, "must specify") || !strings.Contains(msg, "-f") {
				t.Fatalf("error %q does not ask for -f", msg)
			}
			cmd, _, ferr := newRootCommand().Find(args)
			if ferr != nil {
				t.Fatal(ferr)
			}
			for _, m := range flagRE.FindAllStringSubmatch(msg, -1) {
				name := m[1]
				var found bool
				if long, ok := strings.CutPrefix(name, "--"); ok {
					found = cmd.Flags().Lookup(long) != nil
				} else {
					found = cmd.Flags().ShorthandLookup(strings.TrimPrefix(name, "-")) != nil
				}
				if !found {
					t.Errorf("error %q names %s, which %q does not have", msg, name, cmd.CommandPath())
				}
			}
		})
	}
}
