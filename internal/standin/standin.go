// Package standin makes stand-in images for the images a bundle names, so
// that real-world bundles (manifests/testdata/realworld) run end to end on a
// host that can pull nothing: for each image, a build context FROM scratch
// holding the test workload (cmd/workload) in stand-in mode, at /workload and
// at the path of every command the bundle runs in that image, and a
// description (Config) of the part it plays. The e2e tests and the
// benchmark build and tag them with the Docker client; this package only
// reads manifests and writes build contexts.
package standin

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/dockctl/dockctl/internal/standinapi"
	"github.com/dockctl/dockctl/manifests"
)

// Env and ConfigPath are the stand-in contract (internal/standinapi).
const (
	Env        = standinapi.Env
	ConfigPath = standinapi.ConfigPath
)

// Entrypoint is the stand-in binary's path and the image's entrypoint.
const Entrypoint = "/workload"

// searchPath is the PATH of a stand-in image: Docker's default, where a
// bare command name (redis-server) is looked up.
const searchPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Config describes the image a stand-in plays (see cmd/workload).
type Config = standinapi.Config

// Image is one stand-in image to build.
type Image struct {
	Config Config
	// Paths are the absolute paths, besides Entrypoint, where the bundle
	// expects an executable in the image (its commands, its exec probes'
	// and hooks'); the binary is copied to each.
	Paths []string
	// NonRoot: some container asks runAsNonRoot without a runAsUser, so
	// the image's user must not be root.
	NonRoot bool
}

// Ref is the image reference to tag the stand-in with.
func (i Image) Ref() string { return i.Config.Image }

// imageAcc is what a bundle's containers need of one image.
type imageAcc struct {
	ports   map[string]bool
	paths   map[string]bool
	init    [][]string
	nonRoot bool
}

// podSpecs are the pod templates of a document of a workload kind, and
// whether its pods run to completion (a Job's, a CronJob's, a Pod's
// under restartPolicy Never or OnFailure): the app containers of those
// play their part by exiting 0, as the init containers do.
func podSpecs(d *manifests.Document) (specs []*manifests.PodSpec, complete bool) {
	switch {
	case d.Deployment != nil:
		return []*manifests.PodSpec{&d.Deployment.Spec.Template.Spec}, false
	case d.StatefulSet != nil:
		return []*manifests.PodSpec{&d.StatefulSet.Spec.Template.Spec}, false
	case d.DaemonSet != nil:
		return []*manifests.PodSpec{&d.DaemonSet.Spec.Template.Spec}, false
	case d.ReplicaSet != nil:
		return []*manifests.PodSpec{&d.ReplicaSet.Spec.Template.Spec}, false
	case d.Job != nil:
		return []*manifests.PodSpec{&d.Job.Spec.Template.Spec}, true
	case d.CronJob != nil:
		return []*manifests.PodSpec{&d.CronJob.Spec.JobTemplate.Spec.Template.Spec}, true
	case d.Pod != nil:
		rp := d.Pod.Spec.RestartPolicy
		return []*manifests.PodSpec{&d.Pod.Spec}, rp == "Never" || rp == "OnFailure"
	}
	return nil, false
}

// ForBundle returns a stand-in per image the pod templates of the
// bundle's workloads name, in reference order.
func ForBundle(docs []*manifests.Document) []Image {
	byRef := map[string]*imageAcc{}
	get := func(ref string) *imageAcc {
		a := byRef[ref]
		if a == nil {
			a = &imageAcc{ports: map[string]bool{}, paths: map[string]bool{}}
			byRef[ref] = a
		}
		return a
	}
	for _, d := range docs {
		specs, complete := podSpecs(d)
		for _, ps := range specs {
			addPodSpec(get, ps, complete)
		}
	}
	refs := make([]string, 0, len(byRef))
	for r := range byRef {
		refs = append(refs, r)
	}
	sort.Strings(refs)
	out := make([]Image, 0, len(refs))
	for _, r := range refs {
		a := byRef[r]
		img := Image{Config: Config{Image: r, Ports: sortedKeys(a.ports), Init: a.init}, Paths: sortedKeys(a.paths), NonRoot: a.nonRoot}
		out = append(out, img)
	}
	return out
}

// addPodSpec records what the containers of ps need of their images:
// ports, executable paths, the command lines that exit at once (init
// containers, and app containers of a pod that runs to completion), the
// user.
func addPodSpec(get func(ref string) *imageAcc, ps *manifests.PodSpec, complete bool) {
	podNonRoot := ps.SecurityContext != nil && ps.SecurityContext.RunAsNonRoot != nil && *ps.SecurityContext.RunAsNonRoot
	podUser := ps.SecurityContext != nil && ps.SecurityContext.RunAsUser != nil
	for _, c := range ps.AllContainers() {
		a := get(c.Image)
		isInit := false
		for i := range ps.InitContainers {
			if &ps.InitContainers[i] == c && !c.IsSidecar() {
				isInit = true
			}
		}
		if isInit || complete && !isSidecarOrInit(ps, c) {
			a.init = append(a.init, argv(c))
		}
		for _, p := range c.Ports {
			a.ports[portSpec(p.ContainerPort, p.Protocol)] = true
		}
		for _, p := range []*manifests.Probe{c.ReadinessProbe, c.LivenessProbe, c.StartupProbe} {
			if p == nil {
				continue
			}
			if port := probePort(p); port > 0 {
				a.ports[portSpec(port, "TCP")] = true
			}
			if p.Exec != nil {
				addPath(a.paths, p.Exec.Command, c.WorkingDir)
			}
		}
		if c.Lifecycle != nil {
			for _, h := range []*manifests.LifecycleHandler{c.Lifecycle.PostStart, c.Lifecycle.PreStop} {
				if h == nil {
					continue
				}
				if h.Exec != nil {
					addPath(a.paths, h.Exec.Command, c.WorkingDir)
				}
				if h.HTTPGet != nil && h.HTTPGet.Port.IntValue() > 0 {
					a.ports[portSpec(int32(h.HTTPGet.Port.IntValue()), "TCP")] = true
				}
			}
		}
		addPath(a.paths, c.Command, c.WorkingDir)
		sc := c.SecurityContext
		nonRoot := podNonRoot || sc != nil && sc.RunAsNonRoot != nil && *sc.RunAsNonRoot
		user := podUser || sc != nil && sc.RunAsUser != nil
		if nonRoot && !user {
			a.nonRoot = true
		}
	}
}

// isSidecarOrInit reports whether c is one of ps's init containers
// (native sidecars included).
func isSidecarOrInit(ps *manifests.PodSpec, c *manifests.Container) bool {
	for i := range ps.InitContainers {
		if &ps.InitContainers[i] == c {
			return true
		}
	}
	return false
}

// argv is a container's command line as its main process sees it: the
// command (else the stand-in's entrypoint) and the args. Kubernetes'
// $(VAR) references are left as written.
func argv(c *manifests.Container) []string {
	if len(c.Command) > 0 {
		return append(append([]string{}, c.Command...), c.Args...)
	}
	return append([]string{Entrypoint}, c.Args...)
}

func portSpec(port int32, proto string) string {
	if strings.EqualFold(proto, "UDP") {
		return strconv.Itoa(int(port)) + "/udp"
	}
	return strconv.Itoa(int(port))
}

func probePort(p *manifests.Probe) int32 {
	switch {
	case p.HTTPGet != nil:
		return int32(p.HTTPGet.Port.IntValue())
	case p.TCPSocket != nil:
		return int32(p.TCPSocket.Port.IntValue())
	case p.GRPC != nil:
		return p.GRPC.Port
	}
	return 0
}

// addPath records where command[0] must be found: as given when absolute,
// under the working directory when relative with a slash (./server), in
// /usr/local/bin (on the image's PATH) when a bare name.
func addPath(paths map[string]bool, command []string, workingDir string) {
	if len(command) == 0 || command[0] == "" {
		return
	}
	p := command[0]
	switch {
	case path.IsAbs(p):
	case strings.Contains(p, "/"):
		wd := workingDir
		if wd == "" {
			wd = "/"
		}
		p = path.Join(wd, p)
	default:
		p = path.Join("/usr/local/bin", p)
	}
	if p = path.Clean(p); p != Entrypoint && p != ConfigPath {
		paths[p] = true
	}
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Dockerfile returns the image's Dockerfile, labelled with labels.
func (i Image) Dockerfile(labels map[string]string) string {
	var b strings.Builder
	b.WriteString("FROM scratch\nCOPY workload " + Entrypoint + "\n")
	for _, p := range i.Paths {
		fmt.Fprintf(&b, "COPY workload %s\n", p)
	}
	fmt.Fprintf(&b, "COPY standin.json %s\n", ConfigPath)
	fmt.Fprintf(&b, "ENV %s=%s PATH=%s\n", Env, ConfigPath, searchPath)
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "LABEL %s=%s\n", strconv.Quote(k), strconv.Quote(labels[k]))
	}
	if i.NonRoot {
		b.WriteString("USER 65532:65532\n")
	}
	fmt.Fprintf(&b, "ENTRYPOINT [%q]\n", Entrypoint)
	return b.String()
}

// BuildContext returns the image's build context: a tar of the
// Dockerfile, the workload binary and the description.
func (i Image) BuildContext(workload []byte, labels map[string]string) ([]byte, error) {
	cfg, err := json.MarshalIndent(i.Config, "", "  ")
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct {
		name string
		mode int64
		data []byte
	}{
		{"Dockerfile", 0o644, []byte(i.Dockerfile(labels))},
		{"workload", 0o755, workload},
		{"standin.json", 0o644, cfg},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data))}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
