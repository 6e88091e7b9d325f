//go:build e2e

package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/testcontainers/testcontainers-go"
)

// The registry stand-in's only login. The password is what the test
// looks for in every log and status.
const (
	regUser     = "dockctl-e2e"
	regPassword = "e2e-Pa55word-not-for-logs"
)

// startRegistry serves an in-memory registry (go-containerregistry's) on
// 127.0.0.1, refusing every request without regUser's basic auth, as a
// private registry does. Docker pulls from 127.0.0.0/8 over plain HTTP by
// default. It returns the registry's host:port.
func startRegistry(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	reg := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != regUser || p != regPassword {
			w.Header().Set("WWW-Authenticate", `Basic realm="dockctl-e2e"`)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
			return
		}
		reg.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// pushWorkload pushes the workload image the harness built, as `docker
// save` exports it, to the registry stand-in under each of refs.
func pushWorkload(t testing.TB, refs ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rc, err := dockerCli.ImageSave(ctx, []string{workloadImage})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	path := filepath.Join(t.TempDir(), "workload.tar")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(f, rc); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(workloadImage)
	if err != nil {
		t.Fatal(err)
	}
	saved, err := tarball.ImageFromPath(path, &tag)
	if err != nil {
		t.Fatal(err)
	}
	img, err := compressedOnce(saved)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range refs {
		ref, err := name.ParseReference(r, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(ref, img, remote.WithContext(ctx),
			remote.WithAuth(&authn.Basic{Username: regUser, Password: regPassword})); err != nil {
			t.Fatalf("push %s: %v", r, err)
		}
	}
}

// compressedOnce is img with each layer gzipped once, at the fastest
// level, and kept: a layer of `docker save` is uncompressed, and the
// image read from it gzips it anew for its digest and for every push, at
// the default level — under -race, 50 s of the test's two pushes on a
// 2-core machine. The layers (their content, hence the diff IDs) and the
// config's settings are the workload's; the config is written anew, so
// the pulled image is one of its own with the workload's layers.
func compressedOnce(img v1.Image) (v1.Image, error) {
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	out := empty.Image
	for _, l := range layers {
		cl, err := tarball.LayerFromOpener(l.Uncompressed, tarball.WithCompressedCaching)
		if err != nil {
			return nil, fmt.Errorf("layer of %s: %w", workloadImage, err)
		}
		if out, err = mutate.AppendLayers(out, cl); err != nil {
			return nil, err
		}
	}
	return mutate.ConfigFile(out, cfg)
}

// removeImageRefs removes each of refs (the tags of the image pulled from
// the registry stand-ins) by its exact reference, leaving the image's
// other tags; the last one's removal removes the image.
func removeImageRefs(t testing.TB, refs ...string) {
	for _, r := range refs {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_, err := dockerCli.ImageRemove(ctx, r, image.RemoveOptions{})
		cancel()
		if err != nil && !strings.Contains(err.Error(), "No such image") {
			t.Errorf("remove image %s: %v", r, err)
		}
	}
}

type conditionView struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

func (e *env) conditions(name string) ([]conditionView, string) {
	e.t.Helper()
	out := e.mustDockctl("", "get", "deployment", name, "-o", "json")
	var d struct {
		Status struct {
			Conditions []conditionView `json:"conditions"`
		} `json:"status"`
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		e.t.Fatalf("get deployment %s -o json: %v\n%s", name, err, out)
	}
	return d.Status.Conditions, out
}

// TestPrivateRegistryPull: a deployment pulls the workload image from a
// registry that wants a login (imagePullPolicy Always, nothing local):
// without credentials the pull fails and ReplicaFailure says so; with an
// imagePullSecret of type kubernetes.io/dockerconfigjson it runs; and
// with the docker CLI's config.json (DOCKER_CONFIG, mounted into the
// controller's container) it runs too. The password is in no log, status
// or describe output.
func TestPrivateRegistryPull(t *testing.T) {
	// Two stand-ins, so that the docker CLI's credentials (for one) never
	// stand in for the imagePullSecret's (for the other).
	secretHost, cliHost := startRegistry(t), startRegistry(t)
	suffix := randomSuffix()
	secretRef := fmt.Sprintf("%s/dockctl-e2e/workload:%s", secretHost, suffix)
	cliRef := fmt.Sprintf("%s/dockctl-e2e/workload:%s", cliHost, suffix)
	// Registered before newEnv's cleanup, so it runs after the
	// containers using them are gone.
	t.Cleanup(func() { removeImageRefs(t, secretRef, cliRef) })
	pushWorkload(t, secretRef, cliRef)

	e := newEnv(t)
	cliDir := t.TempDir() // the docker CLI's config directory, empty for now
	e.startControllerWith(func(req *testcontainers.ContainerRequest) {
		req.Env = map[string]string{"DOCKER_CONFIG": "/docker-config"}
		modify := req.HostConfigModifier
		req.HostConfigModifier = func(hc *container.HostConfig) {
			modify(hc)
			hc.Binds = append(hc.Binds, cliDir+":/docker-config:ro")
		}
	})

	deployment := func(name, ref, spec string) string {
		return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %s}
spec:
  replicas: 1
  selector: {matchLabels: {app: %s}}
  template:
    metadata: {labels: {app: %s}}
    spec:
%s      containers:
      - name: app
        image: %s
        imagePullPolicy: Always
`, name, name, name, spec, ref)
	}
	loginJSON := func(host string) string {
		return fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, host,
			base64.StdEncoding.EncodeToString([]byte(regUser+":"+regPassword)))
	}

	// No credentials anywhere: the registries refuse, the conditions say why.
	e.apply(deployment("private", secretRef, "") + "---\n" + deployment("cli", cliRef, ""))
	var statuses strings.Builder
	for name, ref := range map[string]string{"private": secretRef, "cli": cliRef} {
		eventually(t, 2*time.Minute, name+": a ReplicaFailure naming the pull", func() (bool, string) {
			conds, out := e.conditions(name)
			for _, c := range conds {
				if c.Type == "ReplicaFailure" && c.Status == "True" &&
					(c.Reason == "ErrImagePull" || c.Reason == "ImagePullBackOff") && strings.Contains(c.Message, ref) {
					statuses.WriteString(out)
					return true, ""
				}
			}
			return false, out
		})
		if n := len(e.deploymentContainers(name)); n != 0 {
			t.Fatalf("%s: %d containers without an image", name, n)
		}
	}

	// The docker CLI's credentials, read at each pull: the next try of
	// the waiting deployment succeeds.
	if err := os.WriteFile(filepath.Join(cliDir, "config.json"), []byte(loginJSON(cliHost)), 0o644); err != nil {
		t.Fatal(err)
	}
	e.waitRunning("cli", 1, "")

	// An imagePullSecret in the deployment's namespace.
	e.apply(fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata: {name: regcred}
type: kubernetes.io/dockerconfigjson
stringData:
  .dockerconfigjson: '%s'
---
`, loginJSON(secretHost)) + deployment("private", secretRef, "      imagePullSecrets:\n      - name: regcred\n"))
	e.waitRunning("private", 1, "")

	if out := e.mustDockctl("", "describe", "secret", "regcred"); !strings.Contains(out, "deployment/private") {
		t.Errorf("describe secret regcred does not name its user deployment/private:\n%s", out)
	}
	for what, s := range map[string]string{
		"controller log":  e.controllerLog(),
		"failed status":   statuses.String(),
		"status":          e.mustDockctl("", "get", "deployments", "-o", "yaml"),
		"describe":        e.mustDockctl("", "describe", "deployment", "private"),
		"describe secret": e.mustDockctl("", "describe", "secret", "regcred"),
	} {
		if strings.Contains(s, regPassword) || strings.Contains(s, base64.StdEncoding.EncodeToString([]byte(regUser+":"+regPassword))) {
			t.Errorf("the registry password is in the %s", what)
		}
	}
}
