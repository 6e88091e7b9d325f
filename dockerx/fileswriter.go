package dockerx

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"

	"github.com/dockctl/dockctl/internal/helperapi"
	"github.com/dockctl/dockctl/manifests"
)

// The files writer: a container of its own for each write.
//
// A pod's file volumes (configMap, secret, projected, downwardAPI) are
// written by `dockctl helper files`. That process holds the volumes
// writable, so it must never run where a container of the pod can reach
// it: exec'd in the holder, it would sit in the pod's PID namespace when
// the pod shares one (shareProcessNamespace), and a member could open
// /proc/<pid>/root before the writer makes itself non-dumpable (a Go
// program cannot do that before its runtime starts) and so write into its
// read-only volume — a link planted there is followed by the daemon's next
// subPath bind, on the host. So every write runs in a writer container of
// its own: its own PID, mount, IPC and UTS namespaces, no network, no
// capability but those that set files' owners and modes, no way to gain
// any, a read-only root, and the pod's file volumes mounted at
// helperapi.VolumesDir/NAME. It lives as long as the write: its stdin is
// the payload, Docker removes it when it exits (a controller killed during
// a write closes its stdin, so the writer ends too), and one left created
// by a controller that died before starting it is swept as a stale helper.
// The holder keeps the volumes mounted (read-only) for the pod's life: a
// tmpfs volume is mounted afresh, empty, when no container has it mounted.

// FilesWriterRequest is one run of `dockctl helper files ARGS` in a writer
// container of its own, for the pod of Pod (its Instance, Namespace,
// Deployment, TemplateHash and Pod; Image is the helper image).
type FilesWriterRequest struct {
	Pod  CreateRequest
	Args []string // after `dockctl helper files`
	// ReadOnly mounts the volumes read-only: a check, never a write.
	ReadOnly bool
}

// filesWriterCaps are the capabilities `helper files` needs as root in a
// container of its own: set the owner (fsGroup) and mode of what it writes
// in volumes whose directories it does not own.
var filesWriterCaps = []string{"CAP_CHOWN", "CAP_FOWNER", "CAP_DAC_OVERRIDE"}

// BuildFilesWriterConfig converts a files writer request into Docker's
// create structures. It is pure.
func BuildFilesWriterConfig(req FilesWriterRequest) (*container.Config, *container.HostConfig, error) {
	p := req.Pod
	switch {
	case p.Instance == "" || p.Image == "":
		return nil, nil, errors.New("files writer: instance and image are required")
	case p.From == nil || p.Pod == nil:
		return nil, nil, errors.New("files writer: no pod to write the files of")
	}
	ps := &p.From.Template.Spec
	// No deployment or pod label: a writer is no container of the pod
	// (its name says whose it is).
	labels := map[string]string{LabelInstance: p.Instance, LabelRole: RoleFilesWriter, LabelNamespace: p.namespace()}
	cfg := &container.Config{
		Image:  p.Image,
		Cmd:    append(slices.Clone(FilesCommand), req.Args...),
		Labels: labels,
		User:   "0:0",
		// As `docker run -i --rm`: stdin open for the first attach only,
		// closed when it ends.
		AttachStdin: true, OpenStdin: true, StdinOnce: true, AttachStdout: true, AttachStderr: true,
		NetworkDisabled: true,
	}
	hc := &container.HostConfig{
		RestartPolicy:  container.RestartPolicy{Name: container.RestartPolicyDisabled},
		AutoRemove:     true,
		NetworkMode:    network.NetworkNone,
		CapDrop:        []string{"ALL"},
		CapAdd:         slices.Clone(filesWriterCaps),
		SecurityOpt:    []string{securityOptNoNewPrivileges},
		ReadonlyRootfs: true,
	}
	for i := range ps.Volumes {
		v := &ps.Volumes[i]
		if v.IsFileVolume() {
			hc.Mounts = append(hc.Mounts, podVolumeMount(p, v, path.Join(helperapi.VolumesDir, v.Name), req.ReadOnly))
		}
	}
	if len(hc.Mounts) == 0 {
		return nil, nil, fmt.Errorf("files writer: pod %s has no file volume", p.Pod.Name)
	}
	return cfg, hc, nil
}

// FilesWriterName returns a writer's Docker name: the holder's, a "files"
// suffix and a random one (writes of one pod may overlap a removal).
func FilesWriterName(holder string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return holder + "_files-" + hex.EncodeToString(b[:])
}

// FilesWriterPod returns the pod a files writer named name
// (FilesWriterName) of that instance and namespace wrote for: the
// hostname of its holder's replica (Hostname), "" when name is not such a
// writer's.
func FilesWriterPod(instance, namespace, name string) string {
	i := strings.LastIndex(name, "_files-")
	if i < 0 {
		return ""
	}
	rest, ok := strings.CutPrefix(strings.TrimPrefix(name[:i], "/"), instance+"_")
	j := strings.LastIndex(rest, "-")
	if !ok || j < 0 {
		return ""
	}
	ord, err := strconv.Atoi(rest[j+1:])
	rest = rest[:j]
	k := strings.LastIndex(rest, "-")
	if err != nil || k < 0 {
		return ""
	}
	dep, hash := rest[:k], rest[k+1:]
	if ns := orDefault(namespace); ns != manifests.DefaultNamespace {
		if dep, ok = strings.CutSuffix(dep, "."+ns); !ok {
			return ""
		}
	}
	if dep == "" || hash == "" || strings.Contains(dep, ".") { // deployment names are DNS labels
		return ""
	}
	return Hostname(dep, hash, ord)
}

// RunFilesWriter runs req in a writer container of its own (see above),
// stdin its input, and returns the command's exit code and stdout (the
// first MaxExecOutput bytes), as ExecInput does for a command in a
// running container. timeout bounds the whole run; the writer is removed
// whatever happens.
func (c *Client) RunFilesWriter(ctx context.Context, req FilesWriterRequest, stdin []byte, timeout time.Duration) (exit int, stdout []byte, err error) {
	cfg, hc, err := BuildFilesWriterConfig(req)
	if err != nil {
		return 0, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	name := FilesWriterName(req.Pod.Pod.Holder)
	id, err := c.create(ctx, name, cfg, hc, &network.NetworkingConfig{})
	if err != nil {
		return 0, nil, err
	}
	what := "files writer " + name
	defer func() {
		if err != nil {
			// AutoRemove covers a writer that ran; this one may not have.
			rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer rcancel()
			if rerr := c.RemoveContainer(rctx, id); rerr != nil && !errors.Is(rerr, ErrNotFound) {
				c.log.Warn("removing a files writer", "container", name, "err", rerr)
			}
		}
	}()
	// Registered before the start, so that the exit of a writer that
	// Docker removes at once is not missed.
	waitC, waitErrC := c.api.ContainerWait(ctx, id, container.WaitConditionRemoved)
	resp, err := c.api.ContainerAttach(ctx, id, container.AttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
	if err != nil {
		return 0, nil, mapErr("attach to "+what, err)
	}
	defer resp.Close()
	if err := c.api.ContainerStart(ctx, id, container.StartOptions{}); err != nil {
		return 0, nil, mapErr("start "+what, err)
	}
	if stdin == nil {
		stdin = []byte{} // its end is the writer's EOF
	}
	out, errOut, err := exchange(ctx, resp, stdin, what, cfg.Cmd, timeout)
	if err != nil {
		return 0, out.Bytes(), err
	}
	select {
	case w := <-waitC:
		if w.Error != nil {
			return 0, out.Bytes(), fmt.Errorf("%s: %s", what, w.Error.Message)
		}
		if w.StatusCode != 0 && errOut.Len() > 0 {
			c.log.Debug("files writer failed", "container", name, "exit", w.StatusCode, "stderr", errOut.String())
		}
		return int(w.StatusCode), out.Bytes(), nil
	case err := <-waitErrC:
		return 0, out.Bytes(), mapErr("wait for "+what, err)
	case <-ctx.Done():
		return 0, out.Bytes(), fmt.Errorf("%s: %s did not finish within %s: %w", what, strings.Join(cfg.Cmd, " "), timeout, ctx.Err())
	}
}
