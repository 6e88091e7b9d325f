package main

import (
	"context"
	"fmt"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dockctl/dockctl/dockerx"
)

// commit is set at build time with -ldflags "-X main.commit=…" (make
// build, make release), as version is.
var commit = ""

// buildVersion is what `dockctl version` says of this binary.
type buildVersion struct {
	version, commit string
	// cgo is true for a binary built with CGO_ENABLED=1: dynamically
	// linked, it cannot run in dockctl's FROM-scratch helper and
	// controller images (docs/design.md §8).
	cgo bool
}

// pseudoRevision is the commit a Go pseudo-version ends with
// (v0.0.0-20261206213000-0123456789ab), which a `go install …@<commit>`
// build reports as its module version.
var pseudoRevision = regexp.MustCompile(`-(?:0\.)?\d{14}-([0-9a-f]{12})(?:\+incompatible)?$`)

// versionOf reads what the linker stamped (make build, make release) and,
// for what it did not, the build information the go command records: a
// `go install github.com/dockctl/dockctl/cmd/dockctl@v1.2.3` build has
// the module version, a build from a clone the VCS revision. A build
// tag is never needed for either.
func versionOf(stamped, stampedCommit string, info *debug.BuildInfo) buildVersion {
	v := buildVersion{version: stamped, commit: stampedCommit}
	if info == nil {
		return v
	}
	var revision string
	var modified bool
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		case "CGO_ENABLED":
			v.cgo = s.Value == "1"
		}
	}
	if v.version == "dev" || v.version == "" {
		if mv := info.Main.Version; mv != "" && mv != "(devel)" {
			v.version = mv
		}
	}
	if v.commit == "" {
		switch {
		case revision != "":
			v.commit = revision
			if len(v.commit) > 12 {
				v.commit = v.commit[:12]
			}
			if modified {
				v.commit += "-dirty"
			}
		default:
			if m := pseudoRevision.FindStringSubmatch(info.Main.Version); m != nil {
				v.commit = m[1]
			}
		}
	}
	return v
}

// currentVersion is this binary's buildVersion.
func currentVersion() buildVersion {
	info, _ := debug.ReadBuildInfo()
	return versionOf(version, commit, info)
}

// line is version's first line: the version, the commit when known, the
// Go version and the platform.
func (v buildVersion) line() string {
	var parts []string
	if v.commit != "" {
		parts = append(parts, "commit "+v.commit)
	}
	parts = append(parts, runtime.Version(), runtime.GOOS+"/"+runtime.GOARCH)
	return fmt.Sprintf("dockctl %s (%s)", v.version, strings.Join(parts, ", "))
}

func newVersionCommand(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print dockctl's version, commit and Go version, and the Docker Engine's",
		Example: `  # Print dockctl's version and the Docker Engine's
  dockctl version`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("extra arguments: %v", args) // kubectl's words
			}
			out := cmd.OutOrStdout()
			v := currentVersion()
			fmt.Fprintln(out, v.line())
			if v.cgo {
				// On stderr: a warning, not what scripts parse.
				fmt.Fprintln(cmd.ErrOrStderr(), "warning: built with CGO_ENABLED=1 (dynamically linked): it cannot run as dockctl's helper and controller images; build it with CGO_ENABLED=0")
			}
			cli, err := dockerx.NewClient()
			if err != nil {
				fmt.Fprintf(out, "docker: %v\n", err)
				return nil
			}
			defer cli.Close()
			ctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Second)
			defer cancel()
			v2, err := cli.ServerVersion(ctx)
			if err != nil {
				fmt.Fprintf(out, "docker engine: unreachable (%v)\n", err)
				return nil
			}
			fmt.Fprintf(out, "docker engine: %s\n", v2)
			return nil
		},
	}
}
