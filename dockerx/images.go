package dockerx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/image"

	"github.com/dockctl/dockctl/manifests"
)

// EnsureImage makes ref available locally according to the Kubernetes
// imagePullPolicy ("" means IfNotPresent):
//   - Never: the image must already be present, else an error wrapping
//     ErrNotFound;
//   - IfNotPresent: pull only when absent;
//   - Always: pull; if the pull fails but a local copy exists, use it with a
//     warning, because hosts without registry access are a normal case.
//
// A failed pull yields an error wrapping ErrImagePull (and ErrUnreachable
// when the daemon itself could not be reached).
//
// A pull uses the credentials a pod's imagePullSecrets give (secrets, in
// their order) and the docker CLI's for the image's registry, as the
// kubelet does: every one whose key matches the image is tried in turn
// until a pull succeeds; none matching, the pull is anonymous.
func (c *Client) EnsureImage(ctx context.Context, ref, pullPolicy string, secrets []RegistryCredential) error {
	switch pullPolicy {
	case manifests.PullNever:
		present, err := c.imagePresent(ctx, ref)
		if err != nil {
			return err
		}
		if !present {
			return &mappedError{sentinel: ErrNotFound,
				err: fmt.Errorf("image %q not present and imagePullPolicy is Never", ref)}
		}
		return nil
	case manifests.PullIfNotPresent, "":
		present, err := c.imagePresent(ctx, ref)
		if err != nil || present {
			return err
		}
		return c.pull(ctx, ref, secrets)
	case manifests.PullAlways:
		pullErr := c.pull(ctx, ref, secrets)
		if pullErr == nil || errors.Is(pullErr, ErrUnreachable) {
			return pullErr
		}
		if present, err := c.imagePresent(ctx, ref); err == nil && present {
			c.log.Warn("image pull failed; using the local copy", "image", ref, "err", pullErr)
			ReportPullFallback(ctx, ref, pullErr)
			return nil
		}
		return pullErr
	default:
		return fmt.Errorf("image %q: unknown imagePullPolicy %q", ref, pullPolicy)
	}
}

func (c *Client) imagePresent(ctx context.Context, ref string) (bool, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	_, err := c.api.ImageInspect(ctx, ref)
	switch {
	case err == nil:
		return true, nil
	case cerrdefs.IsNotFound(err):
		return false, nil
	}
	return false, mapErr("inspect image "+ref, err)
}

// pull pulls ref with each matching credential in turn (anonymously when
// none matches) and waits for the end of the progress stream, which is
// where the daemon reports most failures (the HTTP status is already 200).
func (c *Client) pull(ctx context.Context, ref string, secrets []RegistryCredential) error {
	ctx, cancel := context.WithTimeout(ctx, c.pullTimeout)
	defer cancel()
	creds := c.pullCredentials(ref, secrets)
	if len(creds) == 0 {
		c.log.Info("pulling image", "image", ref)
		if err := c.pullOnce(ctx, ref, image.PullOptions{}); err != nil {
			return pullError(ref, err)
		}
		return nil
	}
	var errs []error
	for _, cred := range creds {
		c.log.Info("pulling image", "image", ref, "credentials", cred)
		auth, err := cred.encode(registryDomain(ref))
		if err != nil {
			errs = append(errs, fmt.Errorf("with %s: cannot encode them", cred))
			continue
		}
		err = c.pullOnce(ctx, ref, image.PullOptions{RegistryAuth: auth})
		if err == nil {
			return nil
		}
		if errors.Is(err, ErrUnreachable) || ctx.Err() != nil {
			return pullError(ref, err)
		}
		errs = append(errs, fmt.Errorf("with %s: %w", cred, err))
	}
	return pullError(ref, errors.Join(errs...))
}

// pullCredentials returns the credentials to try for ref: the matching
// ones of secrets, then the docker CLI's. A docker config that cannot be
// used is a warning, not a failure: the pull goes on without it, as the
// docker CLI goes on with a config file it cannot read.
func (c *Client) pullCredentials(ref string, secrets []RegistryCredential) []RegistryCredential {
	creds := MatchCredentials(ref, secrets)
	cli, ok, err := dockerCLICredential(c.dockerConfigDir, ref)
	if err != nil {
		c.log.Warn("docker CLI credentials not used", "image", ref, "err", err)
	}
	if ok {
		creds = append(creds, cli)
	}
	return creds
}

// pullOnce is one pull request; its error is not yet wrapped.
func (c *Client) pullOnce(ctx context.Context, ref string, o image.PullOptions) error {
	rc, err := c.api.ImagePull(ctx, ref, o)
	if err != nil {
		return classify(err)
	}
	defer rc.Close()
	return readPullStream(rc)
}

func pullError(ref string, err error) error {
	return &mappedError{sentinel: ErrImagePull, err: fmt.Errorf("pull image %q: %w", ref, err)}
}

// readPullStream drains the JSON progress messages and returns the first
// error the daemon reports in them.
func readPullStream(r io.Reader) error {
	dec := json.NewDecoder(r)
	for {
		var m struct {
			Error       string `json:"error"`
			ErrorDetail *struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("reading pull progress: %w", err)
		}
		if m.ErrorDetail != nil && m.ErrorDetail.Message != "" {
			return errors.New(m.ErrorDetail.Message)
		}
		if m.Error != "" {
			return errors.New(m.Error)
		}
	}
}

type pullFallbackKey struct{}

// WithPullFallback returns ctx carrying report, which EnsureImage calls
// when imagePullPolicy Always fell back to the local copy of ref after a
// failed pull: a success for the caller, which can still tell its users
// (a Warning event on the pods created from it).
func WithPullFallback(ctx context.Context, report func(ref string, pullErr error)) context.Context {
	return context.WithValue(ctx, pullFallbackKey{}, report)
}

// ReportPullFallback calls the report ctx carries (WithPullFallback), if
// any: for EnsureImage, and for the fakes that stand in for it.
func ReportPullFallback(ctx context.Context, ref string, pullErr error) {
	if report, ok := ctx.Value(pullFallbackKey{}).(func(string, error)); ok && report != nil {
		report(ref, pullErr)
	}
}
