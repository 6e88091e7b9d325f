package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// realworldDir holds the real-world corpus (docs/manifests.md,
// "Real-world manifests"): bundles in the shapes
// public projects ship, written for dockctl's tests (none is copied).
const realworldDir = "../../manifests/testdata/realworld"

// Why a bundle of the corpus is refused: each
// names the feature whose absence refuses it and who builds it. A bundle's
// refusal is expected only for the reasons its row lists; an error line
// that no listed reason explains fails the test, and so does a listed
// reason that no longer refuses anything (the row must then move on).
const (
	needKinds    = "ConfigMap, Secret and PersistentVolumeClaim objects (item 1: kinds)"
	needFiles    = "configMap, secret, projected and downwardAPI volumes (item 3: files)"
	needClaims   = "persistentVolumeClaim volumes (item 4: pvc)"
	needIgnored  = "fields with no meaning on one host, accepted with a warning (item 6: sec)"
	needGPU      = "resources.limits[nvidia.com/gpu] as a device request (item 5: sec)"
	needGRPC     = "grpc probes (item 5: probes)"
	needPullAuth = "imagePullSecrets (item 7: reg)"
)

// realworld is the corpus and what `apply --dry-run` does with each bundle
// today. A row without refusals applies: every object of a kind dockctl
// stores is reported created, every object of a kind it skips is warned
// about, nothing else is printed.
var realworld = []struct {
	bundle  string   // a file or a directory of manifests/testdata/realworld
	refuses []string // the reasons it is refused, in the order above; none: it applies
}{
	{"env-from-downward.yaml", nil},
	{"gpu-inference.yaml", nil},
	{"grpc-greeter.yaml", nil},
	{"guestbook.yaml", nil},
	{"helm-podinfo", nil},
	{"homelab-bookmarks.yaml", nil},
	{"homelab-dns.yaml", nil},
	{"host-aliases.yaml", nil},
	{"image-pull-secrets.yaml", nil},
	{"kompose.yaml", nil},
	{"kubectl-export.json", nil},
	{"kubectl-export.yaml", nil},
	{"kustomize-overlay.yaml", nil},
	{"lifecycle-hooks.yaml", nil},
	{"monitoring.yaml", nil},
	{"nginx-hardened.yaml", nil},
	{"postgres.yaml", nil},
	{"projected-volume.yaml", nil},
	{"redis-configfile.yaml", nil},
	{"scheduling-fields.yaml", nil},
	{"shop.yaml", nil},
	{"sidecars.yaml", nil},
	{"startup-probe-jvm.yaml", nil},
	{"team-namespaces.yaml", nil},
	{"tls-proxy.yaml", nil},
	{"wordpress-mysql.yaml", nil},
}

// ignoredFields are the pod and container fields with no meaning on one host that
// the corpus uses.
var ignoredFields = regexp.MustCompile(`\.(serviceAccountName|automountServiceAccountToken|nodeSelector|affinity|tolerations|` +
	`topologySpreadConstraints|schedulerName|priorityClassName|enableServiceLinks|` +
	`terminationMessagePath|terminationMessagePolicy): unsupported by dockctl$`)

// refusalReason names the reason (one of the need* constants) an error
// line of a dry run stands for, or "" for one no reason explains.
func refusalReason(t *testing.T, line string) string {
	switch {
	case regexp.MustCompile(`unsupported kind "(ConfigMap|Secret|PersistentVolumeClaim)"`).MatchString(line):
		return needKinds
	case ignoredFields.MatchString(line):
		return needIgnored
	case strings.Contains(line, `unsupported resource "nvidia.com/gpu"`):
		return needGPU
	case strings.HasSuffix(line, ".imagePullSecrets: unsupported by dockctl"):
		return needPullAuth
	case regexp.MustCompile(`Probe: exactly one of exec, httpGet or tcpSocket is required$`).MatchString(line):
		return needGRPC
	case regexp.MustCompile(`\.volumes\[\d+\]: exactly one of hostPath.* is required$`).MatchString(line):
		// The message names no source: the volume's own lines do.
		switch src := volumeSource(t, line); src {
		case "persistentVolumeClaim":
			return needClaims
		case "configMap", "secret", "projected", "downwardAPI":
			return needFiles
		}
	}
	return ""
}

// volumeSource reads the source of the volume an error line points at
// (file:line of the volume's first key) from the file itself.
func volumeSource(t *testing.T, line string) string {
	t.Helper()
	m := regexp.MustCompile(`^(.+?):(\d+): `).FindStringSubmatch(line)
	if m == nil {
		return ""
	}
	n, _ := strconv.Atoi(m[2])
	b, err := os.ReadFile(m[1])
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	for i := n - 1; i < len(lines) && i < n+3; i++ {
		for _, src := range []string{"persistentVolumeClaim", "configMap", "secret", "projected", "downwardAPI", "hostPath", "emptyDir"} {
			if strings.HasPrefix(strings.TrimLeft(strings.TrimPrefix(strings.TrimSpace(lines[i]), "- "), " "), src+":") {
				return src
			}
		}
	}
	return ""
}

// TestRealworldCorpusDryRun applies every bundle of the corpus with
// `apply --dry-run -f`, as a user would, against an empty state directory,
// and holds each to its row of realworld.
func TestRealworldCorpusDryRun(t *testing.T) {
	entries, err := os.ReadDir(realworldDir)
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, r := range realworld {
		listed[r.bundle] = true
	}
	var names []string
	for _, e := range entries {
		if !listed[e.Name()] {
			t.Errorf("%s is in the corpus but not in the table", e.Name())
		}
		names = append(names, e.Name())
	}
	if len(realworld) < 20 || len(names) != len(realworld) {
		t.Fatalf("%d bundles in the table, %d in %s: the corpus holds at least 20, all listed", len(realworld), len(names), realworldDir)
	}
	applies := 0
	for _, r := range realworld {
		t.Run(r.bundle, func(t *testing.T) {
			path := filepath.Join(realworldDir, r.bundle)
			state := filepath.Join(t.TempDir(), "state")
			out, errOut, err := run(t, "", "--state-dir", state, "--instance", "corpus", "apply", "--dry-run", "-f", path)
			if len(r.refuses) == 0 {
				if err != nil {
					t.Fatalf("refused:\n%v", err)
				}
				checkDryRunOutput(t, path, out, errOut)
				applies++
				return
			}
			if err == nil {
				t.Fatalf("applies now (its table row still lists %q): make the row say so\n%s", r.refuses, out)
			}
			found := map[string]bool{}
			for _, line := range strings.Split(err.Error(), "\n") {
				why := refusalReason(t, line)
				if why == "" || !contains(r.refuses, why) {
					t.Errorf("refused for a reason its row does not list: %s", line)
					continue
				}
				found[why] = true
			}
			for _, why := range r.refuses {
				if !found[why] {
					t.Errorf("no longer refused for want of %s: take it off the row", why)
				}
			}
		})
	}
	t.Logf("%d of %d bundles apply with --dry-run", applies, len(realworld))
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// storedKinds are the kinds a dry run reports as created; skippedKinds
// those it warns about (manifests.IgnoredKinds).
var (
	storedKinds = map[string]string{"Namespace": "namespace", "Service": "service", "Deployment": "deployment",
		"ConfigMap": "configmap", "Secret": "secret", "PersistentVolumeClaim": "persistentvolumeclaim"}
	skippedKinds = map[string]bool{"ServiceAccount": true, "Role": true, "RoleBinding": true, "ClusterRole": true,
		"ClusterRoleBinding": true, "PodDisruptionBudget": true, "HorizontalPodAutoscaler": true}
)

// checkDryRunOutput checks that a dry run reported every stored object of
// the bundle as created (in any order: the bundle order is the store's) and
// warned about every skipped one, and nothing else.
func checkDryRunOutput(t *testing.T, path, out, errOut string) {
	t.Helper()
	var want, warned []string
	for _, o := range bundleObjects(t, path) {
		if k, ok := storedKinds[o.kind]; ok {
			want = append(want, fmt.Sprintf("%s/%s created (dry run)", k, o.name))
			continue
		}
		if !skippedKinds[o.kind] {
			t.Fatalf("%s %q: a kind the corpus should not hold", o.kind, o.name)
		}
		warned = append(warned, fmt.Sprintf("skipped %s %q", o.kind, o.name))
	}
	got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("dry run printed:\n%s\nwant (in some order):\n%s", out, strings.Join(want, "\n"))
	}
	var warnings []string
	for _, l := range strings.Split(strings.TrimSuffix(errOut, "\n"), "\n") {
		if l != "" {
			warnings = append(warnings, l)
		}
	}
	for _, w := range warned {
		n := 0
		for _, l := range warnings {
			if strings.Contains(l, w) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%d warnings about %s, want 1:\n%s", n, w, errOut)
		}
	}
	if len(warnings) < len(warned) {
		t.Errorf("%d warning lines for %d skipped objects:\n%s", len(warnings), len(warned), errOut)
	}
}

type bundleObject struct{ kind, name string }

// bundleObjects reads the kind and name of every object of a bundle file
// or directory (List items included), independently of dockctl's decoder.
func bundleObjects(t *testing.T, path string) []bundleObject {
	t.Helper()
	var files []string
	if fi, err := os.Stat(path); err != nil {
		t.Fatal(err)
	} else if fi.IsDir() {
		for _, ext := range []string{"*.yaml", "*.yml", "*.json"} {
			m, _ := filepath.Glob(filepath.Join(path, ext))
			files = append(files, m...)
		}
	} else {
		files = []string{path}
	}
	type object struct {
		Kind     string
		Metadata struct{ Name string }
		Items    []struct {
			Kind     string
			Metadata struct{ Name string }
		}
	}
	var out []bundleObject
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bufio.NewReader(bytes.NewReader(b)))
		for {
			var o object
			err := dec.Decode(&o)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if o.Kind == "List" {
				for _, it := range o.Items {
					out = append(out, bundleObject{it.Kind, it.Metadata.Name})
				}
				continue
			}
			if o.Kind != "" {
				out = append(out, bundleObject{o.Kind, o.Metadata.Name})
			}
		}
	}
	return out
}
