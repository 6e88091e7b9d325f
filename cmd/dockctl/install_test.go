package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/network"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/helperapi"
)

// The controller's flags after `--` are parsed as `dockctl controller`
// parses them, written back once each, sorted, as --name=value, with the
// --manifests paths absolute; the probe follows --metrics-addr.
func TestParseControllerFlags(t *testing.T) {
	readyz := func(host string, port int) *helperapi.ProbeSpec {
		return &helperapi.ProbeSpec{Kind: "http", Address: host, Port: port, Scheme: "HTTP", Path: "/readyz", TimeoutMillis: 2000}
	}
	tests := []struct {
		name          string
		args          []string
		wantArgs      []string
		wantManifests []string
		wantProbe     *helperapi.ProbeSpec
		wantErr       string
	}{
		{name: "none", wantProbe: readyz("127.0.0.1", 9477)},
		{name: "sorted, one form",
			args:     []string{"--service-address", "127.0.0.1", "--resync-period=10s", "--prune-orphans"},
			wantArgs: []string{"--prune-orphans=true", "--resync-period=10s", "--service-address=127.0.0.1"}, wantProbe: readyz("127.0.0.1", 9477)},
		{name: "manifests made absolute, lists once per value",
			args:          []string{"--manifests", "k8s", "--manifests=/srv/other/", "--allow-host-path=/srv/data,/srv/logs"},
			wantArgs:      []string{"--allow-host-path=/srv/data", "--allow-host-path=/srv/logs", "--manifests=/home/me/k8s", "--manifests=/srv/other"},
			wantManifests: []string{"/home/me/k8s", "/srv/other"}, wantProbe: readyz("127.0.0.1", 9477)},
		{name: "metrics on every address: probed on loopback",
			args: []string{"--metrics-addr", ":9464"}, wantArgs: []string{"--metrics-addr=:9464"}, wantProbe: readyz("127.0.0.1", 9464)},
		{name: "no metrics: no probe", args: []string{"--metrics-addr="}, wantArgs: []string{"--metrics-addr="}},
		{name: "unknown flag", args: []string{"--instance", "x"}, wantErr: "unknown flag: --instance"},
		{name: "argument", args: []string{"--allow-host-path", "/srv/data"}, wantErr: `unexpected argument "/srv/data"`},
		{name: "bad value", args: []string{"--resync-period", "often"}, wantErr: "invalid argument"},
		{name: "metrics port 0", args: []string{"--metrics-addr", "127.0.0.1:0"}, wantErr: "fixed port"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseControllerFlags(tt.args, "/home/me")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.args, tt.wantArgs) || !reflect.DeepEqual(got.manifests, tt.wantManifests) || !reflect.DeepEqual(got.probe, tt.wantProbe) {
				t.Errorf("got %q %q %+v\nwant %q %q %+v", got.args, got.manifests, got.probe, tt.wantArgs, tt.wantManifests, tt.wantProbe)
			}
		})
	}
}

// install takes no argument before `--`, and names the way to pass
// controller flags; it refuses a daemon it cannot give a socket.
func TestInstallArguments(t *testing.T) {
	_, _, err := run(t, "", "install", "--service-address", "127.0.0.1")
	if err == nil || !strings.Contains(err.Error(), "unknown flag: --service-address") {
		t.Errorf("a controller flag before --: %v", err)
	}
	_, _, err = run(t, "", "install", "extra")
	if err == nil || !strings.Contains(err.Error(), "the controller's flags follow --") {
		t.Errorf("an argument: %v", err)
	}
	for host, want := range map[string]string{
		"":                         "/var/run/docker.sock",
		"unix:///run/user/1000/ds": "/run/user/1000/ds",
		"tcp://10.0.0.1:2375":      "",
	} {
		got, err := hostSocket(host)
		if got != want || (err == nil) != (want != "") {
			t.Errorf("hostSocket(%q) = %q, %v; want %q", host, got, err, want)
		}
	}
}

// uninstall removes every object of the instance ListInstanceObjects
// returns, the volumes only without --keep-data.
func TestUninstallSelection(t *testing.T) {
	objs := []dockerx.InstanceObject{
		{Kind: dockerx.KindContainer, ID: "c", Name: "dockctl-a-controller", Role: dockerx.RoleController},
		{Kind: dockerx.KindNetwork, ID: "n", Name: "dockctl_a"},
		{Kind: dockerx.KindImage, ID: "i", Name: "dockctl:a-1"},
		{Kind: dockerx.KindVolume, ID: "v", Name: "a-claim"},
	}
	remove, keep := uninstallSelection(objs, false)
	if !reflect.DeepEqual(remove, objs) || keep != nil {
		t.Errorf("without --keep-data: remove %v keep %v", remove, keep)
	}
	remove, keep = uninstallSelection(objs, true)
	if !reflect.DeepEqual(remove, objs[:3]) || !reflect.DeepEqual(keep, objs[3:]) {
		t.Errorf("with --keep-data: remove %v keep %v", remove, keep)
	}
}

// version says what the linker stamped, else what the go command
// recorded: a `go install …@v1.2.3` build its module version, a
// pseudo-version's commit, a build of a clone its VCS revision.
func TestVersionFromBuildInfo(t *testing.T) {
	info := func(version string, settings ...string) *debug.BuildInfo {
		bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/dockctl/dockctl", Version: version}}
		for i := 0; i+1 < len(settings); i += 2 {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
		}
		return bi
	}
	tests := []struct {
		name            string
		stamped, commit string
		info            *debug.BuildInfo
		want            buildVersion
		line            string
	}{
		{"stamped by make", "v1.2.3", "0123456789ab", info("(devel)", "vcs.revision", "ffffffffffffffffffff", "CGO_ENABLED", "0"),
			buildVersion{version: "v1.2.3", commit: "0123456789ab"}, "dockctl v1.2.3 (commit 0123456789ab, "},
		{"go install of a tag", "dev", "", info("v1.2.3", "CGO_ENABLED", "0"),
			buildVersion{version: "v1.2.3"}, "dockctl v1.2.3 ("},
		{"go install of a commit", "dev", "", info("v0.0.0-20261206213000-0123456789ab", "CGO_ENABLED", "0"),
			buildVersion{version: "v0.0.0-20261206213000-0123456789ab", commit: "0123456789ab"}, "dockctl v0.0.0-20261206213000-0123456789ab (commit 0123456789ab, "},
		{"go install after a tag", "dev", "", info("v1.2.4-0.20261206213000-0123456789ab"),
			buildVersion{version: "v1.2.4-0.20261206213000-0123456789ab", commit: "0123456789ab"}, "dockctl v1.2.4-0.20261206213000-0123456789ab (commit 0123456789ab, "},
		{"go build in a modified clone", "dev", "", info("(devel)", "vcs.revision", "0123456789abcdef0123", "vcs.modified", "true", "CGO_ENABLED", "1"),
			buildVersion{version: "dev", commit: "0123456789ab-dirty", cgo: true}, "dockctl dev (commit 0123456789ab-dirty, "},
		{"no build information", "dev", "", nil, buildVersion{version: "dev"}, "dockctl dev (go"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := versionOf(tt.stamped, tt.commit, tt.info)
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			if line := got.line(); !strings.HasPrefix(line, tt.line) {
				t.Errorf("line %q, want it to begin with %q", line, tt.line)
			}
		})
	}
}

// The controller container install runs carries the instance label but
// is no pod: get pods and get containers leave it out rather than call it
// an orphan.
func TestGetLeavesTheInstalledControllerOut(t *testing.T) {
	f := startFakeDaemon(t)
	dir := t.TempDir()
	f.add(dockerx.ControllerName("t1"), "running", map[string]string{
		dockerx.LabelInstance: "t1", dockerx.LabelRole: dockerx.RoleController})
	for _, kind := range []string{"pods", "containers"} {
		out, _, err := run(t, "", "--state-dir", dir, "--instance", "t1", "get", kind)
		if err != nil || strings.Contains(out, "controller") {
			t.Errorf("get %s: %v\n%s", kind, err, out)
		}
	}
}

// A controller that exits is restarted by its policy (unless-stopped),
// and Docker reports it as Running and Restarting meanwhile: install
// fails at once with its last log lines, as for one that stopped, and
// stops it rather than leave it restarting forever; it does not wait out
// --timeout and then blame another controller's lock.
func TestInstallFailsAtOnceOnARestartingController(t *testing.T) {
	f := startFakeDaemon(t)
	name := dockerx.ControllerName("t1")
	id := f.add(name, "restarting", map[string]string{dockerx.LabelInstance: "t1", dockerx.LabelRole: dockerx.RoleController},
		"error: open state directory: permission denied")
	cli, err := dockerx.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	probe := &helperapi.ProbeSpec{Kind: "http", Address: "127.0.0.1", Port: 9477, Scheme: "HTTP", Path: "/readyz", TimeoutMillis: 2000}
	for _, p := range []*helperapi.ProbeSpec{probe, nil} {
		// The timeout only bounds the wait of a wrong implementation.
		err = waitControllerReady(context.Background(), cli, id, name, p, 3*time.Second)
		if err == nil || strings.Contains(err.Error(), "did not report ready") ||
			!strings.Contains(err.Error(), "restarting") || !strings.Contains(err.Error(), "permission denied") {
			t.Errorf("probe %v: error %v, want one at once naming the restarts and the log", p != nil, err)
		}
		if st := f.stateOf(name); st != "exited" {
			t.Errorf("probe %v: the controller container is left %s, want it stopped", p != nil, st)
		}
		f.setStateOf(name, "restarting")
	}
}

// A --manifests path that does not exist cannot be mounted: Docker
// refuses it only at create, after a re-install removed the running
// controller. install refuses it first and leaves the controller running.
func TestInstallRefusesAMissingManifestsPathBeforeTouchingTheController(t *testing.T) {
	f := startFakeDaemon(t)
	name := dockerx.ControllerName("t1")
	f.add(name, "running", map[string]string{dockerx.LabelInstance: "t1", dockerx.LabelRole: dockerx.RoleController})
	missing := filepath.Join(t.TempDir(), "k8s")
	_, _, err := run(t, "", "--state-dir", t.TempDir(), "--instance", "t1", "install", "--", "--manifests", missing)
	if err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("error %v, want one naming %s", err, missing)
	}
	if st := f.stateOf(name); st != "running" {
		t.Errorf("the running controller is left %q", st)
	}
}

// The controller acts until it is removed: a replica it creates between
// uninstall's listing and its removal (an in-flight create, a replacement)
// is the instance's too, and uninstall removes it rather than leave it
// behind and report everything removed.
func TestUninstallRemovesWhatTheControllerMadeBeforeItWasRemoved(t *testing.T) {
	f := startFakeDaemon(t)
	ctrl := dockerx.ControllerName("t1")
	f.add(ctrl, "running", map[string]string{dockerx.LabelInstance: "t1", dockerx.LabelRole: dockerx.RoleController})
	f.addContainer("t1_web-abc-1", "t1", "web", nil)
	f.addContainer("t2_web-abc-1", "t2", "web", nil)
	f.setOnRemove(func(name string) {
		if name == ctrl {
			f.addContainer("t1_web-abc-2", "t1", "web", nil)
		}
	})
	out, _, err := run(t, "", "--state-dir", t.TempDir(), "--instance", "t1", "uninstall")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if n := f.running(dockerx.LabelInstance, "t1"); n != 0 {
		t.Errorf("%d containers of the instance left:\n%s", n, out)
	}
	if n := f.running(dockerx.LabelInstance, "t2"); n != 1 {
		t.Errorf("another instance's container removed:\n%s", out)
	}
	if !strings.Contains(out, "container t1_web-abc-2 removed") {
		t.Errorf("output:\n%s", out)
	}
}

// A create a stopped controller sent may land in the daemon after
// uninstall listed the instance (the daemon completes a request whose
// client went away): its container then holds the instance network, whose
// removal fails. Uninstall lists again, removes it, and removes the
// network then.
func TestUninstallRemovesAContainerCreatedAfterItsListing(t *testing.T) {
	f := startFakeDaemon(t)
	f.addContainer("t1_web-abc-1", "t1", "web", nil)
	f.mu.Lock()
	f.networks["dockctl_t1"] = &network.Inspect{ID: fmt.Sprintf("%064x", 0xa1), Name: "dockctl_t1",
		Labels: map[string]string{dockerx.LabelInstance: "t1", dockerx.LabelRole: dockerx.RoleNetwork}}
	f.mu.Unlock()
	landed := false
	f.setOnRemove(func(name string) {
		if !landed {
			landed = true
			f.add("t1_web.default_svc", "created", map[string]string{dockerx.LabelInstance: "t1", dockerx.LabelRole: dockerx.RoleProxy})
		}
	})
	out, _, err := run(t, "", "--state-dir", t.TempDir(), "--instance", "t1", "uninstall")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	f.mu.Lock()
	left := len(f.ctrs)
	f.mu.Unlock()
	if left != 0 {
		t.Errorf("%d containers left:\n%s", left, out)
	}
	if !strings.Contains(out, "container t1_web.default_svc removed") || !strings.Contains(out, "network dockctl_t1 removed") {
		t.Errorf("output:\n%s", out)
	}
}

// A stopped controller's create that lands after uninstall's listing may
// be the instance network's (the controller makes it again when a sweep
// removed it) rather than a container's: nothing then fails for the
// retry to catch, and uninstall must not report everything removed while
// the network is left.
func TestUninstallRemovesANetworkCreatedAfterItsListing(t *testing.T) {
	f := startFakeDaemon(t)
	f.addContainer("t1_web-abc-1", "t1", "web", nil)
	var once sync.Once // the late create lands once, after the listing
	f.setOnRemove(func(name string) {
		once.Do(func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.networks["dockctl_t1"] = &network.Inspect{ID: fmt.Sprintf("%064x", 0xa2), Name: "dockctl_t1",
				Labels: map[string]string{dockerx.LabelInstance: "t1", dockerx.LabelRole: dockerx.RoleNetwork}}
		})
	})
	out, _, err := run(t, "", "--state-dir", t.TempDir(), "--instance", "t1", "uninstall")
	f.mu.Lock()
	left := f.networks["dockctl_t1"] != nil // the default bridge always exists
	f.mu.Unlock()
	if err == nil && left {
		t.Errorf("uninstall succeeded with the instance network left:\n%s", out)
	}
}

// The controller judges a hostPath by resolving it under an
// --allow-host-path prefix on its own filesystem, and refuses what it
// cannot resolve: in its container the prefixes must be there, at their
// own paths, or `install -- --allow-host-path=/srv/data` allows nothing.
// Each prefix that exists on the host is mounted read-only, once, unless
// it is already mounted (the state directory, the socket, a --manifests
// path) or cannot be (/, the kernel's /proc, /sys and /dev, /state under
// a state volume).
func TestInstallMountsTheAllowedHostPathPrefixes(t *testing.T) {
	data, k8s, state := t.TempDir(), t.TempDir(), t.TempDir()
	missing := filepath.Join(data, "missing")
	prefixes := strings.Join([]string{data, missing, "/", "/proc", "/sys/fs", "/dev", k8s, state, "/var/run/docker.sock", "/state", data}, ",")
	cf, err := parseControllerFlags([]string{"--manifests", k8s, "--allow-host-path=" + prefixes}, "/")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := readOnlyMounts(cf, state, "/var/run/docker.sock"), []string{k8s, data}; !reflect.DeepEqual(got, want) {
		t.Errorf("state directory: read-only mounts %q, want %q", got, want)
	}
	if got, want := readOnlyMounts(cf, "", "/var/run/docker.sock"), []string{k8s, data, state}; !reflect.DeepEqual(got, want) {
		t.Errorf("state volume: read-only mounts %q, want %q", got, want)
	}
}

// What `dockctl controller` refuses as it starts, install refuses before
// it touches anything: in a container the mistake would be a controller
// that exits at once, and a re-install would have replaced a good one.
func TestParseControllerFlagsRefusesWhatTheControllerRefusesAtStart(t *testing.T) {
	for _, tt := range []struct{ args, want string }{
		{"--workers=0", "--workers 0"},
		{"--resync-period=0s", "--resync-period"},
		{"--max-replicas=0", "--max-replicas"},
		{"--service-address=localhost", "not an IP address"},
		{"--log-format=xml", "--log-format"},
		{"--allow-host-path=srv/data", "absolute"},
		{"--allow-host-ports=http", "http"},
		{"--container-log-max-size=10m", "--container-log-max-size"},
		{"--container-log-max-files=0", "--container-log-max-files"},
		{"--subnet=10.0.0.0", "10.0.0.0"},
		{"--manifests=/srv/k8s --manifests=/srv/k8s/apps", "overlap"},
	} {
		if _, err := parseControllerFlags(strings.Split(tt.args, " "), "/"); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one naming %q", tt.args, err, tt.want)
		}
	}
}

// The controller must write the state directory and reach the socket as
// their owner. A rootless daemon maps container root onto the user who
// runs it (and container uid 1000 onto a subordinate uid, which owns
// neither); a userns-remap daemon shifts every container user, root
// included, so only the host's user namespace gives the invoking user.
func TestControllerIdentityFollowsTheDaemonsUserNamespace(t *testing.T) {
	for _, tt := range []struct {
		name        string
		ns          dockerx.UserNamespace
		stateVolume bool
		wantUser    string
		wantGroups  []string
		wantHost    bool
	}{
		{"plain, state directory", dockerx.UserNamespace{}, false, "1000:1000", []string{"998"}, false},
		{"plain, state volume", dockerx.UserNamespace{}, true, "0:0", []string{"998"}, false},
		{"rootless, state directory", dockerx.UserNamespace{Rootless: true}, false, "0:0", nil, false},
		{"rootless, state volume", dockerx.UserNamespace{Rootless: true}, true, "0:0", nil, false},
		{"userns-remap, state directory", dockerx.UserNamespace{Remapped: true}, false, "1000:1000", []string{"998"}, true},
		{"userns-remap, state volume", dockerx.UserNamespace{Remapped: true}, true, "0:0", []string{"998"}, true},
	} {
		user, groups, host := controllerIdentity(tt.ns, tt.stateVolume, 1000, 1000, 998, true)
		if user != tt.wantUser || !reflect.DeepEqual(groups, tt.wantGroups) || host != tt.wantHost {
			t.Errorf("%s: %s %v host namespace %v; want %s %v %v", tt.name, user, groups, host, tt.wantUser, tt.wantGroups, tt.wantHost)
		}
	}
}

// The controller protects the state directory and DOCKER_HOST's socket
// from hostPath mounts by the paths it sees. Mounted at a symbolic link's
// path, they are plain paths in its container, and a pod could mount the
// link's target (reachable through an allowed prefix) unprotected; so both
// are mounted at their resolved paths. Docker's default socket stays
// where the client looks for it.
func TestInstallMountsTheStateDirectoryAndSocketAtTheirResolvedPaths(t *testing.T) {
	real, links := t.TempDir(), t.TempDir()
	real, err := filepath.EvalSymlinks(real) // a temporary directory may itself be under a link
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(real, "state"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(real, "docker.sock"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"state", "docker.sock"} {
		if err := os.Symlink(filepath.Join(real, name), filepath.Join(links, name)); err != nil {
			t.Fatal(err)
		}
	}
	dir, sock := resolveMountPaths(filepath.Join(links, "state"), filepath.Join(links, "docker.sock"))
	if dir != filepath.Join(real, "state") || sock != filepath.Join(real, "docker.sock") {
		t.Errorf("got %s %s, want the links' targets under %s", dir, sock, real)
	}
	if dir, sock := resolveMountPaths("", "/var/run/docker.sock"); dir != "" || sock != "/var/run/docker.sock" {
		t.Errorf("state volume, default socket: got %q %q", dir, sock)
	}
}

// Docker mounts a bind source with its links resolved: an allowed prefix
// that is (or passes through) a symbolic link would show in the
// controller's container as a plain directory at the link's path, hiding
// where its paths lead (the state directory, say) from the gate. Such a
// prefix is not mounted: nothing below it is allowed, as before.
func TestInstallDoesNotMountAnAllowedPrefixThroughALink(t *testing.T) {
	real, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	state, link, data := filepath.Join(real, "state"), filepath.Join(real, "link"), filepath.Join(real, "data")
	for _, d := range []string{state, data} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(state, link); err != nil {
		t.Fatal(err)
	}
	cf, err := parseControllerFlags([]string{"--allow-host-path=" + link + "," + filepath.Join(link, "sub") + "," + data}, "/")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := readOnlyMounts(cf, state, "/var/run/docker.sock"), []string{data}; !reflect.DeepEqual(got, want) {
		t.Errorf("read-only mounts %q, want %q", got, want)
	}
}

// uninstall --dry-run names what it would remove, the controller
// included, and removes nothing: not even the controller, which the real
// run removes before listing again.
func TestUninstallDryRunRemovesNothing(t *testing.T) {
	f := startFakeDaemon(t)
	ctrl := dockerx.ControllerName("t1")
	f.add(ctrl, "running", map[string]string{dockerx.LabelInstance: "t1", dockerx.LabelRole: dockerx.RoleController})
	f.addContainer("t1_web-abc-1", "t1", "web", nil)
	f.setOnRemove(func(name string) { t.Errorf("container %s removed by a dry run", name) })
	out, _, err := run(t, "", "--state-dir", t.TempDir(), "--instance", "t1", "uninstall", "--dry-run")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := "container " + ctrl + " would be removed (dry run)\ncontainer t1_web-abc-1 would be removed (dry run)\n"
	if out != want || f.running(dockerx.LabelInstance, "t1") != 2 {
		t.Errorf("output %q, want %q; %d running", out, want, f.running(dockerx.LabelInstance, "t1"))
	}
}
