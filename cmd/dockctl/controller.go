package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/dockctl/dockctl/dockerx"
	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/metrics"
	"github.com/dockctl/dockctl/reconciler"
)

// defaultMetricsAddr stays clear of Prometheus' own 9090 and binds loopback:
// exposing it is a decision the operator makes with --metrics-addr.
const defaultMetricsAddr = "127.0.0.1:9477"

type controllerOptions struct {
	resync       time.Duration
	metricsAddr  string
	pruneOrphans bool
	workers      int
	crashBase    time.Duration
	crashMax     time.Duration
	logFormat    string
	allow        map[string]*bool
	maxReplicas  int32
	maxGrace     time.Duration
}

func newControllerCommand(g *globalOptions) *cobra.Command {
	o := &controllerOptions{}
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run the reconciliation loop (keeps running until SIGTERM or SIGINT)",
		Long: "Keeps this instance's containers matching the state directory: creates missing replicas,\n" +
			"starts stopped ones, removes surplus and outdated ones. Stopping it never stops a workload.\n" +
			"Only one controller per state directory acts; a second one waits and takes over if the first dies.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runController(g, o)
		},
	}
	f := cmd.Flags()
	f.DurationVar(&o.resync, "resync-period", 30*time.Second, "full resync interval (catches anything no event reported)")
	f.StringVar(&o.metricsAddr, "metrics-addr", defaultMetricsAddr, "address for /metrics, /healthz and /readyz (empty disables)")
	f.BoolVar(&o.pruneOrphans, "prune-orphans", false, "remove containers whose deployment this state directory never knew")
	f.IntVar(&o.workers, "workers", 4, "deployments synced in parallel")
	f.DurationVar(&o.crashBase, "crash-backoff-base", time.Second, "first delay before restarting a container that keeps exiting (doubles each time)")
	f.DurationVar(&o.crashMax, "crash-backoff-max", 5*time.Minute, "longest delay before restarting a container that keeps exiting")
	f.StringVar(&o.logFormat, "log-format", "text", "log format: text|json")
	f.Int32Var(&o.maxReplicas, "max-replicas", reconciler.DefaultMaxReplicas,
		fmt.Sprintf("refuse deployments with more replicas than this (at most %d)", manifests.MaxReplicasLimit))
	f.DurationVar(&o.maxGrace, "max-grace-period", reconciler.DefaultMaxGracePeriod,
		"longest terminationGracePeriodSeconds honoured: a replica is killed this long after its stop signal at the latest")
	o.allow = map[string]*bool{}
	for _, a := range []struct{ flag, help string }{
		{manifests.FlagAllowPrivileged, "run privileged containers (securityContext.privileged)"},
		{manifests.FlagAllowHostNamespaces, "run containers in the host's network or PID namespace (hostNetwork, hostPID)"},
		{manifests.FlagAllowHostPath, "mount host paths (hostPath volumes)"},
		{manifests.FlagAllowHostRoot, "mount / or the Docker socket (or a directory holding it); needs --allow-host-path too"},
	} {
		o.allow[a.flag] = f.Bool(strings.TrimPrefix(a.flag, "--"), false, a.help)
	}
	return cmd
}

func runController(g *globalOptions, o *controllerOptions) error {
	if o.maxReplicas < 1 || o.maxReplicas > manifests.MaxReplicasLimit {
		return fmt.Errorf("--max-replicas %d: must be between 1 and %d", o.maxReplicas, manifests.MaxReplicasLimit)
	}
	if o.maxGrace <= 0 {
		return fmt.Errorf("--max-grace-period %v: must be positive", o.maxGrace)
	}
	var handler slog.Handler = slog.NewTextHandler(os.Stderr, nil)
	if o.logFormat == "json" {
		handler = slog.NewJSONHandler(os.Stderr, nil)
	}
	log := slog.New(handler)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

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

	cli, err := dockerx.NewClient(dockerx.WithLogger(log))
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
	ctrl := reconciler.New(m.InstrumentDocker(cli), st, reconciler.Options{
		Instance:         g.instance,
		ResyncPeriod:     o.resync,
		PruneOrphans:     o.pruneOrphans,
		Workers:          o.workers,
		SelfID:           selfContainerID(),
		CrashBackoffBase: o.crashBase,
		CrashBackoffMax:  o.crashMax,
		Logger:           log,
		Observer:         m,
		QueueMetrics:     m.QueueProvider(),
		Allow:            allowed(o.allow),
		MaxReplicas:      o.maxReplicas,
		MaxGracePeriod:   o.maxGrace,
	})

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
	return ctrl.Run(ctx)
}

func allowed(flags map[string]*bool) map[string]bool {
	out := map[string]bool{}
	for flag, on := range flags {
		out[flag] = *on
	}
	return out
}

var containerIDPattern = regexp.MustCompile(`/containers/([0-9a-f]{64})/`)

// selfContainerID finds the controller's own container ID when it runs in
// a container: Docker bind-mounts /etc/hostname from the container's own
// directory, whose path holds the ID. Outside a container it is empty.
func selfContainerID() string {
	if b, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		if m := containerIDPattern.FindSubmatch(b); m != nil {
			return string(m[1])
		}
	}
	return ""
}
