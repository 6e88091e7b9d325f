package compose

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	goldenfile "github.com/dockctl/dockctl/internal/golden"
	"github.com/dockctl/dockctl/manifests"
)

// testEnviron is the process environment of every conversion here, so
// that the machine's variables play no part.
var testEnviron = []string{"PATH=/bin"}

// render is what `dockctl convert` prints: the objects, then the
// warnings as comments, with the absolute testdata directory as
// $TESTDATA so that the golden files do not depend on the checkout.
func render(t *testing.T, res *Result) []byte {
	t.Helper()
	y, err := res.YAML()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	b.Write(y)
	b.WriteString("# warnings\n")
	for _, w := range res.Warnings {
		b.WriteString("# " + w.String() + "\n")
	}
	abs, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	return bytes.ReplaceAll(b.Bytes(), []byte(abs), []byte("$TESTDATA"))
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, filepath.Join("testdata", name+".golden"), got)
}

// Each Compose file of testdata converts to its golden manifests and
// warnings, and the manifests are what `dockctl apply -f` accepts: they
// decode and validate with manifests.Decode, the decoder apply uses.
func TestConvertGolden(t *testing.T) {
	for _, tt := range []struct {
		name, file string
		opts       Options
	}{
		{name: "interpolation-from-dotenv", file: "interpolation.yaml"},
		{name: "interpolation-from-env-file-flag", file: "interpolation.yaml", opts: Options{EnvFiles: []string{"testdata/other.env"}}},
		{name: "profiles-inactive-services-are-named", file: "profiles.yaml"},
		{name: "profiles-active", file: "profiles.yaml", opts: Options{Profiles: []string{"debug"}}},
		{name: "extends-merges-the-base-service", file: "extends.yaml"},
		{name: "ports-published-and-exposed", file: "ports.yaml"},
		{name: "volumes-claims-hostpath-emptydir", file: "volumes.yaml"},
		{name: "secrets-mounted-under-run-secrets", file: "secrets.yaml"},
		{name: "configs-mounted-from-configmaps", file: "configs.yaml"},
		{name: "healthcheck-is-the-readiness-probe", file: "healthcheck.yaml"},
		{name: "depends-on-waits-in-init-containers", file: "depends_on.yaml"},
		{name: "depends-on-wait-image-and-command", file: "depends_on.yaml",
			opts: Options{WaitImage: "dockctl-workload:dev", WaitCommand: []string{"/workload", "wait", "{host}:{port}"}}},
		{name: "security-command-replicas-resources", file: "security.yaml", opts: Options{Namespace: "apps", ClaimSize: "5Gi"}},
		{name: "unmappable-keys-are-named", file: "unmappable.yaml"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			opts.Files = []string{filepath.Join("testdata", tt.file)}
			opts.Environ = testEnviron
			res, err := Convert(context.Background(), opts)
			if err != nil {
				t.Fatal(err)
			}
			out := render(t, res)
			golden(t, tt.name, out)
			y, err := res.YAML()
			if err != nil {
				t.Fatal(err)
			}
			docs, skipped, err := manifests.DecodeAll(tt.file, y, manifests.LoadOptions{})
			if err != nil {
				t.Fatalf("converted manifests do not decode: %v", err)
			}
			if len(docs) != len(res.Objects) || len(skipped) > 0 {
				t.Fatalf("decoded %d documents of %d objects", len(docs), len(res.Objects))
			}
		})
	}
}

// Converting twice gives the same bytes: maps are visited in order.
func TestConvertIsDeterministic(t *testing.T) {
	var first []byte
	for i := range 5 {
		res, err := Convert(context.Background(), Options{Files: []string{"testdata/depends_on.yaml", "testdata/ports.yaml"}, Environ: testEnviron, ProjectName: "p"})
		if err != nil {
			t.Fatal(err)
		}
		out := render(t, res)
		if i == 0 {
			first = out
		} else if !bytes.Equal(first, out) {
			t.Fatalf("run %d differs:\n%s\n---\n%s", i, out, first)
		}
	}
}

// A name that is not DNS-1123 is made one, and the change is a warning.
func TestNamesBecomeDNS1123(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"web", "web"},
		{"My_Service", "my-service"},
		{"db.primary", "db-primary"},
		{"1st", "x-1st"},
		{"_x_", "x"},
		{"_", "x"},
		{"--", "x"},
		{"__", "x"},
		{strings.Repeat("a", 70), strings.Repeat("a", 63)},
	} {
		if got := dns1123(tt.in); got != tt.want {
			t.Errorf("dns1123(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "compose.yaml")
	if err := os.WriteFile(file, []byte("name: n\nservices:\n  My_DB:\n    image: db:1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Convert(context.Background(), Options{Files: []string{file}, Environ: testEnviron})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0].String(), `service My_DB: service name: "My_DB" becomes "my-db"`) {
		t.Fatalf("warnings %v", res.Warnings)
	}
}

// Kubernetes expands $(NAME) in command and args; Compose does not, so
// the converted command escapes it and reads back as written.
func TestCommandKeepsDollarParenLiteral(t *testing.T) {
	in := []string{"echo $(date)", "cost $$5", "$HOME", "$"}
	got := escapeK8s(in)
	for i, s := range got {
		if back := manifests.ExpandVars(s, func(string) (string, bool) { return "EXPANDED", true }); back != in[i] {
			t.Errorf("%q escaped to %q expands to %q", in[i], s, back)
		}
	}
}

// Errors name what is wrong: no file, a file from stdin, a secret whose
// file is missing.
func TestConvertErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "compose.yaml")
	if err := os.WriteFile(missing, []byte("name: n\nservices:\n  a:\n    image: a\n    secrets: [s]\nsecrets:\n  s:\n    file: ./nothing\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	clash := filepath.Join(dir, "clash.yaml")
	if err := os.WriteFile(clash, []byte("name: n\nservices:\n  web:\n    image: a\n    environment: {A: b}\n    configs: [web-env]\nconfigs:\n  web-env:\n    content: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		opts Options
		want string
	}{
		{"no file", Options{}, "no Compose file given"},
		{"stdin", Options{Files: []string{"-"}}, "standard input is not supported"},
		{"secret file missing", Options{Files: []string{missing}}, "secrets.s: read:"},
		{"two objects of one name", Options{Files: []string{clash}}, "two objects would be ConfigMap/web-env"},
		{"bad claim size", Options{Files: []string{"testdata/volumes.yaml"}, ClaimSize: "lots"}, `claim size "lots"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Environ = testEnviron
			_, err := Convert(context.Background(), tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want %q", err, tt.want)
			}
		})
	}
}

// The warnings come in the same order on every run too: they are part of
// the output (stderr, the golden files), so no map order may show.
func TestWarningsAreDeterministic(t *testing.T) {
	for _, tt := range []struct{ name, text string }{
		{"deploy keys not converted", "name: n\nservices:\n  a:\n    image: x\n    deploy:\n      mode: global\n      labels: {a: b}\n      endpoint_mode: dnsrr\n      update_config: {parallelism: 2}\n      rollback_config: {parallelism: 2}\n      placement:\n        constraints: [node.role==manager]\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var first string
			for i := range 20 {
				res, err := convertText(t, tt.text)
				if err != nil {
					t.Fatal(err)
				}
				var b strings.Builder
				for _, w := range res.Warnings {
					b.WriteString(w.String() + "\n")
				}
				if i == 0 {
					first = b.String()
				} else if b.String() != first {
					t.Fatalf("run %d warns in another order:\n%s---\n%s", i, b.String(), first)
				}
			}
		})
	}
}
