package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// withConfig points DOCKCTL_CONFIG at a file of the test holding content
// ("" for none) and returns its path.
func withConfig(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "dockctl", "config.yaml")
	if content != "" {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("DOCKCTL_CONFIG", p)
	return p
}

// The namespace and instance every command uses: the flag's, else the
// variable's, else the current context's, else "default".
func TestGlobalSettingsPrecedence(t *testing.T) {
	const ctx = "current-context: dev\ncontexts:\n- name: dev\n  context: {namespace: from-config, instance: cfg}\n- name: other\n  context: {namespace: other, instance: other}\n"
	for _, tt := range []struct {
		situation     string
		config        string
		env           map[string]string
		flags         []string
		wantNamespace string
		wantInstance  string
	}{
		{"nothing set: the defaults", "", nil, nil, "default", "default"},
		{"a context: its values", ctx, nil, nil, "from-config", "cfg"},
		{"a context without a current one: the defaults", "contexts:\n- name: dev\n  context: {namespace: x, instance: x}\n", nil, nil, "default", "default"},
		{"a context naming only a namespace", "current-context: a\ncontexts:\n- name: a\n  context: {namespace: team}\n", nil, nil, "team", "default"},
		{"a variable over the context", ctx, map[string]string{"DOCKCTL_NAMESPACE": "from-env", "DOCKCTL_INSTANCE": "env"}, nil, "from-env", "env"},
		{"a flag over the variable and the context", ctx, map[string]string{"DOCKCTL_NAMESPACE": "from-env", "DOCKCTL_INSTANCE": "env"},
			[]string{"-n", "from-flag", "--instance", "flag"}, "from-flag", "flag"},
		{"a flag over the context", ctx, nil, []string{"--namespace=from-flag"}, "from-flag", "cfg"},
		{"an empty variable does not count", ctx, map[string]string{"DOCKCTL_INSTANCE": ""}, nil, "from-config", "cfg"},
	} {
		t.Run(tt.situation, func(t *testing.T) {
			withConfig(t, tt.config)
			t.Setenv("DOCKCTL_NAMESPACE", "")
			t.Setenv("DOCKCTL_INSTANCE", "")
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			root := cliCommand(nil, &bytes.Buffer{}, &bytes.Buffer{})
			if err := root.ParseFlags(tt.flags); err != nil {
				t.Fatal(err)
			}
			ns := root.PersistentFlags().Lookup("namespace").Value.String()
			inst := root.PersistentFlags().Lookup("instance").Value.String()
			if ns != tt.wantNamespace || inst != tt.wantInstance {
				t.Errorf("namespace %q, instance %q; want %q, %q", ns, inst, tt.wantNamespace, tt.wantInstance)
			}
		})
	}
}

// config set-context --current sets the namespace and instance later
// commands act in; config view, current-context and get-contexts show
// the file (golden); use-context switches.
func TestConfigSetContextIsUsedByLaterCommands(t *testing.T) {
	p := withConfig(t, "")
	t.Setenv("DOCKCTL_NAMESPACE", "")
	t.Setenv("DOCKCTL_INSTANCE", "")
	base := []string{"--state-dir", t.TempDir()}
	if _, _, err := runArgs(t, base, "config", "current-context"); err == nil || err.Error() != "current-context is not set" {
		t.Fatalf("current-context of no file: %v", err)
	}
	for _, step := range []struct {
		args []string
		want string
	}{
		{[]string{"config", "set-context", "--current", "--namespace=team"}, "Context \"default\" created.\n"},
		{[]string{"config", "set-context", "--current", "--instance=ci"}, "Context \"default\" modified.\n"},
		{[]string{"config", "current-context"}, "default\n"},
		{[]string{"create", "namespace", "team"}, "namespace/team created\n"},
		{[]string{"create", "configmap", "app", "--from-literal=a=b"}, "configmap/app created\n"},
		{[]string{"--instance", "ci", "-n", "team", "get", "configmap", "app", "-o", "name"}, "configmap/app\n"},
		{[]string{"config", "set-context", "ops", "--namespace=ops"}, "Context \"ops\" created.\n"},
	} {
		out, errOut, err := runArgs(t, base, step.args...)
		if err != nil || out != step.want {
			t.Fatalf("%v: %q %v %s, want %q", step.args, out, err, errOut, step.want)
		}
	}
	view, _, err := runArgs(t, base, "config", "view")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "config-view", []byte(view))
	contexts, _, err := runArgs(t, base, "config", "get-contexts")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "config-get-contexts", []byte(contexts))
	if out, _, err := runArgs(t, base, "config", "use-context", "ops"); err != nil || out != "Switched to context \"ops\".\n" {
		t.Fatalf("use-context: %q %v", out, err)
	}
	// Context ops names no instance: the default one, whose state
	// directory this is not (ci's).
	if _, _, err := runArgs(t, base, "get", "cm"); err == nil || !strings.Contains(err.Error(), `belongs to instance "ci", not "default"`) {
		t.Errorf("get after use-context ops: %v, want the default instance refused", err)
	}
	b, err := os.ReadFile(p)
	if err != nil || !strings.Contains(string(b), "current-context: ops") {
		t.Errorf("the file: %q %v", b, err)
	}
}

// A configuration that cannot be read fails the commands, naming the
// file; config's own commands name it too; bad values are refused before
// anything is written.
func TestConfigErrors(t *testing.T) {
	p := withConfig(t, "current-context: [\n")
	if _, _, err := run(t, "", "get", "ns"); err == nil || !strings.Contains(err.Error(), p) {
		t.Errorf("get with a broken configuration: %v, want an error naming %s", err, p)
	}
	if _, _, err := run(t, "", "config", "view"); err == nil || !strings.Contains(err.Error(), p) {
		t.Errorf("config view of a broken configuration: %v", err)
	}
	withConfig(t, "bogus: 1\n")
	if _, _, err := run(t, "", "config", "view"); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("an unknown field: %v", err)
	}
	p = withConfig(t, "")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"config", "set-context", "--current", "--namespace=Bad_NS"}, `invalid namespace "Bad_NS"`},
		{[]string{"config", "set-context", "--current", "--instance=Bad"}, `invalid instance "Bad"`},
		{[]string{"config", "set-context", "x", "--current"}, "you cannot specify both a context name and --current"},
		{[]string{"config", "use-context", "nope"}, `no context exists with the name: "nope"`},
		{[]string{"config", "view", "-o", "wide"}, "--output wide is not available"},
	} {
		if _, _, err := run(t, "", tt.args...); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: %v, want %q", tt.args, err, tt.want)
		}
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Errorf("a refused change wrote the configuration: %v", err)
	}
}

// Without a home (the controller's FROM scratch container has no $HOME)
// there is no configuration: commands work with the defaults, and only a
// change of the configuration is refused.
func TestNoHomeMeansNoConfiguration(t *testing.T) {
	t.Setenv("DOCKCTL_CONFIG", "")
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("HOME", "")
	t.Setenv("DOCKCTL_NAMESPACE", "")
	t.Setenv("DOCKCTL_INSTANCE", "")
	if out, errOut, err := run(t, "", "--state-dir", t.TempDir(), "get", "ns", "-o", "name"); err != nil || out != "namespace/default\n" {
		t.Errorf("get without a home: %q %v %s", out, err, errOut)
	}
	if _, _, err := run(t, "", "config", "set-context", "--current", "--namespace=team"); err == nil || err.Error() != errNoConfigPath.Error() {
		t.Errorf("set-context without a home: %v, want %v", err, errNoConfigPath)
	}
}

// A configuration that cannot be read spares the commands that never
// read it, as kubectl's broken kubeconfig spares completion, version
// --client, explain's and api-resources' offline cousins and help: they
// use no namespace, instance or state.
func TestBrokenConfigSparesCommandsThatDoNotReadIt(t *testing.T) {
	withConfig(t, "current-context: [\n")
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no.sock"))
	for _, args := range [][]string{
		{"version"},
		{"completion", "bash"},
		{"help"},
		{"help", "get"},
		{"explain", "deployments"},
		{"api-resources"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			out, errOut, err := run(t, "", args...)
			if err != nil || out == "" {
				t.Errorf("%v with a broken configuration: %v (stdout %d bytes, stderr %q); it reads no configuration", args, err, len(out), errOut)
			}
		})
	}
}

// Commands changing the configuration at once all land (the file is
// locked around each load-change-save, as kubectl's ModifyConfig locks
// the kubeconfig): none saves over another's context.
func TestConfigChangesAtOnceAllLand(t *testing.T) {
	withConfig(t, "")
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- modifyConfig(func(c *cliConfig) error {
				c.Contexts = append(c.Contexts, namedContext{Name: fmt.Sprintf("ctx%02d", i)})
				return nil
			})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	c, _, err := loadConfig()
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Contexts) != n {
		t.Errorf("%d contexts saved, want all %d: %+v", len(c.Contexts), n, c.Contexts)
	}
}
