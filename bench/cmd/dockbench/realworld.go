package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/standin"
	"github.com/dockctl/dockctl/manifests"
)

// realworldSection holds the real-world bundle figures (BENCHMARKS.md,
// Real-world bundles): how long the largest bundle of the real-world corpus
// (manifests/testdata/realworld) takes from `dockctl apply` to every Service
// answering, next to creating and starting as many containers directly; and
// how long a ConfigMap change takes to reach the file a running replica
// reads.
const realworldSection = "realworld"

// realworldResync is the controller's resync period in this section: a
// ConfigMap change must reach the files within one.
const realworldResync = 10 * time.Second

// realworldBundle is the corpus bundle the section runs.
type realworldBundle struct {
	name       string
	path       string
	docs       []*manifests.Document
	containers int // the containers its pods run (init containers that exit aside)
	services   int
}

// pickRealworldBundle returns the bundle of the corpus that runs the most
// containers among those dockctl loads and the harness can run: no
// hostPort (it would publish on every address of the host).
func pickRealworldBundle(root string) (*realworldBundle, []string, error) {
	dir := filepath.Join(root, "manifests", "testdata", "realworld")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	var best *realworldBundle
	var refused []string
	for _, en := range entries {
		path := filepath.Join(dir, en.Name())
		docs, err := manifests.Load([]string{path}, nil)
		if err != nil {
			first, _, _ := strings.Cut(err.Error(), "\n")
			refused = append(refused, en.Name()+": "+first)
			continue
		}
		b := &realworldBundle{name: en.Name(), path: path, docs: docs}
		hostPort := false
		for _, d := range docs {
			switch {
			case d.Service != nil:
				b.services++
			case d.Deployment != nil:
				ps := &d.Deployment.Spec.Template.Spec
				hostPort = hostPort || ps.HostPort() != 0
				n := len(ps.Containers)
				for _, c := range ps.InitContainers {
					if c.IsSidecar() {
						n++
					}
				}
				b.containers += int(d.Deployment.Replicas()) * n
			}
		}
		if hostPort {
			continue
		}
		if best == nil || b.containers > best.containers {
			best = b
		}
	}
	if best == nil {
		return nil, refused, errors.New("no bundle of the corpus loads")
	}
	return best, refused, nil
}

func benchRealworld(ctx context.Context, e *env, s settings, rep *report) error {
	b, refused, err := pickRealworldBundle(e.root)
	if err != nil {
		return err
	}
	sort.Strings(refused)
	for _, r := range refused {
		rep.note("realworld: not a candidate (dockctl refuses it): %s", r)
	}
	logf("  bundle %s: %d containers, %d Services", b.name, b.containers, b.services)
	if err := e.buildStandins(ctx, b.docs); err != nil {
		return err
	}
	c, err := e.startController(ctx, "realworld", realworldResync, "", "--service-address", "127.0.0.1")
	if err != nil {
		return err
	}
	defer c.stop()

	var errs []error
	applyName := fmt.Sprintf("apply → every Service answering: %s (%d containers, %d Services)", b.name, b.containers, b.services)
	if d, n, err := applyUntilServicesAnswer(ctx, c, b); err != nil {
		rep.na(realworldSection, applyName, err.Error())
		errs = append(errs, err)
	} else {
		rep.duration(realworldSection, applyName, d)
		rep.note("realworld: %d Service ports answered HTTP on their ClusterIPs from the host", n)
	}
	directName := fmt.Sprintf("create+start %d containers directly (concurrency 8) until each answers", b.containers)
	if d, err := directUntilAnswering(ctx, e, b.containers); err != nil {
		rep.na(realworldSection, directName, err.Error())
		errs = append(errs, err)
	} else {
		rep.duration(realworldSection, directName, d)
	}
	// The bundle's start next to the engine's floor for as many
	// containers: what the instance network, the DNS helper, the Service
	// proxies and readiness add.
	rep.ratio("realworld: bundle start, apply → every Service answering / direct until each answers",
		realworldSection+"/"+applyName, realworldSection+"/"+directName, atMost(1.2, ""))
	changes := 5
	if s.Quick {
		changes = 2
	}
	cmName := fmt.Sprintf("ConfigMap change → a running replica's file (resync %s)", realworldResync)
	samples, err := configMapToFile(ctx, e, c, changes)
	var na errNotYet
	switch {
	case errors.As(err, &na):
		rep.na(realworldSection, cmName, na.why)
	case err != nil:
		rep.na(realworldSection, cmName, err.Error())
		errs = append(errs, err)
	default:
		rep.latencies(realworldSection, cmName, samples)
	}
	// Its replicas stay, idle, beside the comparison's rounds; its
	// controller would only add its resyncs to both sides' load.
	c.stop()
	if err := bundleVsCompose(ctx, e, s, rep); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// errNotYet says a figure needs a feature the dockctl under test lacks.
type errNotYet struct{ why string }

func (e errNotYet) Error() string { return e.why }

// buildStandins builds a stand-in image (internal/standin) for every image
// the bundle names, under that name, labelled with the run; an image of
// that name the run did not build is never replaced.
func (e *env) buildStandins(ctx context.Context, docs []*manifests.Document) error {
	bin, err := os.ReadFile(filepath.Join(e.tmp, "workload", "workload"))
	if err != nil {
		return err
	}
	for i, img := range standin.ForBundle(docs) {
		if _, err := e.cli.ImageInspect(ctx, img.Ref()); err == nil {
			return fmt.Errorf("image %s exists on this host: a stand-in would replace it", img.Ref())
		} else if !client.IsErrNotFound(err) {
			return err
		}
		dir := filepath.Join(e.tmp, "standin-"+strconv.Itoa(i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		cfg, err := json.Marshal(img.Config)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "workload"), bin, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "standin.json"), cfg, 0o644); err != nil {
			return err
		}
		if err := e.buildImage(ctx, img.Ref(), dir, img.Dockerfile(nil)); err != nil {
			return err
		}
	}
	return nil
}

// svcTarget is one TCP port of a Service, by ClusterIP.
type svcTarget struct{ name, addr string }

// applyUntilServicesAnswer applies the bundle and returns the time until
// every TCP port of every Service with a ClusterIP answers HTTP 200 from
// the host (the stand-ins answer every path).
func applyUntilServicesAnswer(ctx context.Context, c *controller, b *realworldBundle) (time.Duration, int, error) {
	start := time.Now()
	if err := c.dockctl(ctx, "", "apply", "-f", b.path); err != nil {
		return 0, 0, err
	}
	// The controller assigns the ClusterIPs: wait for every one.
	var targets []svcTarget
	deadline := time.Now().Add(time.Minute)
	for {
		var pending []string
		var err error
		targets, pending, err = serviceTargets(ctx, c)
		if err != nil {
			return 0, 0, err
		}
		if len(pending) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return 0, 0, fmt.Errorf("no ClusterIP after 1m for %s", strings.Join(pending, ", "))
		}
		select {
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	if len(targets) == 0 {
		return 0, 0, errors.New("no Service port with a ClusterIP to measure")
	}
	if err := allAnswer(ctx, targets, 3*time.Minute); err != nil {
		return 0, 0, fmt.Errorf("%w\ncontroller log:\n%s", err, c.logTail())
	}
	return time.Since(start), len(targets), nil
}

// serviceTargets lists the TCP ports of every Service of the instance by
// ClusterIP, and the Services still waiting for one (headless ones never
// get one, and are left out).
func serviceTargets(ctx context.Context, c *controller) (targets []svcTarget, pending []string, err error) {
	out, err := c.dockctlOutput(ctx, "", "get", "services", "-A", "-o", "json")
	if err != nil {
		return nil, nil, err
	}
	var list struct {
		Items []struct {
			Metadata struct{ Name, Namespace string }
			Spec     struct {
				ClusterIP string `json:"clusterIP"`
				Ports     []struct {
					Port     int
					Protocol string
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		return nil, nil, fmt.Errorf("get services -o json: %w", err)
	}
	for _, it := range list.Items {
		name := it.Metadata.Namespace + "/" + it.Metadata.Name
		switch it.Spec.ClusterIP {
		case "None":
			continue
		case "":
			pending = append(pending, name)
			continue
		}
		for _, p := range it.Spec.Ports {
			if p.Protocol == "UDP" || p.Protocol == "SCTP" {
				continue
			}
			targets = append(targets, svcTarget{name, net.JoinHostPort(it.Spec.ClusterIP, strconv.Itoa(p.Port))})
		}
	}
	return targets, pending, nil
}

// allAnswer waits, for every target at once, for a first HTTP 200.
func allAnswer(ctx context.Context, targets []svcTarget, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	var mu sync.Mutex
	var failed []string
	var wg sync.WaitGroup
	for _, t := range targets {
		wg.Go(func() {
			last := ""
			for {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+t.addr+"/", nil)
				resp, err := hc.Do(req)
				if err == nil {
					resp.Body.Close()
					if resp.StatusCode == http.StatusOK {
						return
					}
					last = resp.Status
				} else {
					last = err.Error()
				}
				select {
				case <-ctx.Done():
					mu.Lock()
					failed = append(failed, fmt.Sprintf("%s (%s): %s", t.name, t.addr, last))
					mu.Unlock()
					return
				case <-time.After(50 * time.Millisecond):
				}
			}
		})
	}
	wg.Wait()
	if len(failed) > 0 {
		sort.Strings(failed)
		return fmt.Errorf("%d of %d Service ports did not answer within %s: %s", len(failed), len(targets), timeout, strings.Join(failed, "; "))
	}
	return nil
}

// directUntilAnswering creates and starts n workload containers on Docker's
// default bridge through the API, 8 at a time, and returns the time until
// each answers HTTP on its address.
func directUntilAnswering(ctx context.Context, e *env, n int) (time.Duration, error) {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("bench-%s-rw-%d", e.runID, i)
	}
	start := time.Now()
	var mu sync.Mutex
	var targets []svcTarget
	errs := parallel(names, 8, func(name string) error {
		id, err := e.createStart(ctx, name, e.labels("realworld-direct"))
		if err != nil {
			return err
		}
		info, err := e.cli.ContainerInspect(ctx, id)
		if err != nil {
			return err
		}
		if info.NetworkSettings == nil || info.NetworkSettings.IPAddress == "" {
			return fmt.Errorf("%s has no address on the default bridge", name)
		}
		mu.Lock()
		targets = append(targets, svcTarget{name, net.JoinHostPort(info.NetworkSettings.IPAddress, "8080")})
		mu.Unlock()
		return nil
	})
	if err := summarize(errs); err != nil {
		return 0, err
	}
	if err := allAnswer(ctx, targets, 2*time.Minute); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// configMapToFile runs one replica of the workload with a ConfigMap
// mounted as a volume, then changes the ConfigMap changes times, and
// returns how long each change took to show in the file the replica
// reads (read with `docker exec … workload cat`, which follows the
// volume's ..data link). A dockctl without configMap volumes gives
// errNotYet.
func configMapToFile(ctx context.Context, e *env, c *controller, changes int) ([]time.Duration, error) {
	const name, file = "benchcm", "/etc/bench/value"
	bundle := func(v string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\ndata: {value: %q}\n---\n", name, v) +
			e.deploymentYAML(name, 1, "", "        volumeMounts: [{name: cfg, mountPath: /etc/bench, readOnly: true}]\n") +
			fmt.Sprintf("      volumes:\n      - name: cfg\n        configMap: {name: %s}\n", name)
	}
	if err := c.apply(ctx, bundle("v0")); err != nil {
		first, _, _ := strings.Cut(err.Error(), "\n")
		return nil, errNotYet{"this dockctl refuses a configMap volume: " + first}
	}
	var id string
	deadline := time.Now().Add(2 * time.Minute)
	for id == "" {
		// The replica's container "app" (alone, or a member of a pod
		// with a holder, which carries the pod's name and not the
		// container label).
		cs, err := e.list(ctx, dockerx.LabelDeployment+"="+name)
		if err != nil {
			return nil, err
		}
		var apps []container.Summary
		for _, c := range cs {
			if role := c.Labels[dockerx.LabelRole]; (role == "" || role == dockerx.RoleReplica) &&
				(c.Labels[dockerx.LabelContainer] == "" || c.Labels[dockerx.LabelContainer] == "app") {
				apps = append(apps, c)
			}
		}
		if r := running(apps); len(r) == 1 {
			id = r[0]
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no running replica of %s after 2m:\n%s", name, c.logTail())
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	wait := func(want string) error {
		deadline := time.Now().Add(2*realworldResync + time.Minute)
		last := ""
		for {
			out, err := e.execOutput(ctx, id, "/workload", "cat", file)
			if err == nil && out == want {
				return nil
			}
			last = fmt.Sprintf("%q %v", out, err)
			if time.Now().After(deadline) {
				return fmt.Errorf("%s in the replica is not %q after %s (last read: %s)", file, want, 2*realworldResync+time.Minute, last)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	if err := wait("v0"); err != nil {
		return nil, err
	}
	var samples []time.Duration
	for i := 1; i <= changes; i++ {
		v := "v" + strconv.Itoa(i)
		start := time.Now()
		if err := c.apply(ctx, bundle(v)); err != nil {
			return nil, err
		}
		if err := wait(v); err != nil {
			return nil, err
		}
		samples = append(samples, time.Since(start))
	}
	return samples, nil
}

// execOutput runs cmd in a running container and returns its stdout; a
// non-zero exit is an error carrying stderr.
func (e *env) execOutput(ctx context.Context, id string, cmd ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ex, err := e.cli.ContainerExecCreate(ctx, id, container.ExecOptions{Cmd: cmd, AttachStdout: true, AttachStderr: true})
	if err != nil {
		return "", err
	}
	att, err := e.cli.ContainerExecAttach(ctx, ex.ID, container.ExecAttachOptions{})
	if err != nil {
		return "", err
	}
	var stdout, stderr bytes.Buffer
	_, err = stdcopy.StdCopy(&stdout, &stderr, att.Reader)
	att.Close()
	if err != nil {
		return "", err
	}
	insp, err := e.cli.ContainerExecInspect(ctx, ex.ID)
	if err != nil {
		return "", err
	}
	if insp.ExitCode != 0 {
		return stdout.String(), fmt.Errorf("exit %d: %s", insp.ExitCode, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}
