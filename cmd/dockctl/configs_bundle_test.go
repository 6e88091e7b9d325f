package main

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/dockctl/dockctl/store"
)

// cliSecret is a value no output of a command but `get secret -o
// yaml|json` may show.
const cliSecret = "hunter2-s3cr3t"

// configBundle is a bundle of every kind, in an order apply does not
// keep: a Deployment, its Service, its claim, Secret and ConfigMap, and
// their Namespace last.
var configBundle = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx}]}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec: {selector: {app: web}, ports: [{port: 80}]}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: shop}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: v1
kind: Secret
metadata: {name: db, namespace: shop, labels: {app: web}}
type: kubernetes.io/basic-auth
data: {username: ` + base64.StdEncoding.EncodeToString([]byte("admin")) + `}
stringData: {password: ` + cliSecret + `}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: web.config, namespace: shop, labels: {app: web}}
data: {nginx.conf: "server {}", LOG_LEVEL: info}
---
apiVersion: v1
kind: Namespace
metadata: {name: shop}
`

func TestApplyConfigBundle(t *testing.T) {
	dir := t.TempDir()
	cli := func(stdin string, args ...string) (string, string, error) {
		return run(t, stdin, append([]string{"--state-dir", dir}, args...)...)
	}
	out, errOut, err := cli(configBundle, "apply", "-f", "-", "--dry-run")
	if err != nil || out != strings.Join([]string{
		"namespace/shop created (dry run)",
		"configmap/web.config created (dry run)",
		"secret/db created (dry run)",
		"persistentvolumeclaim/data created (dry run)",
		"service/web created (dry run)",
		"deployment/web created (dry run)", ""}, "\n") {
		t.Fatalf("apply --dry-run: %v %q %q", err, out, errOut)
	}
	// diff of what is not stored yet: the whole objects, a Secret's
	// values masked.
	out, _, err = cli(configBundle, "diff", "-f", "-")
	if !strings.Contains(out, "+++ merged/secret/shop/db\n") || !strings.Contains(out, "+  password: '***'\n") || strings.Contains(out, cliSecret) ||
		strings.Contains(out, base64.StdEncoding.EncodeToString([]byte(cliSecret))) {
		t.Fatalf("diff before apply: %v\n%s", err, out)
	}
	if out, _, err = cli(configBundle, "apply", "-f", "-"); err != nil || !strings.HasPrefix(out, "namespace/shop created\nconfigmap/web.config created\nsecret/db created\n") {
		t.Fatalf("apply: %v %q", err, out)
	}
	if out, _, err = cli(configBundle, "apply", "-f", "-"); err != nil || strings.Count(out, "unchanged") != 6 {
		t.Fatalf("apply again: %v %q", err, out)
	}

	// diff: nothing for what is applied; a changed Secret shows which
	// key changes, masked, never the values.
	if out, _, err = cli(configBundle, "diff", "-f", "-"); err != nil || out != "" {
		t.Fatalf("diff of what is applied: %v %q", err, out)
	}
	changed := strings.Replace(strings.Replace(configBundle, "password: "+cliSecret, "password: other-"+cliSecret, 1), "LOG_LEVEL: info", "LOG_LEVEL: debug", 1)
	out, _, err = cli(changed, "diff", "-f", "-")
	var exit *exitError
	if !errors.As(err, &exit) || exit.code != 1 {
		t.Fatalf("diff of a change: %v, want exit 1", err)
	}
	for _, want := range []string{
		"--- live/configmap/shop/web.config", "-  LOG_LEVEL: info", "+  LOG_LEVEL: debug",
		"--- live/secret/shop/db", "-  password: '*** (before)'", "+  password: '*** (after)'", "   username: '***'",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("diff lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, cliSecret) || strings.Contains(out, base64.StdEncoding.EncodeToString([]byte(cliSecret))) {
		t.Errorf("diff shows a secret value:\n%s", out)
	}

	// An immutable ConfigMap refuses a change of its data, naming it as
	// kubectl does, and nothing of the bundle is stored.
	imm := strings.Replace(configBundle, "data: {nginx.conf", "immutable: true\ndata: {nginx.conf", 1)
	if _, _, err = cli(imm, "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	_, _, err = cli(strings.Replace(imm, "LOG_LEVEL: info", "LOG_LEVEL: debug", 1), "apply", "-f", "-")
	if err == nil || !strings.Contains(err.Error(), "the ConfigMap \"shop/web.config\" is invalid: data: field is immutable when `immutable` is set") {
		t.Fatalf("changing an immutable configmap: %v", err)
	}
	// diff says so too (kubectl diff's server-side dry run refuses it),
	// as an error, not as a difference.
	out, _, err = cli(strings.Replace(imm, "LOG_LEVEL: info", "LOG_LEVEL: debug", 1), "diff", "-f", "-")
	if !errors.As(err, &exit) || exit.code != 2 || out != "" ||
		!strings.Contains(err.Error(), "apply would refuse it") ||
		!strings.Contains(err.Error(), "the ConfigMap \"shop/web.config\" is invalid: data: field is immutable when `immutable` is set") {
		t.Fatalf("diff of a change of an immutable configmap: %v %q, want exit 2 naming the refusal", err, out)
	}

	// prune --all: what the files no longer hold goes, ConfigMaps,
	// Secrets and claims too.
	onlyDep := configBundle[:strings.Index(configBundle, "---\napiVersion: v1\nkind: Service")]
	out, _, err = cli(onlyDep, "apply", "-f", "-", "--prune", "--all", "--dry-run")
	if err != nil || out != "deployment/web unchanged (dry run)\nservice/web pruned (dry run)\nconfigmap/web.config pruned (dry run)\nsecret/db pruned (dry run)\npersistentvolumeclaim/data pruned (dry run)\n" {
		t.Fatalf("prune --all: %v %q", err, out)
	}

	// delete -f: every object, what is in the namespace before it.
	out, _, err = cli(configBundle, "delete", "-f", "-")
	if err != nil || out != "deployment/web deleted\nservice/web deleted\nconfigmap/web.config deleted\nsecret/db deleted\npersistentvolumeclaim/data deleted\nnamespace/shop deleted\n" {
		t.Fatalf("delete -f: %v %q", err, out)
	}
	st, err := store.OpenReadOnly(dir, "default")
	if err != nil {
		t.Fatal(err)
	}
	if _, deleted, err := st.LookupClaim("shop", "data"); err != nil || !deleted {
		t.Errorf("claim after delete -f: deleted %v, %v", deleted, err)
	}
}

// A file's Secret with a bad value is refused without the value, and the
// namespace rule of -n holds for the new kinds too.
func TestApplyConfigBundleErrors(t *testing.T) {
	dir := t.TempDir()
	bad := "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {pin: 1234567}\ndata: {k: " + cliSecret + "}\n"
	_, _, err := run(t, bad, "--state-dir", dir, "apply", "-f", "-")
	if err == nil || strings.Contains(err.Error(), cliSecret) || strings.Contains(err.Error(), "1234567") {
		t.Fatalf("a bad secret: %v", err)
	}
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: other}\n"
	_, _, err = run(t, cm, "--state-dir", dir, "-n", "shop", "apply", "-f", "-")
	if err == nil || !strings.Contains(err.Error(), `the namespace from the provided object "other" does not match the namespace "shop"`) {
		t.Fatalf("a configmap of another namespace than -n: %v", err)
	}
	_, _, err = run(t, cm, "--state-dir", dir, "apply", "-f", "-")
	if err == nil || !strings.Contains(err.Error(), `configmap/c: namespaces "other" not found`) {
		t.Fatalf("a configmap of a missing namespace: %v", err)
	}
}
