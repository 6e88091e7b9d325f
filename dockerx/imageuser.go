package dockerx

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/dockctl/dockctl/manifests"
)

// ImageUser returns the user an image runs as: its config's User ("" when
// the image names none, which is root), as `docker image inspect` shows
// it — a name or a uid, possibly followed by ":group".
func (c *Client) ImageUser(ctx context.Context, ref string) (string, error) {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	ins, err := c.api.ImageInspect(ctx, ref)
	if err != nil {
		return "", mapErr("inspect image "+ref, err)
	}
	if ins.Config == nil {
		return "", nil
	}
	return ins.Config.User, nil
}

// ParseImageUser splits an image's User as kubelet's getImageUser reads
// it: the part before any ":group"; a number is the uid, anything else a
// user name whose uid cannot be known without the image's /etc/passwd. No
// user at all is root (uid 0).
func ParseImageUser(user string) (uid *int64, name string) {
	u, _, _ := strings.Cut(user, ":")
	if u == "" {
		zero := int64(0)
		return &zero, ""
	}
	if n, err := strconv.ParseInt(u, 10, 64); err == nil {
		return &n, ""
	}
	return nil, u
}

// imageUserPart is the user part of an image's User for a container whose
// template sets runAsGroup without runAsUser: the image's user (name or
// uid) takes the template's group, as kubelet takes the image's uid; "0"
// when the image names none.
func imageUserPart(user string) string {
	u, _, _ := strings.Cut(user, ":")
	if u == "" {
		return "0"
	}
	return u
}

// NeedsImageUser reports whether the create of the template container c
// needs its image's user: for runAsNonRoot without runAsUser (the check),
// or runAsGroup without runAsUser (Docker takes a group only with a user).
func NeedsImageUser(e manifests.EffectiveSecurity) bool {
	return e.RunAsUser == nil && ((e.RunAsNonRoot != nil && *e.RunAsNonRoot) || e.RunAsGroup != nil)
}

// VerifyRunAsNonRoot is kubelet's verifyRunAsNonRoot: a container whose
// effective securityContext has runAsNonRoot may not run as uid 0, nor as
// a user name whose uid cannot be checked. imageUser is its image's User;
// pod and container name it in the message, worded as kubelet's.
func VerifyRunAsNonRoot(e manifests.EffectiveSecurity, imageUser, pod, container string) error {
	if e.RunAsNonRoot == nil || !*e.RunAsNonRoot {
		return nil
	}
	if e.RunAsUser != nil {
		if *e.RunAsUser == 0 {
			return fmt.Errorf("container's runAsUser breaks non-root policy (pod: %q, container: %s)", pod, container)
		}
		return nil
	}
	switch uid, name := ParseImageUser(imageUser); {
	case uid != nil && *uid == 0:
		return fmt.Errorf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", pod, container)
	case uid == nil && name != "":
		return fmt.Errorf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root (pod: %q, container: %s)", name, pod, container)
	}
	return nil
}
