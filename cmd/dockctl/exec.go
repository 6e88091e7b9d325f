package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	corev1 "k8s.io/api/core/v1"

	"github.com/dockctl/dockctl/dockerx"
)

type execOptions struct {
	container         string
	stdin, tty, quiet bool
	podTimeout        time.Duration
}

// defaultPodRunningTimeout is kubectl's --pod-running-timeout default.
const defaultPodRunningTimeout = time.Minute

func newExecCommand(g *globalOptions) *cobra.Command {
	o := &execOptions{}
	cmd := &cobra.Command{
		Use:   "exec (POD | TYPE/NAME) [-c CONTAINER] [-i] [-t] -- COMMAND [ARG...]",
		Short: "Execute a command in a container of a pod",
		Long: "Execute a command in a container of a pod, as kubectl does. For a deployment or a Service a pod is chosen\n" +
			"as kubectl chooses it (running and ready first). The command's exit status is dockctl's; a command that\n" +
			"cannot be started (no such executable) exits 126 (127 on engines that tell a missing executable apart),\n" +
			"as `docker exec` does; any other failure exits 1.",
		Example: `  # Print the date in the default container of pod web-5d8f9c7b6a-0
  dockctl exec web-5d8f9c7b6a-0 -- date

  # Run a command in container sidecar of a pod of deployment web
  dockctl exec deploy/web -c sidecar -- cat /etc/hostname

  # Pass stdin to the command
  echo hello | dockctl exec -i deploy/web -- cat

  # Open an interactive shell, with a terminal
  dockctl exec -it pod/web-5d8f9c7b6a-0 -- sh`,
		RunE: func(cmd *cobra.Command, args []string) error {
			target, command, err := execArgs(cmd, args, cmd.ArgsLenAtDash())
			if err != nil {
				return err
			}
			return runExec(cmd, g, o, target, command)
		},
	}
	cmd.Flags().StringVarP(&o.container, "container", "c", "", "the container of the pod (its name in the template); "+
		"default: the one the pod's kubectl.kubernetes.io/default-container annotation names, else its first app container")
	cmd.Flags().BoolVarP(&o.stdin, "stdin", "i", false, "pass stdin to the command (its end closes the command's stdin)")
	cmd.Flags().BoolVarP(&o.tty, "tty", "t", false, "give the command a terminal (with -i, when stdin is one)")
	cmd.Flags().BoolVarP(&o.quiet, "quiet", "q", false, "print only the command's output (no notice of the container chosen)")
	cmd.Flags().DurationVar(&o.podTimeout, "pod-running-timeout", defaultPodRunningTimeout, "how long to wait for a deployment or Service to have a pod")
	return cmd
}

// execArgs splits exec's arguments at "--" (dash: cobra's ArgsLenAtDash)
// into the pod target and the command, with kubectl's errors (its
// Complete and Validate; dockctl has no --filename to name). A word
// between the pod and "--", which kubectl drops, is refused as the
// missing "--" is.
func execArgs(cmd *cobra.Command, args []string, dash int) (podTarget, []string, error) {
	switch {
	case len(args) == 0 || dash == 0:
		return podTarget{}, nil, errors.New("pod or type/name must be specified")
	case dash < 0 && len(args) > 1 || dash > 1:
		return podTarget{}, nil, usageErrorf(cmd, "exec [POD] [COMMAND] is not supported anymore. Use exec [POD] -- [COMMAND] instead")
	case len(args) == 1:
		return podTarget{}, nil, errors.New("you must specify at least one command for the container")
	}
	t, err := parsePodTarget(args[0])
	return t, args[1:], err
}

func runExec(cmd *cobra.Command, g *globalOptions, o *execOptions, target podTarget, command []string) error {
	ctx := cmd.Context()
	st, cli, err := g.openLive(ctx, false)
	if err != nil {
		return err
	}
	defer cli.Close()
	pod, _, err := g.attachablePod(ctx, st, cli, target, o.podTimeout)
	if err != nil {
		return err
	}
	if pod.Phase() == corev1.PodFailed {
		return fmt.Errorf("cannot exec into a container in a completed pod; current phase is Failed")
	}
	pc, notice, err := runningContainer(pod, o.container)
	if notice != "" && !o.quiet {
		fmt.Fprintln(cmd.ErrOrStderr(), notice)
	}
	if err != nil {
		return err
	}
	out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
	t := setupTerminal(o, cmd.InOrStdin(), out, errOut)
	var in io.Reader // nil: no stdin is attached, none is read
	if o.stdin {
		in = cmd.InOrStdin()
	}
	where := fmt.Sprintf("container %q of pod %q", pc.DisplayName(), pod.Name)
	s, err := cli.ExecAttach(ctx, pc.Container.ID, dockerx.ExecConfig{Cmd: command, Stdin: o.stdin, TTY: t.tty, Size: t.size()})
	var startErr *dockerx.ExecStartError
	switch {
	case errors.As(err, &startErr):
		return &exitError{code: startErr.ExitCode, err: fmt.Errorf("%s: %s", where, startErr.Reason)}
	case errors.Is(err, dockerx.ErrConflict):
		return fmt.Errorf("%s is not running: %w", where, err)
	case err != nil:
		return err
	}
	defer s.Close()
	code, err := t.run(ctx, s, in, out, errOut)
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	if code != 0 {
		// kubectl's words, without "error:": the command's own status.
		fmt.Fprintf(errOut, "command terminated with exit code %d\n", code)
		return &exitError{code: code}
	}
	return nil
}

// execTerminal is exec's view of the local terminal.
type execTerminal struct {
	tty  bool
	inFd int // stdin's descriptor when it is a terminal (tty), else -1
	// sizeFd is the descriptor the terminal's size is read from: stdout's
	// when it is a terminal, else stdin's.
	sizeFd int
}

// setupTerminal decides whether the command gets a terminal, as kubectl
// does: only with -i, and only when stdin is a terminal (else a warning,
// and none).
func setupTerminal(o *execOptions, in io.Reader, out, errOut io.Writer) execTerminal {
	t := execTerminal{inFd: -1, sizeFd: -1}
	if !o.stdin || !o.tty {
		return t
	}
	f, ok := in.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		if !o.quiet {
			fmt.Fprintln(errOut, "Unable to use a TTY - input is not a terminal or the right kind of file")
		}
		return t
	}
	t.tty, t.inFd, t.sizeFd = true, int(f.Fd()), int(f.Fd())
	if of, ok := out.(*os.File); ok && term.IsTerminal(int(of.Fd())) {
		t.sizeFd = int(of.Fd())
	}
	return t
}

// size is the local terminal's size (zero without one).
func (t execTerminal) size() dockerx.TerminalSize {
	if !t.tty {
		return dockerx.TerminalSize{}
	}
	w, h, err := term.GetSize(t.sizeFd)
	if err != nil || w <= 0 || h <= 0 {
		return dockerx.TerminalSize{}
	}
	return dockerx.TerminalSize{Height: uint(h), Width: uint(w)}
}

// execStream is what run needs of a started command (dockerx.ExecSession).
type execStream interface {
	io.Writer
	CloseWrite() error
	Output(stdout, stderr io.Writer) error
	Resize(ctx context.Context, size dockerx.TerminalSize) error
	Wait(ctx context.Context) (int, error)
	Close() error
}

// run connects the command to the local streams until it ends and returns
// its exit code. With a terminal, the local one is raw meanwhile (keys,
// Ctrl-C included, go to the command) and restored whatever happens, and
// its size follows the local one's (SIGWINCH); SIGINT, SIGTERM, SIGHUP or
// SIGQUIT sent to dockctl (in raw mode no key sends one) end the session
// rather than leave the terminal raw, as kubectl's do.
func (t execTerminal) run(ctx context.Context, s execStream, in io.Reader, out, errOut io.Writer) (int, error) {
	ended := make(chan struct{})
	var signalled atomic.Int32
	if t.tty {
		// The handler first: a signal that came between the raw mode and
		// it would kill dockctl with the terminal left raw.
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
		defer signal.Stop(sigs)
		state, err := term.MakeRaw(t.inFd)
		if err != nil {
			return 0, fmt.Errorf("putting the terminal in raw mode: %w", err)
		}
		defer term.Restore(t.inFd, state)
		stop := t.followSize(ctx, s)
		defer stop()
		go func() {
			select {
			case sig := <-sigs:
				signalled.Store(int32(sig.(syscall.Signal)))
				s.Close()
			case <-ended:
			}
		}()
	}
	if in != nil {
		go func() {
			// The end of stdin is the command's: a half-close, the output
			// goes on. A read error (a closed terminal) ends it too.
			_, _ = io.Copy(s, in)
			_ = s.CloseWrite()
		}()
	}
	err := s.Output(out, errOut)
	close(ended)
	if sig := signalled.Load(); sig != 0 {
		return 128 + int(sig), nil // as a shell reports a command killed by it
	}
	if err != nil {
		return 0, fmt.Errorf("reading the command's output: %w", err)
	}
	return s.Wait(ctx)
}

// followSize sets the command's terminal to the local one's size now and
// at every SIGWINCH, until the returned function is called.
func (t execTerminal) followSize(ctx context.Context, s execStream) func() {
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	done := make(chan struct{})
	go func() {
		last := dockerx.TerminalSize{}
		for {
			if size := t.size(); size != (dockerx.TerminalSize{}) && size != last {
				// Engines before API 1.42 ignore the size given at
				// create: this sets it, as the docker CLI does.
				if err := s.Resize(ctx, size); err == nil {
					last = size
				}
			}
			select {
			case <-winch:
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(winch)
		close(done)
	}
}
