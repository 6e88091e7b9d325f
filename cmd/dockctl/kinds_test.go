package main

import (
	"strings"
	"testing"
)

// The help of each verb names every kind the kind table gives it, so a
// kind added to the table is in the help at once (StatefulSets, Jobs,
// Ingresses… were missing from texts written by hand).
func TestVerbHelpNamesEveryKindOfTheTable(t *testing.T) {
	manifestKinds := pluralsOf(kindNames(func(k *kindInfo) bool { return k.manifest != "" }))
	for _, tt := range []struct {
		verb  string
		kinds []string
	}{
		{"get", pluralsOf(kindNames(func(k *kindInfo) bool { return k.get != nil }))},
		{"describe", descKinds},
		{"delete", deleteKindWords},
		{"edit", storeKindWords},
		{"label", storeKindWords},
		{"annotate", storeKindWords},
		{"patch", storeKindWords},
		{"apply", manifestKinds},
	} {
		t.Run(tt.verb, func(t *testing.T) {
			out, _, err := run(t, "", tt.verb, "--help")
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"statefulsets", "jobs", "ingresses", "httproutes"} {
				if !strings.Contains(strings.Join(tt.kinds, ","), want) {
					t.Errorf("the table gives %s no %s", tt.verb, want)
				}
			}
			for _, k := range tt.kinds {
				if !strings.Contains(out, " "+k+",") && !strings.Contains(out, " "+k+".") {
					t.Errorf("%s --help does not name %s:\n%s", tt.verb, k, out)
				}
			}
		})
	}
}

// run's help says what each --restart makes: a deployment for Always, a
// pod of that restart policy otherwise.
func TestRunHelpSaysWhatEachRestartPolicyMakes(t *testing.T) {
	out, _, err := run(t, "", "run", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--restart=Always, the default", "deployment of one replica", "--restart=Never: run once", "OnFailure: restarted until it succeeds"} {
		if !strings.Contains(out, want) {
			t.Errorf("run --help lacks %q", want)
		}
	}
	for _, tt := range []struct{ restart, kind string }{{"Always", "kind: Deployment"}, {"Never", "kind: Pod"}, {"OnFailure", "kind: Pod"}} {
		y, errOut, err := run(t, "", "run", "x", "--image=busybox", "--restart="+tt.restart, "--dry-run=client", "-o", "yaml")
		if err != nil || !strings.Contains(y, tt.kind) {
			t.Errorf("run --restart=%s: %v %s\n%s\nwant %s", tt.restart, err, errOut, y, tt.kind)
		}
		if tt.kind == "kind: Pod" && !strings.Contains(y, "restartPolicy: "+tt.restart) {
			t.Errorf("run --restart=%s: no restartPolicy %s:\n%s", tt.restart, tt.restart, y)
		}
	}
}
