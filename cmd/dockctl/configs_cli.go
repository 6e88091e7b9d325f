package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// get, describe and delete of ConfigMaps and Secrets. They read the state
// directory only: no Docker daemon needed. A Secret's values are shown only
// when asked for the object itself (get -o yaml|json, base64 as kubectl
// prints them); describe shows sizes.

// lastApplied is kubectl's annotation holding the whole applied object
// (a Secret's values included): describe leaves it out, as kubectl's does.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// configListing reads the records of one kind for get: the live ones of
// -n's namespace (or all, with -A), named name, matching -l. A record that
// cannot be read is a warning, as get deployments warns.
func configListing[T any](cmd *cobra.Command, g *globalOptions, o *getOptions, name string,
	list func(*store.Store) ([]*store.ObjectRecord[T], []error), meta func(*T) *manifests.ObjectMeta) ([]*store.ObjectRecord[T], error) {
	sel, err := parseSelector(o.selector)
	if err != nil {
		return nil, err
	}
	st, err := g.readStore()
	if err != nil {
		return nil, err
	}
	recs, errs := list(st)
	for _, err := range errs {
		fmt.Fprintln(cmd.ErrOrStderr(), "warning:", err)
	}
	var out []*store.ObjectRecord[T]
	for _, r := range recs {
		m := meta(&r.Object)
		if !r.Deleted && o.inScope(g, m.NamespaceOrDefault()) && (name == "" || m.Name == name) && sel.Matches(labels.Set(m.Labels)) {
			out = append(out, r)
		}
	}
	return out, nil
}

func getConfigMaps(cmd *cobra.Command, g *globalOptions, o *getOptions, name string) error {
	recs, err := configListing(cmd, g, o, name, (*store.Store).ListConfigMaps, func(c *manifests.ConfigMap) *manifests.ObjectMeta { return &c.Metadata })
	if err != nil {
		return err
	}
	if done, err := o.noConfig(cmd, g, store.KindConfigMap, "configmaps", name, len(recs)); done {
		return err
	}
	return renderConfigMaps(cmd.OutOrStdout(), time.Now(), recs, o.printer, name != "", o.allNamespaces)
}

func getSecrets(cmd *cobra.Command, g *globalOptions, o *getOptions, name string) error {
	recs, err := configListing(cmd, g, o, name, (*store.Store).ListSecrets, func(s *manifests.Secret) *manifests.ObjectMeta { return &s.Metadata })
	if err != nil {
		return err
	}
	if done, err := o.noConfig(cmd, g, store.KindSecret, "secrets", name, len(recs)); done {
		return err
	}
	return renderSecrets(cmd.OutOrStdout(), time.Now(), recs, o.printer, name != "", o.allNamespaces)
}

// noConfig handles an empty listing: an error for a name not found, a
// line on stderr for a table. done tells the caller to stop.
func (o *getOptions) noConfig(cmd *cobra.Command, g *globalOptions, kind, what, name string, n int) (done bool, err error) {
	switch {
	case n > 0:
		return false, nil
	case name != "":
		return true, notFoundIn(g, kind, g.namespace, name, store.ErrNotFound)
	case o.output == "table" || o.output == "wide" || o.output == "":
		o.noResources(cmd.ErrOrStderr(), g, true)
		return true, nil
	}
	return false, nil
}

// renderConfigMaps prints ConfigMaps as kubectl does (golden-tested):
// NAME DATA AGE (DATA counts data and binaryData keys; -o wide adds
// nothing, as kubectl's), -o name configmap/NAME, -o json|yaml the objects.
func renderConfigMaps(out io.Writer, now time.Time, recs []*store.ConfigMapRecord, p *printer, single, allNamespaces bool) error {
	t := &table{kind: "configmap", columns: []string{"NAME", "DATA", "AGE"}}
	for _, r := range recs {
		c := r.Object
		c.Metadata.Namespace = c.Metadata.NamespaceOrDefault()
		t.rows = append(t.rows, row{namespace: c.Metadata.Namespace, name: c.Metadata.Name, labels: c.Metadata.Labels, id: createdID(r.Created),
			cells:  []string{c.Metadata.Name, fmt.Sprint(len(c.Data) + len(c.BinaryData)), age(now.Sub(r.Created))},
			object: func() (any, error) { return &c, nil }})
	}
	return p.print(out, t, single, allNamespaces)
}

// renderSecrets prints Secrets as kubectl does (golden-tested): NAME TYPE
// DATA AGE, -o name secret/NAME, -o json|yaml the objects, data base64
// (and so do -o jsonpath and custom-columns: what -o json prints).
func renderSecrets(out io.Writer, now time.Time, recs []*store.SecretRecord, p *printer, single, allNamespaces bool) error {
	t := &table{kind: "secret", columns: []string{"NAME", "TYPE", "DATA", "AGE"}}
	for _, r := range recs {
		s := r.Object
		s.Metadata.Namespace = s.Metadata.NamespaceOrDefault()
		s.Type = secretType(&s)
		t.rows = append(t.rows, row{namespace: s.Metadata.Namespace, name: s.Metadata.Name, labels: s.Metadata.Labels, id: createdID(r.Created),
			cells:  []string{s.Metadata.Name, s.Type, fmt.Sprint(len(s.Data)), age(now.Sub(r.Created))},
			object: func() (any, error) { return &s, nil }})
	}
	return p.print(out, t, single, allNamespaces)
}

func secretType(s *manifests.Secret) string {
	if s.Type == "" {
		return manifests.SecretTypeOpaque
	}
	return s.Type
}

// describeConfigObject runs describe configmap|secret NAME.
func describeConfigObject(cmd *cobra.Command, g *globalOptions, kind, name string) error {
	st, err := g.readStore()
	if err != nil {
		return err
	}
	deps, _ := st.List() // Used By is a courtesy: an unreadable record is left out
	out := cmd.OutOrStdout()
	if kind == kindConfigMap {
		rec, err := st.LookupConfigMapRecord(g.namespace, name)
		if err == nil && rec.Deleted {
			err = store.ErrNotFound
		}
		if err != nil {
			return notFoundIn(g, store.KindConfigMap, g.namespace, name, err)
		}
		describeConfigMap(out, g.instance, &rec.Object, usedBy(deps, g.namespace, kindConfigMap, name))
		return nil
	}
	rec, err := st.LookupSecretRecord(g.namespace, name)
	if err == nil && rec.Deleted {
		err = store.ErrNotFound
	}
	if err != nil {
		return notFoundIn(g, store.KindSecret, g.namespace, name, err)
	}
	describeSecret(out, g.instance, &rec.Object, usedBy(deps, g.namespace, kindSecret, name))
	return nil
}

// describeHeader prints what describe shows of every object.
func describeHeader(w io.Writer, instance string, m *manifests.ObjectMeta) {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	p := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
	p("Name", m.Name)
	p("Namespace", m.NamespaceOrDefault())
	p("Instance", instance)
	multi := func(k string, m map[string]string) {
		ps := pairs(m)
		if len(ps) == 0 {
			p(k, "<none>")
			return
		}
		for i, kv := range ps {
			if i == 0 {
				p(k, kv)
			} else {
				fmt.Fprintf(tw, "\t%s\n", kv)
			}
		}
	}
	multi("Labels", m.Labels)
	ann := map[string]string{}
	for k, v := range m.Annotations {
		if k != lastApplied {
			ann[k] = v
		}
	}
	multi("Annotations", ann)
	tw.Flush()
}

// describeConfigMap prints a ConfigMap as kubectl's describe does: its
// data in full (a ConfigMap holds no secret), binaryData by size.
func describeConfigMap(w io.Writer, instance string, c *manifests.ConfigMap, users []string) {
	describeHeader(w, instance, &c.Metadata)
	if c.Immutable != nil && *c.Immutable {
		fmt.Fprintln(w, "Immutable:    true")
	}
	fmt.Fprintf(w, "Used By:      %s\n", joinOrNone(users))
	fmt.Fprint(w, "\nData\n====\n")
	for _, k := range sortedKeys(c.Data) {
		fmt.Fprintf(w, "%s:\n----\n%s\n", k, c.Data[k])
		if !strings.HasSuffix(c.Data[k], "\n") {
			fmt.Fprintln(w)
		}
	}
	fmt.Fprint(w, "\nBinaryData\n====\n")
	for _, k := range sortedKeys(c.BinaryData) {
		fmt.Fprintf(w, "%s: %d bytes\n", k, len(c.BinaryData[k]))
	}
}

// describeSecret prints a Secret as kubectl's describe does: the size of
// each value, never a value.
func describeSecret(w io.Writer, instance string, s *manifests.Secret, users []string) {
	describeHeader(w, instance, &s.Metadata)
	if s.Immutable != nil && *s.Immutable {
		fmt.Fprintln(w, "Immutable:    true")
	}
	fmt.Fprintf(w, "Used By:      %s\n", joinOrNone(users))
	fmt.Fprintf(w, "\nType:  %s\n\nData\n====\n", secretType(s))
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	for _, k := range sortedKeys(s.Data) {
		fmt.Fprintf(tw, "%s:\t%d bytes\n", k, len(s.Data[k]))
	}
	tw.Flush()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// usedBy names the live deployments of namespace ns whose pod template
// refers to the ConfigMap or Secret (kind kindConfigMap or kindSecret)
// name: in env, envFrom, a volume or imagePullSecrets.
func usedBy(deps []*store.Record, ns, kind, name string) []string {
	var out []string
	for _, r := range deps {
		if r.NamespaceOrDefault() != ns {
			continue
		}
		cms, secs := templateRefs(&r.Deployment.Spec.Template.Spec)
		refs := cms
		if kind == kindSecret {
			refs = secs
		}
		if refs[name] {
			out = append(out, "deployment/"+r.Name)
		}
	}
	return out
}

// templateRefs lists the ConfigMaps and Secrets a pod spec refers to.
func templateRefs(ps *manifests.PodSpec) (configMaps, secrets map[string]bool) {
	configMaps, secrets = map[string]bool{}, map[string]bool{}
	for _, r := range ps.ImagePullSecrets {
		secrets[r.Name] = true
	}
	for _, c := range ps.AllContainers() {
		for _, e := range c.Env {
			if vf := e.ValueFrom; vf != nil {
				if r := vf.ConfigMapKeyRef; r != nil {
					configMaps[r.Name] = true
				}
				if r := vf.SecretKeyRef; r != nil {
					secrets[r.Name] = true
				}
			}
		}
		for _, e := range c.EnvFrom {
			if e.ConfigMapRef != nil {
				configMaps[e.ConfigMapRef.Name] = true
			}
			if e.SecretRef != nil {
				secrets[e.SecretRef.Name] = true
			}
		}
	}
	for _, v := range ps.Volumes {
		if v.ConfigMap != nil {
			configMaps[v.ConfigMap.Name] = true
		}
		if v.Secret != nil {
			secrets[v.Secret.SecretName] = true
		}
		if v.Projected != nil {
			for _, src := range v.Projected.Sources {
				if src.ConfigMap != nil {
					configMaps[src.ConfigMap.Name] = true
				}
				if src.Secret != nil {
					secrets[src.Secret.Name] = true
				}
			}
		}
	}
	return configMaps, secrets
}

// describeEnv prints a template container's environment: NAME=value, and
// for a value taken from elsewhere where it comes from, as kubectl's
// describe words it (never the value: it may be a Secret's); then the
// ConfigMaps and Secrets of envFrom.
func describeEnv(w io.Writer, c *manifests.Container) {
	if len(c.Env) > 0 {
		fmt.Fprintln(w, "    Environment:")
		for _, e := range c.Env {
			fmt.Fprintf(w, "      %s=%s\n", e.Name, envSource(e))
		}
	}
	if len(c.EnvFrom) > 0 {
		fmt.Fprintln(w, "    Environment Variables from:")
		for _, f := range c.EnvFrom {
			kind, name, optional := "ConfigMap", "", (*bool)(nil)
			if f.ConfigMapRef != nil {
				name, optional = f.ConfigMapRef.Name, f.ConfigMapRef.Optional
			} else if f.SecretRef != nil {
				kind, name, optional = "Secret", f.SecretRef.Name, f.SecretRef.Optional
			}
			prefix := ""
			if f.Prefix != "" {
				prefix = fmt.Sprintf(" (prefix %q)", f.Prefix)
			}
			fmt.Fprintf(w, "      %s  %s%s  Optional: %v\n", name, kind, prefix, optional != nil && *optional)
		}
	}
}

// envSource words where an environment variable's value comes from.
func envSource(e manifests.EnvVar) string {
	vf := e.ValueFrom
	switch {
	case vf == nil:
		return e.Value
	case vf.SecretKeyRef != nil:
		r := vf.SecretKeyRef
		return fmt.Sprintf("<set to the key '%s' in secret '%s'>  Optional: %v", r.Key, r.Name, r.Optional != nil && *r.Optional)
	case vf.ConfigMapKeyRef != nil:
		r := vf.ConfigMapKeyRef
		return fmt.Sprintf("<set to the key '%s' of config map '%s'>  Optional: %v", r.Key, r.Name, r.Optional != nil && *r.Optional)
	case vf.FieldRef != nil:
		v := vf.FieldRef.APIVersion
		if v == "" {
			v = "v1"
		}
		return fmt.Sprintf("(%s:%s)", v, vf.FieldRef.FieldPath)
	case vf.ResourceFieldRef != nil:
		return fmt.Sprintf("(%s)", vf.ResourceFieldRef.Resource)
	}
	return e.Value
}
