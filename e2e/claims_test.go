//go:build e2e

package e2e

import (
	"archive/tar"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/volume"
)

// PersistentVolumeClaims (docs/design.md §12), end to end: what
// Docker shows — the claim's labelled named volume, the files in it — not
// dockctl's own view.

// claimManifest is a claim of 64Mi, ReadWriteOnce.
func claimManifest(name string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: %s
spec:
  accessModes: [ReadWriteOnce]
  resources:
    requests: {storage: 64Mi}
`, name)
}

// claimDeploymentManifest is a deployment of one replica mounting claim at
// /data, running the workload with args.
func claimDeploymentManifest(name, claim string, args ...string) string {
	return podManifest(name, 1, "    type: Recreate", fmt.Sprintf(`      volumes:
      - name: store
        persistentVolumeClaim: {claimName: %s}
      containers:
      - name: app
        image: IMAGE
        args: [%s]
        volumeMounts:
        - {name: store, mountPath: /data}
`, claim, quoteArgs(args)))
}

func quoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = fmt.Sprintf("%q", a)
	}
	return strings.Join(q, ", ")
}

// claimVolume returns the Docker volume of claim (nil if none), checking
// it is labelled as the instance's.
func (e *env) claimVolume(claim string) *volume.Volume {
	e.t.Helper()
	for _, v := range volumes(e.t, "io.dockctl.instance="+e.instance, "io.dockctl.role=pvc", "io.dockctl.claim="+claim) {
		if v.Name == e.instance+"_pvc_default."+claim {
			return &v
		}
	}
	return nil
}

// readFile copies path out of container id (the archive API: the
// workload image is FROM scratch, with no shell to cat with), waiting for
// it to be written: a container runs before its process writes.
func readFile(t testing.TB, id, path string) string {
	t.Helper()
	var content string
	eventually(t, 30*time.Second, "file "+path+" in "+id, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		rc, _, err := dockerCli.CopyFromContainer(ctx, id, path)
		if err != nil {
			return false, err.Error()
		}
		defer rc.Close()
		tr := tar.NewReader(rc)
		if _, err := tr.Next(); err != nil {
			return false, err.Error()
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return false, err.Error()
		}
		content = string(b)
		return content != "", "empty"
	})
	return content
}

// replicaFailure returns the message of the deployment's ReplicaFailure
// condition ("" if none), as `get -o json` shows it.
func (e *env) replicaFailure(name string) string {
	out, err := e.dockctl("", "get", "deployment", name, "-o", "json")
	if err != nil {
		return ""
	}
	var d struct {
		Status struct {
			Conditions []struct{ Type, Status, Message string } `json:"conditions"`
		} `json:"status"`
	}
	if json.Unmarshal([]byte(out), &d) != nil {
		return ""
	}
	for _, c := range d.Status.Conditions {
		if c.Type == "ReplicaFailure" && c.Status == "True" {
			return c.Message
		}
	}
	return ""
}

// TestClaimDataSurvives: what a replica writes to its claim survives the
// replica's replacement, a rollout, a controller restart and the
// deployment's deletion; every later replica finds it (--require-file
// exits 1 without it).
func TestClaimDataSurvives(t *testing.T) {
	independent(t)
	e := newEnv(t)
	e.startController()
	e.apply(claimManifest("data") + "---\n" + claimDeploymentManifest("db", "data", "--message=first", "--write-file=/data/first"))
	cs := e.waitRunning("db", 1, "")
	v := e.claimVolume("data")
	if v == nil {
		t.Fatal("no labelled volume for claim data")
	}
	if got := readFile(t, cs[0].ID, "/data/first"); got != "first\n" {
		t.Fatalf("/data/first = %q", got)
	}
	out := e.mustDockctl("", "get", "pvc")
	if !regexpMatch(`(?m)^data\s+Bound\s+`+e.instance+`_pvc_default\.data\s+64Mi\s+RWO\s`, out) {
		t.Errorf("get pvc:\n%s", out)
	}

	// Rollout: the new revision needs the first one's file.
	e.apply(claimDeploymentManifest("db", "data", "--message=second", "--require-file=/data/first", "--write-file=/data/second"))
	eventually(t, 60*time.Second, "rollout to the revision that needs /data/first", func() (bool, string) {
		cs = e.deploymentContainers("db")
		return len(cs) == 1 && cs[0].State == "running" && strings.Contains(cs[0].Command, "second"), describe(cs)
	})

	// Replacement: a replica removed by hand comes back on the same data.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := dockerCli.ContainerRemove(ctx, cs[0].ID, container.RemoveOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "replacement running", func() (bool, string) {
		n := e.deploymentContainers("db")
		return len(n) == 1 && n[0].ID != cs[0].ID && n[0].State == "running", describe(n)
	})

	// Controller restart: nothing is re-made.
	e.stopController()
	e.startController()
	cs = e.waitRunning("db", 1, "")
	// (A local volume's CreatedAt is its directory's mtime: the files
	// say whether it is the same volume.)
	if got := readFile(t, cs[0].ID, "/data/first"); got != "first\n" {
		t.Fatalf("after a controller restart, /data/first = %q", got)
	}

	// Deployment deleted: the claim's volume stays; a new deployment
	// finds both files.
	e.mustDockctl("", "delete", "deployment", "db")
	eventually(t, 60*time.Second, "deployment's containers gone", func() (bool, string) {
		n := e.deploymentContainers("db")
		return len(n) == 0, describe(n)
	})
	if e.claimVolume("data") == nil {
		t.Fatal("claim volume removed with the deployment")
	}
	e.apply(claimDeploymentManifest("db2", "data", "--message=third", "--require-file=/data/second"))
	cs = e.waitRunning("db2", 1, "")
	if got := readFile(t, cs[0].ID, "/data/first"); got != "first\n" {
		t.Fatalf("after delete and re-create, /data/first = %q", got)
	}
}

// TestClaimProtection: a deployment naming a missing claim says so and
// creates nothing; a volume of the claim's name that dockctl did not make
// is never adopted; a deleted claim's volume stays while a container uses
// it and goes once none does.
func TestClaimProtection(t *testing.T) {
	independent(t)
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// A volume of the name claim "taken" would get, made by someone else.
	foreign := e.instance + "_pvc_default.taken"
	if _, err := dockerCli.VolumeCreate(ctx, volume.CreateOptions{Name: foreign, Labels: map[string]string{"io.dockctl.e2e-foreign": e.instance}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := dockerCli.VolumeRemove(context.Background(), foreign, true); err != nil {
			t.Logf("cleanup volume %s: %v", foreign, err)
		}
	})
	e.startController()
	e.apply(claimDeploymentManifest("lost", "nope", "--message=x") + "---\n" +
		claimManifest("taken") + "---\n" + claimDeploymentManifest("squat", "taken", "--message=x") + "---\n" +
		claimManifest("data") + "---\n" + claimDeploymentManifest("db", "data", "--message=x", "--write-file=/data/f"))

	e.waitRunning("db", 1, "")
	eventually(t, 60*time.Second, "ReplicaFailure naming the missing claim", func() (bool, string) {
		m := e.replicaFailure("lost")
		return strings.Contains(m, `persistentvolumeclaim "nope" not found`), m
	})
	eventually(t, 60*time.Second, "ReplicaFailure refusing the foreign volume", func() (bool, string) {
		m := e.replicaFailure("squat")
		return strings.Contains(m, `persistentvolumeclaim "taken"`) && strings.Contains(m, "never adopts"), m
	})
	for _, name := range []string{"lost", "squat"} {
		if cs := e.deploymentContainers(name); len(cs) != 0 {
			t.Fatalf("%s created containers: %s", name, describe(cs))
		}
	}
	v, err := dockerCli.VolumeInspect(ctx, foreign)
	if err != nil || v.Labels["io.dockctl.e2e-foreign"] != e.instance || v.Labels["io.dockctl.instance"] != "" {
		t.Fatalf("foreign volume touched: %+v, %v", v, err)
	}
	if out := e.mustDockctl("", "get", "pvc", "taken"); !regexpMatch(`(?m)^taken\s+Pending\s`, out) {
		t.Errorf("get pvc taken:\n%s", out)
	}

	// pvc-protection.
	e.mustDockctl("", "delete", "pvc", "data")
	out := e.mustDockctl("", "describe", "pvc", "data")
	if !strings.Contains(out, "Terminating") || !regexpMatch(`Used By:\s+\S+_db-`, out) {
		t.Errorf("describe pvc of a deleted claim in use:\n%s", out)
	}
	// Several resyncs (2s) pass while the replica runs: the volume stays.
	eventually(t, 60*time.Second, "the controller to see the deletion", func() (bool, string) {
		log := e.controllerLog()
		return strings.Contains(log, "kept while containers use it"), "no log line yet"
	})
	if e.claimVolume("data") == nil {
		t.Fatal("the volume of a deleted claim went while a replica uses it")
	}
	e.mustDockctl("", "delete", "deployment", "db")
	eventually(t, 90*time.Second, "the released volume removed", func() (bool, string) {
		return e.claimVolume("data") == nil && len(e.deploymentContainers("db")) == 0, describe(e.deploymentContainers("db"))
	})
}
