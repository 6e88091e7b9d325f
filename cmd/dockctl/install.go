package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/internal/helperapi"
	"github.com/dockctl/dockctl/manifests"
)

// installOptions are install's own flags; the controller's follow `--`.
type installOptions struct {
	// stateVolume is a named volume for the state instead of the state
	// directory (--state-volume).
	stateVolume string
	timeout     time.Duration
}

func newInstallCommand(g *globalOptions) *cobra.Command {
	o := &installOptions{}
	cmd := &cobra.Command{
		Use:   "install [flags] [-- CONTROLLER-FLAGS...]",
		Short: "Run the instance's controller as a container, from this binary (nothing is pulled or built)",
		Long: "Runs `dockctl controller` for the instance as the container dockctl-INSTANCE-controller\n" +
			"(restart unless-stopped, no network, read-only root, no capability, no-new-privileges, the Docker\n" +
			"socket mounted), from an image of this very binary loaded into Docker, and waits until it reports\n" +
			"ready. The state directory (--state-dir) is mounted at its own path, so that apply, get and the\n" +
			"other commands on this host work on what the controller keeps; --state-volume keeps it in a named\n" +
			"volume instead. The controller's flags follow `--`; --manifests directories are mounted read-only.\n" +
			"Running install again with the same binary and flags changes nothing; with another binary or other\n" +
			"flags it replaces the controller container (no workload is touched).",
		Example: `  # Run the default instance's controller, publishing Services on 127.0.0.1
  dockctl install -- --service-address 127.0.0.1

  # Keep a git checkout applied, allowing bind mounts under /srv/data
  dockctl install -- --manifests /srv/k8s --allow-host-path=/srv/data

  # Another instance, its state in a named volume
  dockctl --instance staging install --state-volume dockctl-staging-state`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 && cmd.ArgsLenAtDash() != 0 {
				return usageErrorf(cmd, "unexpected argument %q: the controller's flags follow --, as in: dockctl install -- --service-address 127.0.0.1", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runInstall(cmd, g, o, args)
		},
	}
	cmd.Flags().StringVar(&o.stateVolume, "state-volume", "", "keep the state in this named volume (created, labelled with the instance) instead of the state directory; the CLI on this host then cannot read it")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 2*time.Minute, "how long to wait for the controller to report ready")
	return cmd
}

// controllerFlags is what install makes of the controller's flags.
type controllerFlags struct {
	// args are the flags as the container gets them: each given flag
	// once, as --name=value, sorted by name (a list flag once per value),
	// so that the same flags in another order are the same container.
	args []string
	// manifests are the --manifests paths, absolute: mounted read-only.
	manifests []string
	// hostPaths are the --allow-host-path prefixes (readOnlyMounts).
	hostPaths []string
	// probe is the controller's /readyz as seen inside its container;
	// nil when --metrics-addr is empty.
	probe *helperapi.ProbeSpec
}

// parseControllerFlags checks the controller's flags as `dockctl
// controller` would parse them (a mistake is install's error, not a
// container that keeps restarting), and makes its --manifests paths
// absolute, relative to cwd.
func parseControllerFlags(args []string, cwd string) (controllerFlags, error) {
	o := &controllerOptions{}
	cmd := newControllerCommandWith(&globalOptions{}, o)
	fs := cmd.Flags()
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		return controllerFlags{}, fmt.Errorf("controller flags: %w", err)
	}
	if err := cmd.Args(cmd, fs.Args()); err != nil {
		return controllerFlags{}, fmt.Errorf("controller flags: %w", err)
	}
	var cf controllerFlags
	for i, p := range o.manifests {
		if !filepath.IsAbs(p) {
			p = filepath.Join(cwd, p)
		}
		o.manifests[i] = filepath.Clean(p)
	}
	// What the controller would refuse as it starts: in a container, an
	// exit at once.
	if err := o.check(); err != nil {
		return controllerFlags{}, fmt.Errorf("controller flags: %w", err)
	}
	cf.manifests = o.manifests
	cf.hostPaths = o.allow.hostPaths
	fs.Visit(func(f *pflag.Flag) {
		if f.Name == "manifests" {
			for _, p := range cf.manifests {
				cf.args = append(cf.args, "--manifests="+p)
			}
			return
		}
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				cf.args = append(cf.args, "--"+f.Name+"="+v)
			}
			return
		}
		cf.args = append(cf.args, "--"+f.Name+"="+f.Value.String())
	})
	if o.metricsAddr != "" {
		host, port, err := net.SplitHostPort(o.metricsAddr)
		if err != nil {
			return controllerFlags{}, fmt.Errorf("controller flags: --metrics-addr %q: %w", o.metricsAddr, err)
		}
		n, err := strconv.Atoi(port)
		if err != nil || n <= 0 || n > 65535 {
			return controllerFlags{}, fmt.Errorf("controller flags: --metrics-addr %q: install needs a fixed port to probe /readyz", o.metricsAddr)
		}
		if host == "" || host == "0.0.0.0" || host == "::" {
			host = "127.0.0.1"
		}
		cf.probe = &helperapi.ProbeSpec{Kind: "http", Address: host, Port: n, Scheme: "HTTP", Path: "/readyz", TimeoutMillis: 2000}
	}
	return cf, nil
}

// resolveMountPaths are the state directory ("" for none) and the socket
// as install mounts them: with their symbolic links resolved, since the
// controller protects them from hostPath mounts by the paths it sees, and
// in its container a link's path is a plain one, its target unprotected.
// Docker's default socket stays where the client looks for it (/var/run
// is a system path, protected whole). A path that cannot be resolved is
// left as it is: mounting it fails as it would have.
func resolveMountPaths(stateDir, socket string) (string, string) {
	if stateDir != "" {
		if r, err := filepath.EvalSymlinks(stateDir); err == nil {
			stateDir = r
		}
	}
	if socket != "/var/run/docker.sock" {
		if r, err := filepath.EvalSymlinks(socket); err == nil {
			socket = r
		}
	}
	return stateDir, socket
}

// controllerIdentity is the user the controller container runs as, its
// extra groups and whether it needs the host's user namespace: with a
// state volume root (the volume's owner), else the invoking user (the
// state directory's), with the socket's group. A rootless daemon maps
// container root onto the user running it, who owns the socket and the
// state directory (any other container uid is a subordinate one, owning
// neither); a userns-remap daemon shifts every container user, so the
// controller runs in the host's user namespace.
func controllerIdentity(ns dockerx.UserNamespace, stateVolume bool, uid, gid, socketGID int, socketGroup bool) (user string, groups []string, usernsHost bool) {
	if ns.Rootless {
		return "0:0", nil, false
	}
	user = fmt.Sprintf("%d:%d", uid, gid)
	if stateVolume {
		user = "0:0"
	}
	if socketGroup {
		groups = []string{strconv.Itoa(socketGID)}
	}
	return user, groups, ns.Remapped
}

// readOnlyMounts are the host paths mounted read-only in the controller
// container, each at its own path: the --manifests paths, then the
// --allow-host-path prefixes that exist here. The controller judges a
// hostPath by resolving it on its own filesystem and refuses what it
// cannot resolve, so a prefix absent from its container allows nothing.
// A prefix already mounted (the state directory, the socket, a manifests
// path) is not mounted twice, and one that cannot be mounted over the
// container's own (/, /proc, /sys, /dev, /state for a state volume) or
// that passes through a symbolic link is left out: nothing below it is
// allowed, as the controller warns.
func readOnlyMounts(cf controllerFlags, stateDir, socket string) []string {
	out := append([]string(nil), cf.manifests...)
	taken := map[string]bool{socket: true}
	if stateDir != "" {
		taken[stateDir] = true
	} else {
		taken[dockerx.ControllerStateMount] = true
	}
	for _, p := range cf.manifests {
		taken[p] = true
	}
	for _, p := range cf.hostPaths {
		p = filepath.Clean(p)
		if taken[p] || !filepath.IsAbs(p) || p == "/" || within(p, "/proc") || within(p, "/sys") || within(p, "/dev") {
			continue
		}
		// Docker resolves a bind source's links; the target would be a
		// plain directory at the link's path, hiding from the gate where
		// its paths lead. Such a prefix is not mounted (nor one missing).
		if r, err := filepath.EvalSymlinks(p); err != nil || r != p {
			continue
		}
		taken[p] = true
		out = append(out, p)
	}
	return out
}

// hostSocket is the Docker socket install mounts into the controller: the
// one DOCKER_HOST names, else Docker's default. A daemon reached over TCP
// or SSH has no socket here to give the controller.
func hostSocket(dockerHost string) (string, error) {
	if dockerHost == "" {
		return "/var/run/docker.sock", nil
	}
	if s := manifests.DockerSocket(dockerHost); s != "" {
		return s, nil
	}
	return "", fmt.Errorf("DOCKER_HOST=%s is not a unix socket: install runs the controller next to the daemon with its socket; run install on the daemon's host", dockerHost)
}

func runInstall(cmd *cobra.Command, g *globalOptions, o *installOptions, args []string) error {
	start := time.Now()
	out := cmd.OutOrStdout()
	if err := validInstance(g.instance); err != nil {
		return err
	}
	cwd, err := os.Getwd()
	if err != nil {
		return err
	}
	cf, err := parseControllerFlags(args, cwd)
	if err != nil {
		return err
	}
	// Docker refuses a missing bind source only at create, when a
	// re-install has already removed the running controller.
	for _, p := range cf.manifests {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("controller flags: --manifests %s cannot be mounted: %w", p, err)
		}
	}
	socket, err := hostSocket(os.Getenv("DOCKER_HOST"))
	if err != nil {
		return err
	}
	spec := dockerx.ControllerSpec{
		Instance: g.instance, Version: currentVersion().version, Args: cf.args,
		Socket: socket, Probe: cf.probe,
	}
	socketGID, socketGroup := fileGroup(socket)
	ctx := cmd.Context()
	// install says itself what it loaded and made: the client's own
	// notices are for the controller's log, only its warnings show here.
	quiet := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	cli, err := g.docker(ctx, dockerx.WithLogger(quiet))
	if err != nil {
		return err
	}
	defer cli.Close()
	var where string
	if o.stateVolume != "" {
		// Root owns a new volume: the controller runs as root there, with
		// no capability, so it writes the volume and the socket as their
		// owner and nothing else.
		if err := cli.EnsureStateVolume(ctx, g.instance, o.stateVolume); err != nil {
			return err
		}
		spec.StateVolume = o.stateVolume
		where = fmt.Sprintf("state volume %s", o.stateVolume)
	} else {
		dir, err := filepath.Abs(g.stateDir)
		if err != nil {
			return err
		}
		g.stateDir = dir
		// Created (private) and recorded as the instance's before the
		// controller sees it, as apply would; the controller runs as this
		// user, so the directory stays this user's.
		if _, err := g.openStore(); err != nil {
			return err
		}
		spec.StateDir = dir
		where = fmt.Sprintf("state directory %s", dir)
	}
	ns, err := cli.UserNamespace(ctx)
	if err != nil {
		return err
	}
	spec.User, spec.GroupAdd, spec.UsernsHost = controllerIdentity(ns, spec.StateVolume != "",
		os.Getuid(), os.Getgid(), socketGID, socketGroup)
	spec.StateDir, spec.Socket = resolveMountPaths(spec.StateDir, spec.Socket)
	spec.ReadOnly = readOnlyMounts(cf, spec.StateDir, spec.Socket)
	ref, err := cli.EnsureControllerImage(ctx, g.instance)
	if err != nil {
		return err
	}
	spec.Image = ref
	fmt.Fprintf(out, "image %s: dockctl %s, loaded from this binary\n", ref, spec.Version)
	id, action, err := cli.EnsureController(ctx, spec)
	if err != nil {
		return err
	}
	name := dockerx.ControllerName(g.instance)
	fmt.Fprintf(out, "container %s %s (%s)\n", name, action, where)
	if len(cf.args) > 0 {
		fmt.Fprintf(out, "controller flags: %s\n", strings.Join(cf.args, " "))
	}
	if err := waitControllerReady(ctx, cli, id, name, cf.probe, o.timeout); err != nil {
		return err
	}
	if removed, err := cli.RemoveOtherControllerImages(ctx, g.instance, ref); err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: %v\n", err)
	} else {
		for _, r := range removed {
			fmt.Fprintf(out, "image %s removed (an earlier controller's)\n", r)
		}
	}
	how := "running"
	if cf.probe != nil {
		how = "ready"
	}
	fmt.Fprintf(out, "controller of instance %q %s after %s; logs: docker logs %s\n", g.instance, how, time.Since(start).Round(100*time.Millisecond), name)
	return nil
}

// fileGroup is the group owning path (the socket's, to give the
// controller as an extra group).
func fileGroup(path string) (int, bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Gid), true
}

// installPoll is how often install looks at the controller while it
// waits for it.
const installPoll = 250 * time.Millisecond

// waitControllerReady waits until the controller container id answers
// its /readyz (probe; nil: until it runs), by exec'ing the probe in the
// container, whose network namespace holds the address. /readyz answers
// once the controller holds the state directory's lock and reaches the
// daemon. A container that stops meanwhile fails at once, with its last
// log lines; so does one that exited and that its restart policy runs
// again (Restarting, or a RestartCount grown since the first look), which
// is stopped first: a controller that cannot start would otherwise
// restart forever.
func waitControllerReady(ctx context.Context, cli *dockerx.Client, id, name string, probe *helperapi.ProbeSpec, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var probeCmd []string
	if probe != nil {
		p, err := helperapi.Marshal(probe)
		if err != nil {
			return err
		}
		probeCmd = []string{helperapi.Binary, "helper", helperapi.ModeProbe, "--spec", p}
	}
	firstCount := -1
	for {
		st, err := cli.InspectController(ctx, id)
		if err == nil && firstCount < 0 {
			firstCount = st.RestartCount
		}
		switch {
		case err != nil && ctx.Err() == nil:
			return err
		case err == nil && (st.Restarting || st.RestartCount > firstCount):
			// It exited and its restart policy runs it again: as a
			// controller that stopped, but stopped here, so that it does
			// not restart forever (unless-stopped keeps it stopped).
			logs := lastLogs(cli, id)
			if err := cli.StopContainer(context.WithoutCancel(ctx), id, 10*time.Second); err != nil {
				return fmt.Errorf("controller container %s exited and is restarting (exit code %d), and stopping it failed: %w:\n%s", name, st.ExitCode, err, logs)
			}
			return fmt.Errorf("controller container %s exited and was restarting (exit code %d); install stopped it (docker start %s after the fix, or install again):\n%s", name, st.ExitCode, name, logs)
		case err == nil && !st.Running && st.Status != "created":
			return fmt.Errorf("controller container %s stopped (%s, exit code %d):\n%s", name, st.Status, st.ExitCode, lastLogs(cli, id))
		case err == nil && st.Running && probeCmd == nil:
			return nil
		case err == nil && st.Running:
			if code, err := cli.Exec(ctx, id, probeCmd, 5*time.Second); err == nil && code == helperapi.ExitOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("controller container %s did not report ready within %s (another controller holding the state directory's lock makes it wait; see docker logs %s):\n%s",
					name, timeout, name, lastLogs(cli, id))
			}
			return ctx.Err()
		case <-time.After(installPoll):
		}
	}
}

// lastLogs is the end of a container's log, for an error.
func lastLogs(cli *dockerx.Client, id string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rc, err := cli.Logs(ctx, id, false, "20")
	if err != nil {
		return fmt.Sprintf("(its log: %v)", err)
	}
	defer rc.Close()
	b, _ := io.ReadAll(io.LimitReader(rc, 64<<10))
	return string(b)
}

// uninstallOptions are uninstall's flags.
type uninstallOptions struct {
	keepData, dryRun bool
}

func newUninstallCommand(g *globalOptions) *cobra.Command {
	o := &uninstallOptions{}
	cmd := &cobra.Command{
		Use:   "uninstall",
		Short: "Remove every Docker object of the instance: its controller, workloads, network, images and volumes",
		Long: "Removes every container (the controller first, then workloads and helpers), network, image and\n" +
			"volume that carries the instance's label io.dockctl.instance, and nothing else; volumes (claims,\n" +
			"the state volume) stay with --keep-data. It asks nothing. The state directory is a directory of\n" +
			"this host, not a Docker object: it stays. A controller not run by install (dockctl controller in\n" +
			"a shell or a unit) must be stopped first, or it re-creates the workloads.",
		Example: `  # List what would be removed
  dockctl uninstall --dry-run

  # Remove the staging instance, keeping its volumes
  dockctl --instance staging uninstall --keep-data`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runUninstall(cmd, g, o)
		},
	}
	cmd.Flags().BoolVar(&o.keepData, "keep-data", false, "keep the instance's volumes (claims' data, the state volume)")
	cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "only list what would be removed")
	return cmd
}

// uninstallSelection is what uninstall removes of the instance's objects
// (all of them, the volumes only without keepData) and what it keeps.
func uninstallSelection(objs []dockerx.InstanceObject, keepData bool) (remove, keep []dockerx.InstanceObject) {
	for _, o := range objs {
		if keepData && o.Kind == dockerx.KindVolume {
			keep = append(keep, o)
			continue
		}
		remove = append(remove, o)
	}
	return remove, keep
}

func runUninstall(cmd *cobra.Command, g *globalOptions, o *uninstallOptions) error {
	if err := validInstance(g.instance); err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	ctx := cmd.Context()
	cli, err := g.docker(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	objs, err := cli.ListInstanceObjects(ctx, g.instance)
	if err != nil {
		return err
	}
	var errs []error
	found := len(objs) > 0
	// attempted are the controllers removed (or not) before the others.
	attempted := map[string]bool{}
	if !o.dryRun {
		// The controller acts until it is gone: what it made between the
		// listing and its removal is found by listing again after it.
		var stopped bool
		for _, obj := range objs {
			if obj.Kind != dockerx.KindContainer || obj.Role != dockerx.RoleController {
				continue
			}
			attempted[obj.ID] = true
			if err := cli.RemoveInstanceObject(ctx, obj); err != nil {
				errs = append(errs, err)
				continue
			}
			fmt.Fprintf(out, "%s %s removed\n", obj.Kind, obj.Name)
			stopped = true
		}
		if stopped {
			if objs, err = cli.ListInstanceObjects(ctx, g.instance); err != nil {
				return errors.Join(append(errs, err)...)
			}
		}
	}
	remove, keep := uninstallSelection(objs, o.keepData)
	failed := map[string]error{} // by object ID, in the order tried
	var order []string
	removeAll := func(remove []dockerx.InstanceObject) {
		for _, obj := range remove {
			if attempted[obj.ID] && failed[obj.ID] == nil {
				continue
			}
			attempted[obj.ID] = true
			if o.dryRun {
				fmt.Fprintf(out, "%s %s would be removed (dry run)\n", obj.Kind, obj.Name)
				continue
			}
			if _, ok := failed[obj.ID]; !ok {
				order = append(order, obj.ID)
			}
			if err := cli.RemoveInstanceObject(ctx, obj); err != nil {
				failed[obj.ID] = err
				continue
			}
			failed[obj.ID] = nil
			fmt.Fprintf(out, "%s %s removed\n", obj.Kind, obj.Name)
		}
	}
	removeAll(remove)
	if !o.dryRun {
		// A create a stopped controller sent may still land in the daemon
		// after the listing (the daemon completes a request whose client
		// went away): a container that then holds the network or the
		// helper image, or a network or volume of its own. Listed once
		// more, whatever is new is removed and what failed is tried
		// again.
		if again, err := cli.ListInstanceObjects(ctx, g.instance); err == nil {
			again, _ = uninstallSelection(again, o.keepData)
			removeAll(again)
		}
	}
	for _, id := range order {
		if failed[id] != nil {
			errs = append(errs, failed[id])
		}
	}
	for _, obj := range keep {
		fmt.Fprintf(out, "%s %s kept (--keep-data)\n", obj.Kind, obj.Name)
	}
	if !found {
		fmt.Fprintf(out, "No Docker object carries the label %s=%s\n", dockerx.LabelInstance, g.instance)
	}
	return errors.Join(errs...)
}
