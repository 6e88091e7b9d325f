package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/dockctl/dockctl/store"
)

// manifestsSourceObject is what -o json|yaml prints of one directory.
type manifestsSourceObject struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Status store.SourceStatus `json:"status"`
}

func getManifests(cmd *cobra.Command, g *globalOptions, o *getOptions, name string) error {
	st, err := g.readStore()
	if err != nil {
		return err
	}
	sources, err := st.ReadSourceStatus()
	if err != nil {
		return err
	}
	t := &table{kind: "manifestssource", columns: []string{"PATH", "READY", "REASON", "FILES", "OBJECTS", "LAST SYNC", "MESSAGE"}}
	now := time.Now()
	for _, s := range sources {
		if name != "" && s.Path != name {
			continue
		}
		obj := &manifestsSourceObject{APIVersion: "dockctl.io/v1", Kind: "ManifestsSource", Status: s}
		obj.Metadata.Name = s.Path
		msg := s.Message
		if msg == "" {
			msg = "<none>"
		}
		t.rows = append(t.rows, row{name: s.Path,
			cells:  []string{s.Path, map[bool]string{true: "True", false: "False"}[s.Ready], s.Reason, fmt.Sprint(s.Files), fmt.Sprint(s.Objects), age(now.Sub(s.LastSync)), msg},
			object: func() (any, error) { return obj, nil }})
	}
	if name != "" && len(t.rows) == 0 {
		return fmt.Errorf("manifests %q not found: the controller of instance %q does not apply it (dockctl controller --manifests %s)", name, g.instance, name)
	}
	if len(t.rows) == 0 && o.printer.human() && len(o.names) == 0 {
		if !o.watching() && !o.combined {
			fmt.Fprintf(cmd.ErrOrStderr(), "No manifests directories in instance %q (dockctl controller --manifests DIR applies one).\n", g.instance)
		}
		return nil
	}
	return o.printer.print(cmd.OutOrStdout(), t, name != "", false)
}
