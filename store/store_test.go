package store

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gofrs/flock"

	"github.com/dockctl/dockctl/internal/testenv"
	"github.com/dockctl/dockctl/manifests"
)

// TestMain doubles as the helper process of the cross-process tests: the
// test binary re-executes itself with helperEnv set.
func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(runHelper())
	}
	os.Exit(m.Run())
}

// dep returns a minimal valid deployment, modified by the optional muts.
func dep(name string, muts ...func(*manifests.Deployment)) *manifests.Deployment {
	one := int32(1)
	d := &manifests.Deployment{
		APIVersion: manifests.APIVersion,
		Kind:       manifests.Kind,
		Metadata:   manifests.ObjectMeta{Name: name, Labels: map[string]string{"app": name}},
		Spec: manifests.DeploymentSpec{
			Replicas: &one,
			Selector: &manifests.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: manifests.PodTemplateSpec{
				Metadata: manifests.TemplateMeta{Labels: map[string]string{"app": name}},
				Spec: manifests.PodSpec{
					Containers: []manifests.Container{{Name: "app", Image: "nginx:1.27"}},
				},
			},
		},
	}
	for _, m := range muts {
		m(d)
	}
	return d
}

func replicas(n int32) func(*manifests.Deployment) {
	return func(d *manifests.Deployment) { d.Spec.Replicas = &n }
}

func label(k, v string) func(*manifests.Deployment) {
	return func(d *manifests.Deployment) {
		d.Metadata.Labels = map[string]string{"app": d.Metadata.Name, k: v}
	}
}

func image(img string) func(*manifests.Deployment) {
	return func(d *manifests.Deployment) { d.Spec.Template.Spec.Containers[0].Image = img }
}

func openTemp(t *testing.T) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "state"), "default")
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func mustApply(t *testing.T, s *Store, opts ApplyOptions, deps ...*manifests.Deployment) []ApplyResult {
	t.Helper()
	res, err := s.Apply(Deployments(deps...), opts)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	return res
}

func TestOpenCreatesPrivateLayout(t *testing.T) {
	s := openTemp(t)
	mustApply(t, s, ApplyOptions{}, dep("web"))
	if err := s.WriteStatus("", "web", &Status{ObservedGeneration: 1}); err != nil {
		t.Fatal(err)
	}
	release, err := s.AcquireControllerLock(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer release()

	want := map[string]fs.FileMode{
		".":                    dirPerm,
		"deployments":          dirPerm,
		"status":               dirPerm,
		"instance":             filePerm,
		".lock":                filePerm,
		"controller.lock":      filePerm,
		"deployments/web.json": filePerm,
		"status/web.json":      filePerm,
	}
	for rel, perm := range want {
		fi, err := os.Stat(filepath.Join(s.Dir(), rel))
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			continue
		}
		if got := fi.Mode().Perm(); got != perm {
			t.Errorf("%s: mode %v, want %v", rel, got, perm)
		}
	}
	b, err := os.ReadFile(filepath.Join(s.Dir(), "instance"))
	if err != nil || string(b) != "default\n" {
		t.Errorf("instance file = %q, %v; want %q", b, err, "default\n")
	}
	if s.Instance() != "default" {
		t.Errorf("Instance() = %q", s.Instance())
	}
}

func TestOpenInstanceOwnership(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	if _, err := Open(dir, "blue"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		open     func(dir, instance string) (*Store, error)
		instance string
		wantErr  string
	}{
		{"same instance", Open, "blue", ""},
		{"same instance read-only", OpenReadOnly, "blue", ""},
		{"other instance", Open, "green", `state directory ` + dir + ` belongs to instance "blue", not "green"`},
		{"other instance read-only", OpenReadOnly, "green", `belongs to instance "blue", not "green"`},
		{"empty instance", Open, "", "instance name: empty"},
		{"instance with slash", Open, "a/b", "instance name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := tt.open(dir, tt.instance)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if s.Dir() != dir {
					t.Errorf("Dir() = %q, want %q", s.Dir(), dir)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
	// A refused Open must not have touched the other instance's directory.
	b, _ := os.ReadFile(filepath.Join(dir, "instance"))
	if string(b) != "blue\n" {
		t.Errorf("instance file rewritten: %q", b)
	}
}

func TestOpenNotWritable(t *testing.T) {
	base := t.TempDir()
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	type tc struct{ name, dir string }
	// A directory below a regular file cannot be created, even by root.
	tests := []tc{{"below a regular file", filepath.Join(file, "sub")}}
	// Permission bits do not stop root, so the chmod case is only
	// meaningful (and only included) for other users.
	if os.Geteuid() != 0 {
		ro := filepath.Join(base, "ro")
		if err := os.Mkdir(ro, 0o500); err != nil {
			t.Fatal(err)
		}
		tests = append(tests, tc{"read-only directory", ro}, tc{"below a read-only directory", filepath.Join(ro, "sub")})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Open(tt.dir, "default")
			want := "state directory " + tt.dir + " is not writable: "
			if err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("error = %v, want prefix %q", err, want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans several lines: %q", err)
			}
		})
	}
}

func TestOpenReadOnly(t *testing.T) {
	base := t.TempDir()
	missing := filepath.Join(base, "missing")
	s, err := OpenReadOnly(missing, "default")
	if err != nil {
		t.Fatalf("missing dir: %v", err)
	}
	if recs, err := s.List(); err != nil || len(recs) != 0 {
		t.Errorf("List on missing dir = %v, %v; want empty", recs, err)
	}
	if _, err := s.Get("", "web"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get on missing dir: %v, want ErrNotFound", err)
	}
	if st, err := s.ReadStatus("", "web"); err != nil || st.ObservedGeneration != 0 {
		t.Errorf("ReadStatus on missing dir = %+v, %v", st, err)
	}
	if running, err := s.ControllerRunning(); err != nil || running {
		t.Errorf("ControllerRunning on missing dir = %v, %v", running, err)
	}
	if _, err := os.Stat(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("OpenReadOnly created the directory: %v", err)
	}
	// A dry run needs no write access: diff and apply --dry-run use it.
	res, err := s.Apply(Deployments([]*manifests.Deployment{dep("web")}...), ApplyOptions{DryRun: true})
	if err != nil || len(res) != 1 || res[0].Action != Created {
		t.Errorf("dry-run Apply on read-only store = %v, %v", res, err)
	}

	writes := map[string]func() error{
		"Apply": func() error {
			_, err := s.Apply(Deployments([]*manifests.Deployment{dep("web")}...), ApplyOptions{})
			return err
		},
		"Update": func() error {
			_, err := s.Update("", "web", func(*manifests.Deployment) error { return nil })
			return err
		},
		"Delete":      func() error { return s.Delete("", "web") },
		"WriteStatus": func() error { return s.WriteStatus("", "web", &Status{}) },
		"AcquireControllerLock": func() error {
			_, err := s.AcquireControllerLock(t.Context(), nil)
			return err
		},
	}
	for name, write := range writes {
		if err := write(); !errors.Is(err, ErrReadOnly) {
			t.Errorf("%s on read-only store: %v, want ErrReadOnly", name, err)
		}
	}

	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenReadOnly(file, "default"); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("OpenReadOnly on a file: %v", err)
	}
}

func TestOpenRemovesStaleTempFiles(t *testing.T) {
	s := openTemp(t)
	stale := []string{
		filepath.Join(s.Dir(), "deployments", ".web.json.tmp-123"),
		filepath.Join(s.Dir(), "status", ".web.json.tmp-456"),
		filepath.Join(s.Dir(), ".instance.tmp-789"),
	}
	for _, p := range stale {
		if err := os.WriteFile(p, []byte("{"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Open(s.Dir(), "default"); err != nil {
		t.Fatal(err)
	}
	for _, p := range stale {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s survived Open: %v", p, err)
		}
	}
}

func TestDefaultDir(t *testing.T) {
	tests := []struct {
		name      string
		euid      int
		xdg, home string
		want      string
	}{
		{"root", 0, "/x", "/root", "/var/lib/dockctl"},
		{"xdg", 1000, "/home/u/.state", "/home/u", "/home/u/.state/dockctl"},
		{"relative xdg is ignored", 1000, "rel", "/home/u", "/home/u/.local/state/dockctl"},
		{"home", 1000, "", "/home/u", "/home/u/.local/state/dockctl"},
		{"nothing", 1000, "", "", "/var/lib/dockctl"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := defaultDir(tt.euid, tt.xdg, tt.home); got != tt.want {
				t.Errorf("defaultDir = %q, want %q", got, tt.want)
			}
		})
	}
	if DefaultDir() == "" {
		t.Error("DefaultDir() is empty")
	}
}

// tempFiles lists temporary files left anywhere in the state directory.
func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if isTempName(d.Name()) || strings.HasPrefix(d.Name(), ".probe-") {
			found = append(found, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

func TestWriteLockTimeout(t *testing.T) {
	old := lockTimeout
	lockTimeout = 100 * time.Millisecond
	t.Cleanup(func() { lockTimeout = old })

	s := openTemp(t)
	// Another process's transaction, as far as flock can tell.
	held := flock.New(filepath.Join(s.Dir(), ".lock"))
	if err := held.Lock(); err != nil {
		t.Fatal(err)
	}
	_, err := s.Apply(Deployments([]*manifests.Deployment{dep("web")}...), ApplyOptions{})
	want := "state directory " + s.Dir() + ": locked by another dockctl process: gave up after 100ms"
	if err == nil || err.Error() != want {
		t.Fatalf("error = %v, want %q", err, want)
	}
	if _, err := s.Get("", "web"); !errors.Is(err, ErrNotFound) {
		t.Errorf("apply wrote without the lock: %v", err)
	}
	// A dry run takes no lock, so it still answers.
	if _, err := s.Apply(Deployments([]*manifests.Deployment{dep("web")}...), ApplyOptions{DryRun: true}); err != nil {
		t.Errorf("dry run while locked: %v", err)
	}
	if err := held.Unlock(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Apply(Deployments([]*manifests.Deployment{dep("web")}...), ApplyOptions{}); err != nil {
		t.Errorf("apply after the lock was released: %v", err)
	}
}

// A state directory that others could write to is made private again by
// Open, but what they planted while it was open stays: a record owned by
// another user (who may still hold it open and rewrite it), or a symbolic
// link to a file of theirs. Its owner, not this user, decided it: the
// store must not hand it to the controller as desired state.
func TestRecordPlantedByAnotherUserIsRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Unavailable(t, "chown needs root")
	}
	for _, how := range []string{"owned by another user", "a link to another user's file"} {
		t.Run(how, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "state")
			s, err := Open(dir, "default")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Apply(deps(dep("web")), ApplyOptions{}); err != nil {
				t.Fatal(err)
			}
			deployments := filepath.Join(dir, deploymentsDir)
			chmod(t, deployments, 0o777) // a mistake, or an older release
			path := filepath.Join(deployments, "web.json")
			if how == "owned by another user" {
				if err := os.Chown(path, 4242, 4242); err != nil {
					t.Fatal(err)
				}
			} else {
				theirs := filepath.Join(t.TempDir(), "theirs.json")
				if err := os.Rename(path, theirs); err != nil {
					t.Fatal(err)
				}
				if err := os.Chown(theirs, 4242, 4242); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(theirs, path); err != nil {
					t.Fatal(err)
				}
			}
			s, err = Open(dir, "default") // makes deployments/ private again
			if err != nil {
				t.Fatal(err)
			}
			if rec, err := s.Lookup("", "web"); err == nil {
				t.Fatalf("a record planted by uid 4242 was read as desired state: %s", rec.Name)
			} else if !strings.Contains(err.Error(), "web.json") {
				t.Fatalf("the error does not name the file: %v", err)
			}
			if recs, _ := s.ListAll(); len(recs) != 0 {
				t.Fatalf("ListAll returned the planted record")
			}
		})
	}
}
