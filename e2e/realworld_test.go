//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/image"

	"github.com/dockctl/dockctl/internal/standin"
	"github.com/dockctl/dockctl/manifests"
)

// realworldE2E are the bundles of the real-world corpus
// (manifests/testdata/realworld) run end to end: applied as they are, with
// every image they name played by a stand-in (internal/standin), until
// every Service answers. Bundles whose features are still being built are
// added here as they land (cmd/dockctl's TestRealworldCorpusDryRun tells
// which apply).
var realworldE2E = []string{
	"guestbook.yaml",       // three tiers, six objects, a LoadBalancer
	"sidecars.yaml",        // an init container, a native sidecar, two app containers
	"team-namespaces.yaml", // three namespaces, a Service per namespace
	// A private image with imagePullPolicy Always and its pull secret:
	// the registry cannot be reached, so the stand-in is used.
	"image-pull-secrets.yaml",
}

// standinLabel marks the stand-in images of one test: the cleanup removes
// exactly those.
const standinLabel = "io.dockctl.e2e-standin"

func TestRealworldBundles(t *testing.T) {
	independent(t)
	for _, b := range realworldE2E {
		t.Run(b, func(t *testing.T) { runRealworld(t, b) })
	}
}

// runRealworld applies one bundle of the corpus with stand-in images and
// waits until every Deployment is rolled out and every TCP port of every
// Service answers HTTP through its DNS name from a pod of the instance.
func runRealworld(t testing.TB, bundle string) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "manifests", "testdata", "realworld", bundle)
	docs, err := manifests.Load([]string{path}, nil)
	if err != nil {
		t.Fatalf("the bundle does not load: %v", err)
	}
	// Before newEnv: cleanups run last first, so the images go after the
	// containers that use them.
	buildStandins(t, docs)
	e := newEnv(t)
	e.startSvcController(testSubnet(t))
	start := time.Now()
	e.mustDockctl("", "apply", "-f", path)
	e.apply(clientDeployment("").manifest())

	for _, d := range docs {
		if d.Deployment == nil {
			continue
		}
		m := d.Deployment.Metadata
		e.mustDockctl("", "rollout", "status", "deployment/"+m.Name, "-n", m.NamespaceOrDefault(), "--timeout", "90s")
	}
	client := e.waitPodsRunning("default", "client", 1)[0].ID
	n := 0
	for _, d := range docs {
		s := d.Service
		if s == nil {
			continue
		}
		for _, p := range s.Spec.Ports {
			if p.Protocol != "TCP" {
				continue
			}
			port := p.Port
			if s.IsHeadless() {
				// A headless name resolves to the pods: their port.
				port = int32(p.TargetPort.IntValue())
				if port == 0 {
					continue // a named port of a headless Service: none in these bundles
				}
			}
			url := fmt.Sprintf("http://%s.%s.svc.cluster.local:%d/", s.Metadata.Name, s.Metadata.NamespaceOrDefault(), port)
			e.answers(client, url, "stand-in for ")
			n++
		}
	}
	if n == 0 {
		t.Fatal("the bundle has no Service port to check")
	}
	t.Logf("%s: %d Service ports answer, %s after apply", bundle, n, time.Since(start).Round(time.Millisecond))
}

// buildStandins builds and tags a stand-in image for every image the
// bundle names, labelled with a run of its own, and removes them when the
// test ends. An image of that name this test did not build is never
// retagged: the test fails instead.
func buildStandins(t testing.TB, docs []*manifests.Document) {
	t.Helper()
	id := randomSuffix()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var built []string
	t.Cleanup(func() {
		// By tag, with the builder's parent layers (PruneChildren);
		// then anything else of this label a failed build left.
		for _, ref := range built {
			if _, err := dockerCli.ImageRemove(context.Background(), ref, image.RemoveOptions{PruneChildren: true}); err != nil {
				t.Logf("cleanup image %s: %v", ref, err)
			}
		}
		removeImagesByLabel(t, standinLabel+"="+id)
	})
	bin, err := os.ReadFile(workloadBin)
	if err != nil {
		t.Fatal(err)
	}
	var tars [][]byte
	for _, img := range standin.ForBundle(docs) {
		if _, err := dockerCli.ImageInspect(ctx, img.Ref()); err == nil {
			t.Fatalf("image %s exists on this host: a stand-in would replace it", img.Ref())
		} else if !errdefs.IsNotFound(err) {
			t.Fatal(err)
		}
		tar, err := img.BuildContext(bin, map[string]string{standinLabel: id})
		if err != nil {
			t.Fatal(err)
		}
		built = append(built, img.Ref())
		tars = append(tars, tar)
	}
	// The builds at once: each is its own context and tag, and most of a
	// build is the daemon copying the workload binary into layers.
	err = concurrently(len(built), func(i int) error {
		if err := buildImage(ctx, tars[i], built[i]); err != nil {
			return fmt.Errorf("build the stand-in for %s: %w", built[i], err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// buildImage builds a context (a tar holding a Dockerfile) into tag with
// the classic builder and reads its progress to the end, failing on the
// first error it reports.
func buildImage(ctx context.Context, tar []byte, tag string) error {
	resp, err := dockerCli.ImageBuild(ctx, bytes.NewReader(tar), build.ImageBuildOptions{
		Tags: []string{tag}, Remove: true, ForceRemove: true, Version: build.BuilderV1,
	})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for {
		var m struct {
			Error string `json:"error"`
		}
		if err := dec.Decode(&m); err == io.EOF {
			break
		} else if err != nil {
			return err
		}
		if m.Error != "" {
			return fmt.Errorf("%s", strings.TrimSpace(m.Error))
		}
	}
	_, err = dockerCli.ImageInspect(ctx, tag)
	return err
}
