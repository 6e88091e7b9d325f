package reconciler

import (
	"errors"
	"fmt"
	"strings"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// The state directory is desired state, not a trusted input: a record can
// be edited by hand, written by an older or newer release, or tampered with
// by whoever can write there. So every record is validated when the
// controller reads it, and every template is checked before one of its
// containers is created or started, whatever its revision.

// unsafeFields are the field paths (and their children) whose invalid
// values the controller refuses rather than reports: the bounds the
// planner does arithmetic with, and the list of containers it indexes. A
// record that breaks only other rules (a label key, a selector a newer
// release would reject) keeps running and is reported: an upgrade must
// never freeze a deployment that works.
var unsafeFields = []string{
	"spec.replicas",
	"spec.minReadySeconds",
	"spec.revisionHistoryLimit",
	"spec.progressDeadlineSeconds",
	"spec.strategy",
	"spec.template.spec.terminationGracePeriodSeconds",
}

func unsafeField(path string) bool {
	if path == "spec.template.spec.containers" {
		return true // missing or several: Container() would not know which
	}
	for _, f := range unsafeFields {
		if path == f || strings.HasPrefix(path, f+".") || strings.HasPrefix(path, f+"[") {
			return true
		}
	}
	return false
}

// checkRecord validates a live record with the rules of apply. It returns
// the refusal for what is unsafe (no container of the deployment is then
// created, started or removed) and, separately, what is merely invalid.
// hash is the record's template hash, which the caller has already computed.
func checkRecord(rec *store.Record, hash string) (refusal failure, invalid []string) {
	d := &rec.Deployment
	var refuse []string
	if err := manifests.Validate(d); err != nil {
		var list manifests.ErrorList
		if !errors.As(err, &list) {
			return failure{ReasonFailedCreate, "invalid record: " + err.Error()}, nil
		}
		for _, fe := range list {
			if unsafeField(fe.Path) {
				refuse = append(refuse, fe.Error())
			} else {
				invalid = append(invalid, fe.Error())
			}
		}
	}
	if cur := rec.CurrentRevision(); cur != nil && cur.Hash != hash {
		refuse = append(refuse, fmt.Sprintf("the template hashes to %s, not to its recorded revision hash %s: the record was changed outside dockctl", hash, cur.Hash))
	}
	if len(refuse) > 0 {
		return failure{ReasonFailedCreate, "invalid record: " + strings.Join(refuse, "; ")}, invalid
	}
	return failure{}, invalid
}

// templateRefusal returns why no container of the template stored under
// hash may be created or started, or "": a template that does not hash to
// its hash is not what was applied, and a privilege this controller does
// not grant is refused for an old revision exactly as for the current one.
func (c *Controller) templateRefusal(hash string, t *manifests.PodTemplateSpec) string {
	if got := manifests.TemplateHash(t); got != hash {
		return fmt.Sprintf("revision %s: its template hashes to %s: the record was changed outside dockctl", hash, got)
	}
	if msg := c.privilegeRefusal(&manifests.Deployment{Spec: manifests.DeploymentSpec{Template: *t}}); msg != "" {
		return fmt.Sprintf("revision %s: %s", hash, msg)
	}
	return ""
}

// privilegeRefusal lists the privileges d needs that this controller was
// not started to grant, or "".
func (c *Controller) privilegeRefusal(d *manifests.Deployment) string {
	var msgs []string
	for _, p := range c.opts.Allow.Refused(d) {
		msgs = append(msgs, p.String())
	}
	return strings.Join(msgs, "; ")
}

// refusedRevisions maps the hash of every old revision whose containers
// may not be created or started to why. Hashes of existing containers that
// are neither the current template nor a known revision are refused too:
// their template cannot be checked, so they are not started again.
func (c *Controller) refusedRevisions(rec *store.Record, hash string, in *PlanInput) map[string]string {
	out := map[string]string{}
	for i := range rec.Revisions {
		r := &rec.Revisions[i]
		if r.Hash == hash {
			continue // the current template is judged as a whole deployment
		}
		if msg := c.templateRefusal(r.Hash, &r.Template); msg != "" {
			out[r.Hash] = msg
		}
	}
	for _, ct := range in.Containers {
		h := ct.TemplateHash
		if h == "" || h == hash || rec.Revision(h) != nil {
			continue
		}
		out[h] = fmt.Sprintf("revision %s is not in the deployment's history: its template cannot be checked", h)
	}
	// A size recorded for an unknown hash needs nothing here: the planner
	// cannot create a revision whose template it does not have.
	return out
}

// reportInvalid logs, once per distinct message, what is invalid in a
// record that keeps running.
func (c *Controller) reportInvalid(name string, invalid []string) {
	msg := strings.Join(invalid, "; ")
	c.mu.Lock()
	if c.invalid == nil {
		c.invalid = map[string]string{}
	}
	seen := c.invalid[name] == msg
	if msg == "" {
		delete(c.invalid, name)
	} else {
		c.invalid[name] = msg
	}
	c.mu.Unlock()
	if msg != "" && !seen {
		c.log.Warn("deployment record is invalid under this release's rules; it keeps running, fix it with apply",
			"deployment", name, "problems", msg)
	}
}
