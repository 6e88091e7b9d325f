package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	sigsyaml "sigs.k8s.io/yaml"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/sourcedir"
	"github.com/dockctl/dockctl/store"
)

// What `label` and `rollout restart` set and the file does not is kept by
// apply -f and by a manifests directory's sync, and diff -f and diff
// --manifests, which preview exactly what they store, show no difference
// for it; `set image` changes a field the file sets: the file's image wins
// again, as with kubectl apply and Flux.
func TestApplyKeepsWhatTheFileDoesNotSet(t *testing.T) {
	for _, viaDir := range []bool{false, true} {
		name := map[bool]string{false: "apply -f", true: "manifests directory"}[viaDir]
		t.Run(name, func(t *testing.T) {
			state := t.TempDir()
			dir := filepath.Join(t.TempDir(), "k8s")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(webYAML), 0o644); err != nil {
				t.Fatal(err)
			}
			base := []string{"--state-dir", state, "--instance", "t1"}
			must := func(stdin string, args ...string) string {
				t.Helper()
				out, errOut, err := run(t, stdin, append(base, args...)...)
				if err != nil {
					t.Fatalf("%v: %v %s", args, err, errOut)
				}
				return out
			}
			apply := func() string {
				t.Helper()
				if !viaDir {
					return must(webYAML, "apply", "-f", "-")
				}
				st, err := store.Open(state, "t1")
				if err != nil {
					t.Fatal(err)
				}
				res, err := sourcedir.New(st, sourcedir.Options{Paths: []string{dir}}).Sync()
				if err != nil {
					t.Fatal(err)
				}
				return string(res[0].Action)
			}
			diff := func() (string, int) {
				t.Helper()
				args := []string{"diff", "-f", "-"}
				if viaDir {
					args = []string{"diff", "--manifests", dir}
				}
				out, _, err := run(t, webYAML, append(base, args...)...)
				return out, exitCode(err)
			}
			stored := func() *store.Record {
				t.Helper()
				return storedDeployment(t, state, "web")
			}

			apply()
			must("", "label", "deployment", "web", "tier=front")
			must("", "rollout", "restart", "deployment/web")
			restarted := stored()
			if out, code := diff(); code != 0 || out != "" {
				t.Fatalf("diff after label and rollout restart: exit %d\n%s", code, out)
			}
			if got := apply(); !strings.Contains(got, "unchanged") {
				t.Fatalf("re-apply after label and rollout restart: %s", got)
			}
			r := stored()
			if r.Deployment.Metadata.Labels["tier"] != "front" || r.Deployment.Spec.Template.Metadata.Annotations[manifests.AnnotationRestartedAt] == "" ||
				r.CurrentRevision().Number != restarted.CurrentRevision().Number || r.Generation != restarted.Generation {
				t.Fatalf("re-apply undid label or restart: labels %v, template annotations %v, revision %d -> %d",
					r.Deployment.Metadata.Labels, r.Deployment.Spec.Template.Metadata.Annotations, restarted.CurrentRevision().Number, r.CurrentRevision().Number)
			}

			must("", "set", "image", "deployment/web", "web=nginx:1.27")
			if out, code := diff(); code != 1 || !strings.Contains(out, "-        image: nginx:1.27") || !strings.Contains(out, "+        image: dockctl-workload:dev") || strings.Contains(out, "tier") || strings.Contains(out, "restartedAt") {
				t.Fatalf("diff after set image: exit %d, want 1 and the image alone\n%s", code, out)
			}
			if got := apply(); !strings.Contains(got, "configured") {
				t.Fatalf("re-apply after set image: %s", got)
			}
			r = stored()
			if img := r.Deployment.Spec.Template.Spec.Containers[0].Image; img != "dockctl-workload:dev" || r.Deployment.Spec.Template.Metadata.Annotations[manifests.AnnotationRestartedAt] == "" {
				t.Fatalf("after re-apply: image %s (want the file's), template annotations %v", img, r.Deployment.Spec.Template.Metadata.Annotations)
			}
		})
	}
}

// patch and edit store a whole object (the live one as changed): a field
// removed from it is removed — replicas back to the default, paused off —
// as the API server takes a patched or edited object; nothing of the live
// object is kept as apply keeps what a file leaves out.
func TestPatchAndEditRemoveFields(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, g *globalOptions, base []string)
		check  func(d *manifests.Deployment) bool
	}{
		{"patch replicas null", func(t *testing.T, _ *globalOptions, base []string) {
			if _, errOut, err := run(t, "", append(base, "patch", "deployment", "web", "-p", `{"spec":{"replicas":null}}`)...); err != nil {
				t.Fatal(err, errOut)
			}
		}, func(d *manifests.Deployment) bool { return d.Replicas() == manifests.DefaultReplicas }},
		{"edit deletes paused", func(t *testing.T, g *globalOptions, _ []string) {
			ed := &fakeEditor{saves: []func(string) string{replace("  paused: true\n", "")}}
			var out, errOut strings.Builder
			ref := store.ObjectRef{Kind: store.KindDeployment, Namespace: "default", Name: "web"}
			if err := runEdit(&out, &errOut, g, ref, ed.edit); err != nil || out.String() != "deployment.apps/web edited\n" {
				t.Fatalf("edit: %v %q %q", err, out.String(), errOut.String())
			}
		}, func(d *manifests.Deployment) bool { return !d.Spec.Paused }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			base := []string{"--state-dir", dir, "--instance", "t1"}
			must := runner(t, base)
			must(webYAML, "apply", "-f", "-")
			must("", "rollout", "pause", "deployment/web")
			tt.change(t, &globalOptions{stateDir: dir, instance: "t1", namespace: "default"}, base)
			if d := storedDeployment(t, dir, "web").Deployment; !tt.check(&d) {
				t.Errorf("replicas %d, paused %v", d.Replicas(), d.Spec.Paused)
			}
		})
	}
}

// zeroBases are, per kind of the accepted subset that has boolean or
// integer fields, an object that holds every struct those fields are in
// (a sidecar init container for the probes and hooks an init container
// may have), for TestExplicitZeroUndoesAnEdit.
var zeroBases = map[reflect.Type]string{
	reflect.TypeOf(manifests.Deployment{}): `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  minReadySeconds: 5
  revisionHistoryLimit: 5
  progressDeadlineSeconds: 600
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 30
      shareProcessNamespace: false
      securityContext: {runAsUser: 1000, runAsGroup: 1000, runAsNonRoot: true, fsGroup: 1000, supplementalGroups: [1000]}
      initContainers:
      - name: side
        image: busybox:1.36
        restartPolicy: Always
        ports: [{containerPort: 9090, hostPort: 9090}]
        envFrom: [{configMapRef: {name: cfg, optional: true}}, {secretRef: {name: sec, optional: true}}]
        livenessProbe: {grpc: {port: 9090}, initialDelaySeconds: 1, periodSeconds: 10, timeoutSeconds: 1, successThreshold: 1, failureThreshold: 3}
        readinessProbe: {grpc: {port: 9090}, initialDelaySeconds: 1, periodSeconds: 10, timeoutSeconds: 1, successThreshold: 1, failureThreshold: 3}
        startupProbe: {grpc: {port: 9090}, initialDelaySeconds: 1, periodSeconds: 10, timeoutSeconds: 1, successThreshold: 1, failureThreshold: 3}
        lifecycle: {postStart: {sleep: {seconds: 1}}, preStop: {sleep: {seconds: 1}}}
        securityContext: {runAsUser: 1000, runAsGroup: 1000, runAsNonRoot: true, readOnlyRootFilesystem: true}
        env:
        - {name: A, valueFrom: {configMapKeyRef: {name: cfg, key: a, optional: true}}}
        - {name: B, valueFrom: {secretKeyRef: {name: sec, key: a, optional: true}}}
        stdin: true
        stdinOnce: true
        tty: true
        volumeMounts: [{name: cfg, mountPath: /cfg, readOnly: true}]
      containers:
      - name: web
        image: nginx:1.27
        ports: [{containerPort: 8080, hostPort: 8080}]
        envFrom: [{configMapRef: {name: cfg, optional: true}}, {secretRef: {name: sec, optional: true}}]
        livenessProbe: {grpc: {port: 8080}, initialDelaySeconds: 1, periodSeconds: 10, timeoutSeconds: 1, successThreshold: 1, failureThreshold: 3}
        readinessProbe: {grpc: {port: 8080}, initialDelaySeconds: 1, periodSeconds: 10, timeoutSeconds: 1, successThreshold: 1, failureThreshold: 3}
        startupProbe: {grpc: {port: 8080}, initialDelaySeconds: 1, periodSeconds: 10, timeoutSeconds: 1, successThreshold: 1, failureThreshold: 3}
        lifecycle: {postStart: {sleep: {seconds: 1}}, preStop: {sleep: {seconds: 1}}}
        securityContext: {runAsUser: 1000, runAsGroup: 1000, runAsNonRoot: true, readOnlyRootFilesystem: true}
        env:
        - {name: A, valueFrom: {configMapKeyRef: {name: cfg, key: a, optional: true}}}
        - {name: B, valueFrom: {secretKeyRef: {name: sec, key: a, optional: true}}}
        stdin: true
        stdinOnce: true
        tty: true
        volumeMounts: [{name: cfg, mountPath: /cfg, readOnly: true}]
      volumes:
      - name: cfg
        configMap: {name: cfg, optional: true, defaultMode: 420, items: [{key: a, path: a, mode: 420}]}
      - name: sec
        secret: {secretName: sec, optional: true, defaultMode: 420, items: [{key: a, path: a, mode: 420}]}
      - name: down
        downwardAPI: {defaultMode: 420, items: [{path: labels, fieldRef: {fieldPath: metadata.labels}, mode: 420}]}
      - name: proj
        projected:
          defaultMode: 420
          sources:
          - configMap: {name: cfg, optional: true, items: [{key: a, path: a, mode: 420}]}
          - secret: {name: sec, optional: true, items: [{key: a, path: b, mode: 420}]}
          - downwardAPI: {items: [{path: labels, fieldRef: {fieldPath: metadata.labels}, mode: 420}]}
      - name: data
        persistentVolumeClaim: {claimName: data, readOnly: true}
`,
	reflect.TypeOf(manifests.Service{}): `apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  type: LoadBalancer
  allocateLoadBalancerNodePorts: true
  publishNotReadyAddresses: true
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080, nodePort: 30080}]
`,
	reflect.TypeOf(manifests.ConfigMap{}): `apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
immutable: false
data: {a: "1"}
`,
	reflect.TypeOf(manifests.Secret{}): `apiVersion: v1
kind: Secret
metadata: {name: sec}
immutable: false
stringData: {a: "1"}
`,
}

// zeroField is a boolean or integer field: its path (a list's items as
// [*]) and whether it is a boolean.
type zeroField struct {
	path   string
	isBool bool
}

// zeroFields walks type t by its JSON names, as a file sets them, and
// returns every boolean and integer field, but status and what the API
// server sets.
func zeroFields(t reflect.Type) []zeroField {
	var out []zeroField
	var walk func(t reflect.Type, path string)
	walk = func(t reflect.Type, path string) {
		switch t.Kind() {
		case reflect.Pointer:
			walk(t.Elem(), path)
		case reflect.Slice:
			if t.Elem().Kind() != reflect.Uint8 {
				walk(t.Elem(), path+"[*]")
			}
		case reflect.Struct:
			if t.PkgPath() != reflect.TypeOf(manifests.Deployment{}).PkgPath() {
				return // quantities, int-or-strings, times: not booleans or integers
			}
			for i := 0; i < t.NumField(); i++ {
				name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
				switch name {
				case "", "-", "status", "generation", "managedFields", "creationTimestamp", "ownerReferences":
					continue
				}
				p := name
				if path != "" {
					p = path + "." + name
				}
				walk(t.Field(i).Type, p)
			}
		case reflect.Bool, reflect.Int, reflect.Int32, reflect.Int64:
			out = append(out, zeroField{path: path, isBool: t.Kind() == reflect.Bool})
		}
	}
	walk(t, "")
	return out
}

// locate returns the JSON pointers of the places of doc (decoded JSON)
// that path (zeroFields') names whose parent object exists.
func locate(doc any, path string) []string {
	var out []string
	var find func(v any, segs []string, ptr string)
	find = func(v any, segs []string, ptr string) {
		seg := segs[0]
		name, list := strings.CutSuffix(seg, "[*]")
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		if len(segs) == 1 && !list {
			out = append(out, ptr+"/"+name)
			return
		}
		next, ok := m[name]
		if !ok {
			return
		}
		if !list {
			find(next, segs[1:], ptr+"/"+name)
			return
		}
		items, _ := next.([]any)
		for i, item := range items {
			if len(segs) == 1 {
				out = append(out, fmt.Sprintf("%s/%s/%d", ptr, name, i))
				continue
			}
			find(item, segs[1:], fmt.Sprintf("%s/%s/%d", ptr, name, i))
		}
	}
	find(doc, strings.Split(path, "."), "")
	return out
}

// pointerValue returns the value at JSON pointer ptr of doc (nil: absent).
func pointerValue(doc any, ptr string) any {
	v := doc
	for _, seg := range strings.Split(ptr, "/")[1:] {
		switch c := v.(type) {
		case map[string]any:
			v = c[seg]
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i >= len(c) {
				return nil
			}
			v = c[i]
		default:
			return nil
		}
	}
	return v
}

// An explicit false or 0 in a file is the file's value, as any other:
// kubectl sends it, and apply stores it over what an edit or a patch
// set since (client-side apply's three-way merge takes every field the
// file declares, zero or not). dockctl's typed objects leave zeros out of
// their JSON, and the merge took them for fields the file does not set:
// hostNetwork: false did not undo a patch to true, and diff said nothing.
// Every boolean and integer field of the accepted subset, found by
// walking the types, with apply -f (and a manifests directory, but in
// lists): the
// file sets it to zero, an edit sets another value, diff shows a change,
// apply restores what the file gives (the default, where Kubernetes
// defaults a zero) and diff is then empty. A field that cannot be zero in
// a file is refused with its name; an immutable one is refused on change,
// as Kubernetes refuses it.
func TestExplicitZeroUndoesAnEdit(t *testing.T) {
	kinds := map[reflect.Type]string{}
	for typ, src := range zeroBases {
		kinds[typ] = src
	}
	for _, typ := range []reflect.Type{reflect.TypeOf(manifests.Namespace{}), reflect.TypeOf(manifests.PersistentVolumeClaim{})} {
		if fields := zeroFields(typ); len(fields) > 0 {
			t.Errorf("%s has boolean or integer fields %v: give it a base in zeroBases", typ.Name(), fields)
		}
	}
	for typ, src := range kinds {
		j, err := sigsyaml.YAMLToJSON([]byte(src))
		if err != nil {
			t.Fatal(err)
		}
		var base map[string]any
		if err := json.Unmarshal(j, &base); err != nil {
			t.Fatal(err)
		}
		kind, name := base["kind"].(string), base["metadata"].(map[string]any)["name"].(string)
		for _, field := range zeroFields(typ) {
			ptrs := locate(base, field.path)
			if len(ptrs) == 0 {
				t.Errorf("%s: the base %s has no place for %s: add its parent to zeroBases", kind, kind, field.path)
				continue
			}
			for _, ptr := range ptrs {
				modes := []bool{false, true}
				if strings.Contains(field.path, "[*]") {
					// In a list, which the merge replaces whole: a
					// directory's sync passes the same zeros as apply
					// -f (sourcedir.Place), tested on the others.
					modes = modes[:1]
				}
				for _, viaDir := range modes {
					mode := map[bool]string{false: "apply -f", true: "manifests directory"}[viaDir]
					t.Run(kind+ptr+"/"+mode, func(t *testing.T) {
						explicitZero(t, base, kind, name, ptr, field.isBool, viaDir)
					})
				}
			}
		}
	}
}

// explicitZero is one case of TestExplicitZeroUndoesAnEdit: the field at
// ptr of object kind/name.
func explicitZero(t *testing.T, base map[string]any, kind, name, ptr string, isBool, viaDir bool) {
	var doc map[string]any
	b, _ := json.Marshal(base)
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var zero any = float64(0)
	if isBool {
		zero = false
	}
	// Set the field to zero in the file (its parent exists: locate).
	parentPtr, field := ptr[:strings.LastIndexByte(ptr, '/')], ptr[strings.LastIndexByte(ptr, '/')+1:]
	switch p := pointerValue(doc, parentPtr).(type) {
	case map[string]any:
		p[field] = zero
	case []any:
		i, _ := strconv.Atoi(field)
		p[i] = zero
	default:
		t.Fatalf("no parent at %s", parentPtr)
	}
	file, _ := json.Marshal(doc)

	state := t.TempDir()
	dir := filepath.Join(t.TempDir(), "k8s")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "obj.json"), file, 0o644); err != nil {
		t.Fatal(err)
	}
	base2 := []string{"--state-dir", state, "--instance", "t1"}
	cli := func(stdin string, args ...string) (string, error) {
		out, errOut, err := run(t, stdin, append(base2, args...)...)
		if err != nil {
			return out + errOut, err
		}
		return out, nil
	}
	apply := func() (string, error) {
		if !viaDir {
			return cli(string(file), "apply", "-f", "-")
		}
		st, err := store.Open(state, "t1")
		if err != nil {
			t.Fatal(err)
		}
		res, err := sourcedir.New(st, sourcedir.Options{Paths: []string{dir}}).Sync()
		if err != nil {
			return "", err
		}
		if len(res) == 0 {
			// The file is refused: diff --manifests says why.
			out, _, err := run(t, "", append(base2, "diff", "--manifests", dir)...)
			return "", fmt.Errorf("sync refused the file: %v %s", err, out)
		}
		return string(res[len(res)-1].Action), nil
	}
	diff := func() (string, int) {
		args := []string{"diff", "-f", "-"}
		if viaDir {
			args = []string{"diff", "--manifests", dir}
		}
		out, _, err := run(t, string(file), append(base2, args...)...)
		if err != nil {
			out += err.Error()
		}
		return out, exitCode(err)
	}
	live := func() any {
		t.Helper()
		out, err := cli("", "get", strings.ToLower(kind), name, "-o", "json")
		if err != nil {
			t.Fatalf("get: %v %s", err, out)
		}
		var obj map[string]any
		if err := json.Unmarshal([]byte(out), &obj); err != nil {
			t.Fatal(err)
		}
		v := pointerValue(obj, ptr)
		if v == nil {
			return zero // left out: zero
		}
		return v
	}

	if out, err := apply(); err != nil {
		// Zero is no valid value of this field: the file is refused,
		// naming it.
		if !strings.Contains(out+err.Error(), field) {
			t.Fatalf("the file with %s zero is refused without naming it: %v %s", ptr, err, out)
		}
		return
	}
	v0 := live()
	// An edit: another value the store accepts.
	candidates := []any{true}
	if !isBool {
		candidates = []any{float64(1), float64(2), float64(3), float64(5), float64(30), float64(1001), float64(8081), float64(30081)}
	}
	var edited any
	var lastErr string
	for _, c := range candidates {
		if c == v0 {
			continue
		}
		patch, _ := json.Marshal([]map[string]any{{"op": "add", "path": ptr, "value": c}})
		if out, err := cli("", "patch", strings.ToLower(kind), name, "--type", "json", "-p", string(patch)); err != nil {
			lastErr = fmt.Sprintf("%v %s", err, out)
			continue
		}
		edited = c
		break
	}
	if edited == nil {
		// The field has one valid value (a liveness probe's
		// successThreshold is 1): nothing to undo.
		if !strings.Contains(lastErr, field) {
			t.Fatalf("no edit of %s is accepted, and the refusal does not name it: %s", ptr, lastErr)
		}
		return
	}
	if got := live(); got != edited {
		t.Fatalf("after the edit %s = %v, want %v", ptr, got, edited)
	}
	out, code := diff()
	if code == 2 && strings.Contains(out, "field is immutable") {
		// Kubernetes refuses to make an immutable object mutable
		// again; apply refuses it too.
		if _, err := apply(); err == nil || !strings.Contains(err.Error(), "field is immutable") {
			t.Fatalf("apply of what diff refuses: %v", err)
		}
		return
	}
	if code != 1 {
		t.Errorf("diff after an edit of %s to %v: exit %d, want 1 (the file sets %v)\n%s", ptr, edited, code, v0, out)
	}
	if out, err := apply(); err != nil {
		t.Fatalf("apply after the edit: %v %s", err, out)
	}
	if got := live(); got != v0 {
		t.Fatalf("after apply %s = %v, want the file's %v (the edit set %v)", ptr, got, v0, edited)
	}
	if out, code := diff(); code != 0 {
		t.Errorf("diff after apply: exit %d\n%s", code, out)
	}
}
