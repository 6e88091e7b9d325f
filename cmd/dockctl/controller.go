package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/metrics"
	"github.com/dockctl/dockctl/reconciler"
	"github.com/dockctl/dockctl/reconciler/workloads"
	"github.com/dockctl/dockctl/sourcedir"
	"github.com/dockctl/dockctl/store"
)

// defaultMetricsAddr stays clear of Prometheus' own 9090 and binds loopback:
// exposing it is a decision the operator makes with --metrics-addr.
const defaultMetricsAddr = "127.0.0.1:9477"

// defaultWorkers is --workers' default: how many deployments sync at once.
const defaultWorkers = 8

type controllerOptions struct {
	resync       time.Duration
	metricsAddr  string
	pruneOrphans bool
	workers      int
	crashBase    time.Duration
	crashMax     time.Duration
	settle       time.Duration
	logFormat    string
	maxReplicas  int32
	maxGrace     time.Duration
	allow        allowOptions
	// Log rotation of the replicas, as kubelet's containerLogMaxSize and
	// containerLogMaxFiles.
	containerLogMaxSize  string
	containerLogMaxFiles int
	// serviceAddress is where published Services bind (docs/design.md §10).
	serviceAddress string
	// gateway is the gateway's flags (gateway_flags.go).
	gateway gatewayOptions
	// subnet is the instance network's subnet when the controller creates
	// it; "" chooses a free one.
	subnet string
	// The manifests directories (docs/design.md §14): applied as `apply -f`
	// would, what leaves them deleted.
	manifests       []string
	manifestsResync time.Duration
	allowEmpty      bool
	allowEmptyAfter time.Duration
	forceConflicts  bool
	skipUnsupported bool
	// stalePortForward is how old a port-forward helper that is not
	// running must be for the sweep to remove it.
	stalePortForward time.Duration
}

// allowOptions are the --allow-* flags.
type allowOptions struct {
	privileged, hostNamespaces, hostRoot bool
	hostPaths, capabilities              []string
	networks, hostPorts                  []string
}

func newControllerCommand(g *globalOptions) *cobra.Command {
	return newControllerCommandWith(g, &controllerOptions{})
}

// newControllerCommandWith parses the flags into o (tests read it).
func newControllerCommandWith(g *globalOptions, o *controllerOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run the reconciliation loop (keeps running until SIGTERM or SIGINT)",
		Example: `  # Keep the default instance's containers matching its state directory
  dockctl controller

  # Resync every 10s, serve metrics on port 9464 and remove containers no deployment owns
  dockctl controller --resync-period 10s --metrics-addr :9464 --prune-orphans

  # Keep the state matching a git checkout (read-only is fine): what its files hold is applied, what leaves them deleted
  dockctl controller --manifests /srv/k8s

  # The same, skipping the kinds dockctl does not run (a NetworkPolicy) instead of refusing their files
  dockctl controller --manifests /srv/k8s --skip-unsupported

  # Preview what it would change
  dockctl diff --manifests /srv/k8s --skip-unsupported`,
		Long: "Keeps this instance's containers matching the state directory: creates missing replicas,\n" +
			"starts stopped ones, removes surplus and outdated ones. Stopping it never stops a workload.\n" +
			"Only one controller per state directory acts; a second one waits and takes over if the first dies.",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				// The usual cause: a list flag given its value after a space.
				return fmt.Errorf("unexpected argument %q (give list flags their value with =, e.g. %s=/srv/data)", args[0], manifests.FlagAllowHostPath)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runController(g, o)
		},
	}
	f := cmd.Flags()
	f.DurationVar(&o.resync, "resync-period", 30*time.Second, "full resync interval (catches anything no event reported)")
	f.StringVar(&o.metricsAddr, "metrics-addr", defaultMetricsAddr, "address for /metrics, /healthz and /readyz (empty disables)")
	f.BoolVar(&o.pruneOrphans, "prune-orphans", false, "remove containers whose deployment this state directory never knew")
	// Each sync creates and starts its pods' containers itself (the
	// kubelet's part on a cluster) and waits for the addresses of its
	// namespace's Services (Service variables): with few workers a
	// bundle's deployments would start in waves, as docker-compose does
	// not. Kubernetes' --concurrent-deployment-syncs is 5, for syncs that
	// only write pods.
	f.IntVar(&o.workers, "workers", defaultWorkers, "deployments synced in parallel")
	f.DurationVar(&o.crashBase, "crash-backoff-base", reconciler.DefaultCrashBackoffBase, "first delay before restarting a container that keeps exiting (doubles each time)")
	f.DurationVar(&o.crashMax, "crash-backoff-max", reconciler.DefaultCrashBackoffMax, "longest delay before restarting a container that keeps exiting")
	f.DurationVar(&o.settle, "settle-time", reconciler.DefaultSettleTime, "how long a new container must be ready before it counts as available and a rollout removes an old one for it (the settle rule; 0 turns it off)")
	f.StringVar(&o.logFormat, "log-format", "text", "log format: text|json")
	f.Int32Var(&o.maxReplicas, "max-replicas", reconciler.DefaultMaxReplicas,
		fmt.Sprintf("refuse deployments and ReplicaSets with more replicas, and Jobs with more parallelism, than this (at most %d)", manifests.MaxReplicasLimit))
	f.DurationVar(&o.maxGrace, "max-grace-period", reconciler.DefaultMaxGracePeriod,
		"longest terminationGracePeriodSeconds honoured: a replica is killed this long after its stop signal at the latest")
	f.StringVar(&o.containerLogMaxSize, "container-log-max-size", resource.NewQuantity(dockerx.DefaultContainerLogMaxSize, resource.BinarySI).String(),
		"rotate a replica's log file at this size (a quantity: 10Mi, 1Gi) when the daemon's default log driver is json-file or local; 0 leaves the daemon's log options")
	f.IntVar(&o.containerLogMaxFiles, "container-log-max-files", dockerx.DefaultContainerLogMaxFiles,
		"log files kept per replica, the current one included (with --container-log-max-size)")
	f.StringVar(&o.serviceAddress, "service-address", "0.0.0.0",
		"the host address NodePort and LoadBalancer Services publish their ports on (e.g. 127.0.0.1 to keep them local)")
	o.gateway.addFlags(f)
	f.StringVar(&o.subnet, "subnet", "",
		fmt.Sprintf("subnet of the instance network (%s) when the controller creates it, an IPv4 CIDR of /%d or larger (default: the first of 10.222.0.0/20, 10.222.16.0/20, … that overlaps no Docker network); an existing network keeps its own",
			dockerx.NetworkName("INSTANCE"), reconciler.MaxSubnetPrefix))
	f.StringArrayVar(&o.manifests, "manifests", nil,
		"a manifests directory or file to keep applied, as apply -f would (repeatable, paths that do not overlap; directories recursively): changes are picked up within a second (at most 2s while changes keep arriving, deleting nothing until they stop), objects that leave it are deleted — only those it manages, and none while a file or subdirectory cannot be read or is refused")
	f.DurationVar(&o.manifestsResync, "manifests-resync-period", 2*time.Minute, "with --manifests: re-read the directories this often even without a change event")
	f.BoolVar(&o.allowEmpty, "allow-empty", false, "with --manifests: a directory that became empty or unreadable as a whole deletes its objects (after --allow-empty-after); without it, it deletes nothing. A subdirectory or file that cannot be read never deletes anything")
	f.DurationVar(&o.allowEmptyAfter, "allow-empty-after", time.Minute, "with --allow-empty: how long a directory must stay empty or unreadable before its objects are deleted")
	f.BoolVar(&o.forceConflicts, "force-conflicts", false, "with --manifests: take over the objects the directories declare that another manager (apply) manages, instead of reporting a conflict and leaving them")
	f.BoolVar(&o.skipUnsupported, "skip-unsupported", false, "with --manifests: skip objects of kinds dockctl does not support (a NetworkPolicy, a CronJob), with a warning, an event and a note in get manifests, as apply --skip-unsupported does; without it, a file holding one is refused, and while any file is refused nothing is deleted")
	f.DurationVar(&o.stalePortForward, "stale-port-forward-after", reconciler.DefaultStalePortForwardAfter,
		"remove a port-forward helper that is not running (its CLI stopped before starting it) this long after its creation, with or without --prune-orphans")
	a := &o.allow
	f.BoolVar(&a.privileged, strings.TrimPrefix(manifests.FlagAllowPrivileged, "--"), false,
		"run privileged containers (securityContext.privileged), without seccomp filter (seccompProfile Unconfined), or with sysctls outside Kubernetes' safe set")
	f.BoolVar(&a.hostNamespaces, strings.TrimPrefix(manifests.FlagAllowHostNamespaces, "--"), false,
		"run containers in the host's network or PID namespace (hostNetwork, hostPID)")
	f.StringSliceVar(&a.hostPaths, strings.TrimPrefix(manifests.FlagAllowHostPath, "--"), nil,
		"mount hostPath volumes at or below these host paths (repeatable or comma-separated; without a value: /, any path but the system ones);\n"+
			"symbolic links are resolved where the controller runs, so in a container mount each of them at the same path")
	f.Lookup(strings.TrimPrefix(manifests.FlagAllowHostPath, "--")).NoOptDefVal = "/"
	f.BoolVar(&a.hostRoot, strings.TrimPrefix(manifests.FlagAllowHostRoot, "--"), false,
		"also mount system paths (/, /etc, /proc, /sys, /dev, /root, /boot, /usr, /var/lib/docker, /run, the Docker socket, the state directory…, what is inside them or holds them) when --allow-host-path covers them")
	f.StringSliceVar(&a.capabilities, strings.TrimPrefix(manifests.FlagAllowCapabilities, "--"), nil,
		"capabilities beyond Docker's default set that capabilities.add may name (comma-separated, e.g. NET_ADMIN,SYS_TIME; ALL allows any)")
	f.StringSliceVar(&a.networks, strings.TrimPrefix(manifests.FlagAllowNetworks, "--"), nil,
		fmt.Sprintf("Docker networks the dockctl.io/network annotation may name besides the instance's own (%s; comma-separated, e.g. backend,monitoring)", dockerx.NetworkName("INSTANCE")))
	f.StringSliceVar(&a.hostPorts, strings.TrimPrefix(manifests.FlagAllowHostPorts, "--"), nil,
		"host ports containers may publish with hostPort (comma-separated PORT or FROM-TO, e.g. 8080,9000-9100); without it, a hostPort is refused")
	return cmd
}

// check refuses the flags the controller cannot run with, before
// anything starts; install makes the same checks (parseControllerFlags),
// so that a mistake is its error rather than a container that exits.
func (o *controllerOptions) check() error {
	if o.maxReplicas < 1 || o.maxReplicas > manifests.MaxReplicasLimit {
		return fmt.Errorf("--max-replicas %d: must be between 1 and %d", o.maxReplicas, manifests.MaxReplicasLimit)
	}
	if o.maxGrace <= 0 {
		return fmt.Errorf("--max-grace-period %v: must be positive", o.maxGrace)
	}
	// The controller would replace these by its defaults: a typo must not
	// silently mean something else.
	switch {
	case o.workers < 1:
		return fmt.Errorf("--workers %d: must be at least 1", o.workers)
	case o.resync <= 0:
		return fmt.Errorf("--resync-period %v: must be positive", o.resync)
	case o.crashBase <= 0:
		return fmt.Errorf("--crash-backoff-base %v: must be positive", o.crashBase)
	case o.crashMax < o.crashBase:
		return fmt.Errorf("--crash-backoff-max %v: must be at least --crash-backoff-base (%v)", o.crashMax, o.crashBase)
	case o.settle < 0:
		return fmt.Errorf("--settle-time %v: must be 0 (off) or positive", o.settle)
	case o.manifestsResync <= 0:
		return fmt.Errorf("--manifests-resync-period %v: must be positive", o.manifestsResync)
	case o.allowEmptyAfter < 0:
		return fmt.Errorf("--allow-empty-after %v: must not be negative", o.allowEmptyAfter)
	case o.stalePortForward <= 0:
		return fmt.Errorf("--stale-port-forward-after %v: must be positive", o.stalePortForward)
	}
	if _, err := manifests.ParsePortRanges(o.allow.hostPorts); err != nil {
		return err
	}
	if err := o.gateway.check(); err != nil {
		return err
	}
	for _, n := range o.allow.networks {
		if n == "" {
			return fmt.Errorf("%s: an empty network name", manifests.FlagAllowNetworks)
		}
	}
	if err := checkManifestPaths(o.manifests); err != nil {
		return err
	}
	if err := o.checkServiceNetwork(); err != nil {
		return err
	}
	if o.logFormat != "text" && o.logFormat != "json" {
		return fmt.Errorf("--log-format %q: must be text or json", o.logFormat)
	}
	if err := checkAllowedPaths(slog.New(slog.DiscardHandler), o.allow.hostPaths); err != nil {
		return err
	}
	if _, err := parseLogMaxSize(o.containerLogMaxSize); err != nil {
		return err
	}
	if o.containerLogMaxFiles < 1 {
		return fmt.Errorf("--container-log-max-files=%d: must be at least 1", o.containerLogMaxFiles)
	}
	if o.subnet != "" {
		if _, err := reconciler.ParseSubnet(o.subnet); err != nil {
			return err
		}
	}
	return nil
}

func runController(g *globalOptions, o *controllerOptions) error {
	if err := o.check(); err != nil {
		return err
	}
	for i, p := range o.manifests {
		// The path names the manager its objects record: one spelling.
		o.manifests[i] = filepath.Clean(p)
	}
	var handler slog.Handler
	switch o.logFormat {
	case "text":
		handler = slog.NewTextHandler(os.Stderr, nil)
	case "json":
		handler = slog.NewJSONHandler(os.Stderr, nil)
	}
	log := slog.New(handler)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	// Its warnings, now that there is a log (check refused a relative
	// prefix already).
	if err := checkAllowedPaths(log, o.allow.hostPaths); err != nil {
		return err
	}
	logMaxSize, err := parseLogMaxSize(o.containerLogMaxSize)
	if err != nil {
		return err
	}
	st, err := g.openStore()
	if err != nil {
		return err
	}
	release, err := st.AcquireControllerLock(ctx, func() {
		log.Info("another controller holds the state directory; standing by to take over", "stateDir", st.Dir())
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("acquire controller lock: %w", err)
	}
	defer release()
	log.Info("controller lock acquired", "stateDir", st.Dir(), "instance", g.instance)
	// Only the acting controller beats (docs/design.md §5); a standby does
	// not, so that `apply` never counts on one that acts on nothing.
	setLastPass, stopHeartbeat := startHeartbeat(st, g.instance, o.resync, log) // heartbeat.go
	defer stopHeartbeat()

	cli, err := dockerx.NewClient(dockerx.WithLogger(log), dockerx.WithContainerLogs(logMaxSize, o.containerLogMaxFiles))
	if err != nil {
		return err
	}
	defer cli.Close()
	if err := cli.Ping(ctx); err != nil {
		// Not fatal: the event subscription and the resync retry until the
		// daemon answers, and /readyz says not-ready meanwhile.
		log.Warn("docker daemon not reachable yet; will keep trying", "err", err)
	}

	m := metrics.New()
	// Events are written from the recorder's goroutine, batched; it ends
	// after the controller so that the events of its shutdown are kept.
	events := reconciler.NewStoreRecorder(st, reconciler.StoreRecorderOptions{Logger: log})
	eventsCtx, stopEvents := context.WithCancel(context.Background())
	eventsDone := make(chan struct{})
	go func() { defer close(eventsDone); events.Run(eventsCtx) }()
	defer func() { stopEvents(); <-eventsDone }()
	ctrl := reconciler.New(m.InstrumentDocker(cli), st, reconciler.Options{
		Instance:         g.instance,
		Gateway:          o.gateway.controller(st, events, o.serviceAddress, log),
		ResyncPeriod:     o.resync,
		PruneOrphans:     o.pruneOrphans,
		Workers:          o.workers,
		SelfID:           selfContainerID(),
		CrashBackoffBase: o.crashBase,
		CrashBackoffMax:  o.crashMax,
		SettleTime:       settleOption(o.settle),
		Logger:           log,
		Observer:         m,
		Recorder:         events,
		QueueMetrics:     m.QueueProvider(),
		Allow:            o.allow.policy(st.Dir()),
		MaxReplicas:      o.maxReplicas,
		MaxGracePeriod:   o.maxGrace,
		// Port-forward helpers whose CLI stopped before starting them.
		StalePortForwardAfter: o.stalePortForward,
		// Services' proxies and the DNS server; metrics count the
		// replicas' Docker calls, not these helpers'.
		ServiceDocker:  cli,
		ServiceStore:   st,
		ServiceAddress: o.serviceAddress,
		Subnet:         o.subnet,
		NetworkDocker:  cli,
		FilesDocker:    cli,
		// ConfigMaps, Secrets and claims, as pods refer to them.
		Config: st,
	})
	setLastPass(ctrl.LastPass)

	// The workload kinds beyond Deployment (Job, ReplicaSet, DaemonSet,
	// Pod): one controller frame beside the Deployment controller, with
	// the same allow policy (docs/design.md §17.1), feeding the Services'
	// endpoints tracker with their pods.
	wl := workloads.New(workloads.Config{Instance: g.instance, Docker: workloadDocker{m.InstrumentDocker(cli), cli, cli.EventsWithExits}, Store: st,
		Kinds: workloads.Kinds(), Allow: o.allow.policy(st.Dir()), MaxPods: o.maxReplicas, ResyncPeriod: o.resync, Log: log,
		Endpoints: ctrl.Endpoints(), HostIP: ctrl.HostAddress,
		// Their pods are probed as the Deployment controller's are.
		ProbeRunner: ctrl.ProbeRunner(), ProbeNetwork: ctrl.ProbeNetwork, Recorder: events,
		// Their pods come before the Services' helpers too.
		Starting: ctrl.PodStarts(),
		// Created on the instance network with its resolver, as the
		// Deployment controller's pods are (docs/design.md §10).
		PodNetwork: ctrl.PodNetwork})
	wlCtx, stopWorkloads := context.WithCancel(ctx)
	wlDone := make(chan error, 1)
	go func() { wlDone <- wl.Run(wlCtx) }()
	defer func() {
		stopWorkloads() // also when the Deployment controller returns an error
		if err := <-wlDone; err != nil {
			log.Error("workload controllers", "err", err)
		}
	}()

	if o.metricsAddr != "" {
		// Its own context, so that the server also stops when Run returns
		// with an error rather than on a signal.
		srvCtx, stopServer := context.WithCancel(ctx)
		addr, served, err := metrics.Serve(srvCtx, o.metricsAddr, m.Handler(ctrl.Ready))
		if err != nil {
			stopServer()
			return err
		}
		log.Info("serving metrics and health", "addr", addr)
		defer func() {
			stopServer()
			if err := <-served; err != nil {
				log.Warn("metrics server", "err", err)
			}
		}()
	}
	if len(o.manifests) > 0 {
		// Only the leader applies: a standby reaches this line once it
		// holds the lock.
		opts := o.sourceOptions()
		opts.Metrics, opts.Log, opts.Recorder = m, log, sourceEvents{events}
		syncer := sourcedir.New(st, opts)
		log.Info("applying manifests directories", "paths", o.manifests, "allowEmpty", o.allowEmpty, "skipUnsupported", o.skipUnsupported)
		done := make(chan error, 1)
		go func() { done <- syncer.Run(ctx, o.manifestsResync) }()
		defer func() {
			if err := <-done; err != nil {
				log.Error("manifests directories", "err", err)
			}
		}()
	}
	return ctrl.Run(ctx)
}

// sourceOptions are the manifests directories' options the flags give.
func (o *controllerOptions) sourceOptions() sourcedir.Options {
	return sourcedir.Options{
		Paths: o.manifests, AllowEmpty: o.allowEmpty, AllowEmptyAfter: o.allowEmptyAfter,
		ForceConflicts: o.forceConflicts, SkipUnsupported: o.skipUnsupported,
	}
}

// sourceEvents records the manifests directories' events with the
// controller's own: one event log, one writer.
type sourceEvents struct{ r reconciler.EventRecorder }

func (e sourceEvents) Event(kind, namespace, name, eventType, reason, message string) {
	e.r.Event(store.InvolvedObject{Kind: kind, Namespace: namespace, Name: name}, eventType, reason, message)
}

// checkManifestPaths refuses a --manifests that is empty, or relative
// (a controller's working directory is nobody's business; the manager
// name must say which directory it is), and paths that overlap: a file
// under both DIR and DIR/sub would be read twice, each read refused as
// declaring what the other declares. Paths are compared as given and
// with their symbolic links resolved (as far as they exist).
func checkManifestPaths(paths []string) error {
	for i, p := range paths {
		switch {
		case p == "":
			return fmt.Errorf("--manifests: empty path")
		case !filepath.IsAbs(p):
			return fmt.Errorf("--manifests %q: must be an absolute path", p)
		}
		for _, q := range paths[:i] {
			switch {
			case filepath.Clean(p) == filepath.Clean(q):
				return fmt.Errorf("--manifests %q: given twice", p)
			case overlap(filepath.Clean(p), filepath.Clean(q)) || overlap(resolvePath(p), resolvePath(q)):
				return fmt.Errorf("--manifests %q and %q overlap (one is, or is inside, the other): give paths that do not, each file under one of them only", q, p)
			}
		}
	}
	return nil
}

// overlap: a is b, or either is inside the other.
func overlap(a, b string) bool { return within(a, b) || within(b, a) }

// within: p is dir or inside it (both clean).
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, string(filepath.Separator))+string(filepath.Separator))
}

// resolvePath is p with its symbolic links resolved; of a path that does
// not exist yet (a checkout to come), the part that does.
func resolvePath(p string) string {
	p = filepath.Clean(p)
	var rest []string
	for q := p; ; q = filepath.Dir(q) {
		if r, err := filepath.EvalSymlinks(q); err == nil {
			return filepath.Join(append([]string{r}, rest...)...)
		}
		if q == filepath.Dir(q) {
			return p
		}
		rest = append([]string{filepath.Base(q)}, rest...)
	}
}

// checkServiceNetwork refuses a --service-address that is no IP address,
// before anything starts.
func (o *controllerOptions) checkServiceNetwork() error {
	if _, err := netip.ParseAddr(o.serviceAddress); err != nil {
		return fmt.Errorf("--service-address %q: not an IP address", o.serviceAddress)
	}
	return nil
}

// settleOption maps the flag, where 0 means off, to the option, where 0
// means the default.
func settleOption(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}

// parseLogMaxSize reads --container-log-max-size as kubelet reads
// containerLogMaxSize: a quantity (10Mi), 0 to disable. A size below 1Ki is
// refused: "10m" is 0.01 bytes as a quantity, a likely slip for Docker's
// "10m" (10 MiB).
func parseLogMaxSize(s string) (int64, error) {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, fmt.Errorf("--container-log-max-size=%s: %w (give a size such as 10Mi)", s, err)
	}
	if q.IsZero() {
		return 0, nil
	}
	if n := q.Value(); q.Sign() < 0 || n < 1024 {
		return 0, fmt.Errorf("--container-log-max-size=%s: must be 0 or at least 1Ki (give a size such as 10Mi)", s)
	}
	return q.Value(), nil
}

// policy is what the --allow-* flags grant. Besides the built-in system
// paths, the socket of DOCKER_HOST and the state directory are protected:
// mounting either hands a container the controller's own power.
// The host ports were checked when the flags were read (runController).
func (a allowOptions) policy(stateDir string) manifests.Policy {
	ports, _ := manifests.ParsePortRanges(a.hostPorts)
	return manifests.Policy{
		Privileged:     a.privileged,
		HostNamespaces: a.hostNamespaces,
		HostRoot:       a.hostRoot,
		HostPaths:      a.hostPaths,
		Capabilities:   a.capabilities,
		Networks:       a.networks,
		HostPorts:      ports,
		Host:           hostForPaths(stateDir),
	}
}

// hostFor judges what apply warns about as st's controller would: host
// paths on this machine, and the instance's own network as no privilege.
func hostFor(st *store.Store) manifests.Host {
	h := hostForPaths(st.Dir())
	h.Network = dockerx.NetworkName(st.Instance())
	return h
}

// hostForPaths judges host paths on this machine.
func hostForPaths(stateDir string) manifests.Host {
	return manifests.Host{
		Resolve:   filepath.EvalSymlinks,
		Protected: []string{manifests.DockerSocket(os.Getenv("DOCKER_HOST")), stateDir},
	}
}

// checkAllowedPaths refuses a relative prefix and warns about a prefix
// that does not exist here: nothing below it can be judged, so nothing
// below it will be allowed.
func checkAllowedPaths(log *slog.Logger, prefixes []string) error {
	for _, p := range prefixes {
		if !filepath.IsAbs(p) {
			return fmt.Errorf("%s=%s: must be an absolute path", manifests.FlagAllowHostPath, p)
		}
		if _, err := filepath.EvalSymlinks(p); err != nil {
			log.Warn("an allowed host path prefix cannot be resolved here, so nothing below it is allowed (in a container, mount it at the same path)",
				"flag", manifests.FlagAllowHostPath, "prefix", p, "err", err)
		}
	}
	return nil
}

var containerIDPattern = regexp.MustCompile(`/containers/([0-9a-f]{64})/`)

// selfContainerID finds the controller's own container ID when it runs in
// a container: Docker bind-mounts /etc/hostname from the container's own
// directory, whose path holds the ID. Outside a container it is empty.
func selfContainerID() string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	return selfContainerIDFrom(string(b))
}

// selfContainerIDFrom reads the ID from mountinfo. Only the files Docker
// mounts from the container's own directory count: any other mount that
// happens to come from a containers directory (a log shipper's view of
// another container, say) names someone else.
func selfContainerIDFrom(mountinfo string) string {
	for _, line := range strings.Split(mountinfo, "\n") {
		// Fields: ID, parent, major:minor, root, mount point, ...
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		switch f[4] {
		case "/etc/hostname", "/etc/hosts", "/etc/resolv.conf":
			if m := containerIDPattern.FindStringSubmatch(f[3]); m != nil {
				return m[1]
			}
		}
	}
	return ""
}

// workloadDocker is the workload frame's Docker: the calls the metrics
// count, and the files writer's (the helper image, the writer's runs),
// which the Deployment controller takes uncounted as its FilesDocker.
// Without these a holder pod — two containers, a file or emptyDir
// volume — cannot be made (podruntime.HolderDocker: docs/design.md §17).
type workloadDocker struct {
	reconciler.Docker
	reconciler.FilesDocker
	// exits, when set, is the event stream whose dies are also sent at
	// once, unsettled (dockerx.Client.EventsWithExits): a Job's pod that
	// ended is replaced without waiting for Docker to list it ended
	// (docs/design.md §17.1).
	exits func(ctx context.Context, instance string) <-chan dockerx.Event
}

// Events is the frame's event stream: exits's when set.
func (w workloadDocker) Events(ctx context.Context, instance string) <-chan dockerx.Event {
	if w.exits != nil {
		return w.exits(ctx, instance)
	}
	return w.Docker.Events(ctx, instance)
}
