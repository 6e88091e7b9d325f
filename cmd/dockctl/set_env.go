package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dockctl/dockctl/store"
)

// set env and set resources change the containers of the pod template of
// stored objects of any kind that has one (kindInfo.podTemplate), as
// kubectl's do of any object with a pod template: the stored object, as
// patch sees it, is changed and stored whole as patch stores it
// (storeEdited: validated, a changed template rolled out).

// podTemplateObject is one stored object set env or set resources
// changes: its JSON decoded generically, so that only the containers'
// env or resources are rewritten and every other field is kept as
// stored.
type podTemplateObject struct {
	kind *kindInfo
	ref  store.ObjectRef
	obj  map[string]any
}

// displayName is kubectl's name of the object in its messages:
// deployment.apps/web, statefulset.apps/db.
func (o *podTemplateObject) displayName() string {
	r := o.kind.api
	k := strings.ToLower(r.kind)
	if r.group != "" {
		k += "." + r.group
	}
	return k + "/" + o.ref.Name
}

// containers are the containers of the pod template (init containers
// after the others, as kubectl's set env lists them) whose name matches
// the glob selector; all of them for "*".
func (o *podTemplateObject) containers(selector string) ([]map[string]any, error) {
	var spec any = o.obj
	for _, k := range append(slices.Clone(o.kind.podTemplate), "spec") {
		m, ok := spec.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s has no pod template", o.displayName())
		}
		spec = m[k]
	}
	m, ok := spec.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s has no pod template", o.displayName())
	}
	var out []map[string]any
	for _, field := range []string{"containers", "initContainers"} {
		list, _ := m[field].([]any)
		for _, c := range list {
			cm, ok := c.(map[string]any)
			if !ok {
				continue
			}
			name, _ := cm["name"].(string)
			if ok, err := path.Match(selector, name); err != nil {
				return nil, fmt.Errorf("invalid container selector %q: %w", selector, err)
			} else if ok {
				out = append(out, cm)
			}
		}
	}
	return out, nil
}

// loadPodTemplateObjects reads the objects args name (KIND/NAME… or
// KIND NAME…), each of a kind with a pod template, from st.
func loadPodTemplateObjects(cmd *cobra.Command, g *globalOptions, st *store.Store, args []string) ([]*podTemplateObject, error) {
	objs, err := objectArgs(args, templateKinds...)
	if err != nil {
		return nil, refuseKind(cmd, err)
	}
	var out []*podTemplateObject
	for _, a := range objs {
		if a.name == "" {
			return nil, errors.New("resource(s) were provided, but no name was specified")
		}
		ref := g.ref(a.kind, a.name)
		b, err := liveJSON(g, st, ref)
		if err != nil {
			return nil, err
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber() // numbers kept as written: no float rounding of what is not changed
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			return nil, fmt.Errorf("%s: %w", ref, err)
		}
		out = append(out, &podTemplateObject{kind: kindByName(a.kind), ref: ref, obj: m})
	}
	return out, nil
}

// store stores o as changed, recorded as updater's, and says whether
// anything changed.
func (o *podTemplateObject) store(errOut io.Writer, g *globalOptions, st *store.Store, updater string) (bool, error) {
	b, err := json.Marshal(o.obj)
	if err != nil {
		return false, err
	}
	act, err := storeEdited(errOut, g, st, o.ref, b, updater)
	return act != store.Unchanged, err
}

// convertField decodes field of container c into v (env, resources).
func convertField(c map[string]any, field string, v any) error {
	raw, ok := c[field]
	if !ok {
		return nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// setField stores v as field of container c (none when empty).
func setField(c map[string]any, field string, v any, empty bool) error {
	if empty {
		delete(c, field)
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var g any
	if err := json.Unmarshal(b, &g); err != nil {
		return err
	}
	c[field] = g
	return nil
}

func newSetEnvCommand(g *globalOptions) *cobra.Command {
	var (
		containers, prefix string
		from, envFlags     []string
		keys               []string
		list, overwrite    bool
	)
	cmd := &cobra.Command{
		Use:   "env KIND/NAME… KEY_1=VAL_1 … KEY_N=VAL_N [KEY-…] [--from=configmap/NAME|secret/NAME] [-c CONTAINER] [--list]",
		Short: "Set, change or remove environment variables of the containers of a pod template (a new revision, rolled out)",
		Long: "Set, change (KEY=VALUE) or remove (KEY-) environment variables of the containers (init containers too) of\n" +
			"the pod template of stored objects, as kubectl set env; --from adds one variable per key of a ConfigMap or\n" +
			"Secret, as a reference to it (valueFrom); --list prints the variables instead. " + kindsSentence(pluralsOf(templateKinds)),
		Example: `  # Set a variable of every container of deployment web
  dockctl set env deployment/web LOG_LEVEL=debug

  # Remove it, and set another, in container sidecar only
  dockctl set env deployment/web LOG_LEVEL- MODE=fast -c sidecar

  # A variable per key of ConfigMap app, each prefixed with APP_
  dockctl set env statefulset/db --from=configmap/app --prefix=APP_

  # List the variables of a job's containers
  dockctl set env job/migrate --list`,
		RunE: func(cmd *cobra.Command, args []string) error {
			var resources []string
			var env []corev1.EnvVar
			var remove []string
			// -e KEY=VALUE is kubectl's flag form of an argument KEY=VALUE.
			for _, e := range envFlags {
				k, v, ok := strings.Cut(e, "=")
				if !ok {
					return fmt.Errorf("environment variables must be of the form key=value: %s", e)
				}
				if err := validEnvName(k); err != nil {
					return err
				}
				env = append(env, corev1.EnvVar{Name: k, Value: v})
			}
			for _, a := range args {
				switch {
				case strings.Contains(a, "="):
					k, v, _ := strings.Cut(a, "=")
					if err := validEnvName(k); err != nil {
						return err
					}
					env = append(env, corev1.EnvVar{Name: k, Value: v})
				case strings.HasSuffix(a, "-") && !strings.Contains(a, "/"):
					remove = append(remove, strings.TrimSuffix(a, "-"))
				default:
					resources = append(resources, a)
				}
			}
			if len(resources) == 0 {
				return fmt.Errorf("one or more resources must be specified as <resource> <name> or <resource>/<name>")
			}
			if !list && len(env) == 0 && len(remove) == 0 && len(from) == 0 {
				return fmt.Errorf("at least one environment variable must be provided")
			}
			st, err := g.openStore()
			if err != nil {
				return err
			}
			fromEnv, err := envFrom(cmd.ErrOrStderr(), g, st, from, keys)
			if err != nil {
				return err
			}
			env = append(fromEnv, env...)
			for i := range env {
				env[i].Name = prefix + env[i].Name
			}
			objs, err := loadPodTemplateObjects(cmd, g, st, resources)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			for _, o := range objs {
				cs, err := o.containers(containers)
				if err != nil {
					return err
				}
				if len(cs) == 0 {
					fmt.Fprintf(cmd.ErrOrStderr(), "Warning: %s/%s does not have any containers matching %q\n", o.kind.api.kind, o.ref.Name, containers) // kubectl's WarningPrinter
					continue
				}
				for _, c := range cs {
					var cur []corev1.EnvVar
					if err := convertField(c, "env", &cur); err != nil {
						return fmt.Errorf("%s: env: %w", o.displayName(), err)
					}
					if !overwrite {
						if err := envNoOverwrites(cur, env); err != nil {
							return fmt.Errorf("%s %v", o.displayName(), err)
						}
					}
					next := updateEnv(cur, env, remove)
					if list {
						fmt.Fprintf(out, "# %s %s, container %s\n", o.kind.api.resource, o.ref.Name, c["name"])
						for _, e := range next {
							if e.ValueFrom == nil {
								fmt.Fprintf(out, "%s=%s\n", e.Name, e.Value)
							} else {
								fmt.Fprintf(out, "# %s from %s\n", e.Name, envRefString(e.ValueFrom))
							}
						}
						continue
					}
					if err := setField(c, "env", next, len(next) == 0); err != nil {
						return err
					}
				}
				if list {
					continue
				}
				changed, err := o.store(cmd.ErrOrStderr(), g, st, "set env")
				if err != nil {
					return unwrapPlain(err)
				}
				// As kubectl: an update that changes nothing prints nothing.
				if changed {
					fmt.Fprintf(out, "%s env updated\n", o.displayName())
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&containers, "containers", "c", "*", "the names of containers to change (a glob: * all, web-*)")
	cmd.Flags().StringArrayVarP(&envFlags, "env", "e", nil, "a variable to set, KEY=VALUE (repeatable), as an argument KEY=VALUE")
	cmd.Flags().StringArrayVar(&from, "from", nil, "a ConfigMap or Secret (configmap/NAME, secret/NAME): a variable per key, a reference to it (repeatable)")
	cmd.Flags().StringSliceVar(&keys, "keys", nil, "with --from, only these keys")
	cmd.Flags().StringVar(&prefix, "prefix", "", "prefix of the names of the variables set")
	cmd.Flags().BoolVar(&list, "list", false, "print the variables of the containers instead of changing them")
	cmd.Flags().BoolVar(&overwrite, "overwrite", true, "with false, refuse to change a variable that is set")
	return cmd
}

// validEnvName is the API server's check of an environment variable's
// name, in kubectl's words.
func validEnvName(k string) error {
	if k == "" || strings.ContainsAny(k, "=") {
		return fmt.Errorf("invalid key: %q", k)
	}
	return nil
}

// invalidEnvChars are the characters kubectl's --from replaces with _ in
// a key to make a variable's name.
var invalidEnvChars = regexp.MustCompile(`[^A-Za-z0-9_]`)

// envFrom are the variables of --from's ConfigMaps and Secrets: one per
// key (in keys, when given), sorted, each a reference to its key, named
// as kubectl names them (upper case, invalid characters as _, with a
// warning).
func envFrom(errOut io.Writer, g *globalOptions, st *store.Store, from, keys []string) ([]corev1.EnvVar, error) {
	var env []corev1.EnvVar
	for _, f := range from {
		kind, name, err := resourceArg([]string{f}, kindConfigMap, kindSecret)
		if err != nil {
			var ke *kindError
			if errors.As(err, &ke) {
				return nil, fmt.Errorf("unsupported resource specified in --from: %s", apiResourceOf(ke.kind).resource)
			}
			return nil, err
		}
		b, err := liveJSON(g, st, g.ref(kind, name))
		if err != nil {
			return nil, err
		}
		var obj struct {
			Data map[string]any `json:"data"`
		}
		if err := json.Unmarshal(b, &obj); err != nil {
			return nil, err
		}
		ks := make([]string, 0, len(obj.Data))
		for k := range obj.Data {
			if len(keys) == 0 || slices.Contains(keys, k) {
				ks = append(ks, k)
			}
		}
		sort.Strings(ks)
		for _, k := range ks {
			n := strings.ToUpper(invalidEnvChars.ReplaceAllString(k, "_"))
			if n != k {
				fmt.Fprintf(errOut, "Warning: key %s transferred to %s\n", k, n) // kubectl's WarningPrinter
			}
			src := &corev1.EnvVarSource{}
			if kind == kindSecret {
				src.SecretKeyRef = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: k}
			} else {
				src.ConfigMapKeyRef = &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: k}
			}
			env = append(env, corev1.EnvVar{Name: n, ValueFrom: src})
		}
	}
	return env, nil
}

// updateEnv is kubectl's: existing variables replaced in place, removed
// ones dropped, new ones appended in their order.
func updateEnv(existing, env []corev1.EnvVar, remove []string) []corev1.EnvVar {
	out := []corev1.EnvVar{}
	covered := map[string]bool{}
	for _, r := range remove {
		covered[r] = true
	}
	find := func(name string) (corev1.EnvVar, bool) {
		for i := len(env) - 1; i >= 0; i-- {
			if env[i].Name == name {
				return env[i], true
			}
		}
		return corev1.EnvVar{}, false
	}
	for _, e := range existing {
		if covered[e.Name] {
			continue
		}
		if newer, ok := find(e.Name); ok {
			covered[e.Name] = true
			out = append(out, newer)
			continue
		}
		out = append(out, e)
	}
	for _, e := range env {
		if covered[e.Name] {
			continue
		}
		covered[e.Name] = true
		newer, _ := find(e.Name)
		out = append(out, newer)
	}
	return out
}

// envNoOverwrites is --overwrite=false's refusal, in kubectl's words.
func envNoOverwrites(existing, env []corev1.EnvVar) error {
	for _, e := range env {
		for _, x := range existing {
			if x.Name == e.Name && (x.Value != e.Value || x.ValueFrom != nil || e.ValueFrom != nil) {
				return fmt.Errorf("'%s' already has a value (%s), and --overwrite is false", e.Name, x.Value)
			}
		}
	}
	return nil
}

// envRefString is kubectl's words for a valueFrom in --list.
func envRefString(from *corev1.EnvVarSource) string {
	switch {
	case from.ConfigMapKeyRef != nil:
		return fmt.Sprintf("configmap %s, key %s", from.ConfigMapKeyRef.Name, from.ConfigMapKeyRef.Key)
	case from.SecretKeyRef != nil:
		return fmt.Sprintf("secret %s, key %s", from.SecretKeyRef.Name, from.SecretKeyRef.Key)
	case from.FieldRef != nil:
		return fmt.Sprintf("field path %s", from.FieldRef.FieldPath)
	case from.ResourceFieldRef != nil:
		containerPrefix := ""
		if from.ResourceFieldRef.ContainerName != "" {
			containerPrefix = from.ResourceFieldRef.ContainerName + "/"
		}
		return fmt.Sprintf("resource field %s%s", containerPrefix, from.ResourceFieldRef.Resource)
	}
	return "invalid valueFrom"
}

func newSetResourcesCommand(g *globalOptions) *cobra.Command {
	var containers, limits, requests string
	cmd := &cobra.Command{
		Use:   "resources KIND/NAME… [--limits=cpu=CPU,memory=MEMORY] [--requests=cpu=CPU,memory=MEMORY] [-c CONTAINER]",
		Short: "Set the resource requests and limits of the containers of a pod template (a new revision, rolled out)",
		Long: "Set resource requests and limits of the containers (init containers too) of the pod template of stored\n" +
			"objects, as kubectl set resources: the resources given are set, the others kept. " + kindsSentence(pluralsOf(templateKinds)),
		Example: `  # Limit every container of deployment web to half a CPU and 256 MiB
  dockctl set resources deployment/web --limits=cpu=500m,memory=256Mi

  # Requests and limits of container worker of a stateful set
  dockctl set resources sts/queue -c worker --requests=cpu=100m --limits=memory=1Gi`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return fmt.Errorf("one or more resources must be specified as <resource> <name> or <resource>/<name>")
			}
			if limits == "" && requests == "" {
				return errors.New("you must specify an update to requests or limits (in the form of --requests/--limits)")
			}
			lim, err := parseResourceList(limits)
			if err != nil {
				return err
			}
			req, err := parseResourceList(requests)
			if err != nil {
				return err
			}
			st, err := g.openStore()
			if err != nil {
				return err
			}
			objs, err := loadPodTemplateObjects(cmd, g, st, args)
			if err != nil {
				return err
			}
			// As kubectl's: an object none of whose containers -c names
			// is an error, after the others are changed.
			var missing []error
			for _, o := range objs {
				cs, err := o.containers(containers)
				if err != nil {
					return err
				}
				if len(cs) == 0 {
					missing = append(missing, fmt.Errorf("unable to find container named %s", containers))
					continue
				}
				for _, c := range cs {
					var rr corev1.ResourceRequirements
					if err := convertField(c, "resources", &rr); err != nil {
						return fmt.Errorf("%s: resources: %w", o.displayName(), err)
					}
					rr.Limits = mergeResources(rr.Limits, lim)
					rr.Requests = mergeResources(rr.Requests, req)
					if err := setField(c, "resources", rr, len(rr.Limits) == 0 && len(rr.Requests) == 0 && len(rr.Claims) == 0); err != nil {
						return err
					}
				}
				changed, err := o.store(cmd.ErrOrStderr(), g, st, "set resources")
				if err != nil {
					return unwrapPlain(err)
				}
				if changed {
					fmt.Fprintf(cmd.OutOrStdout(), "%s resource requirements updated\n", o.displayName())
				}
			}
			return errors.Join(missing...)
		},
	}
	cmd.Flags().StringVarP(&containers, "containers", "c", "*", "the names of containers to change (a glob: * all, web-*)")
	cmd.Flags().StringVar(&limits, "limits", "", "the resource limits, as cpu=200m,memory=512Mi")
	cmd.Flags().StringVar(&requests, "requests", "", "the resource requests, as cpu=100m,memory=256Mi")
	return cmd
}

// parseResourceList reads NAME=QUANTITY,… as kubectl's --limits and
// --requests.
func parseResourceList(s string) (corev1.ResourceList, error) {
	if s == "" {
		return nil, nil
	}
	out := corev1.ResourceList{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("invalid argument syntax %s, expected <resource>=<value>", kv)
		}
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("invalid value %q of resource %s: %v", v, k, err)
		}
		out[corev1.ResourceName(k)] = q
	}
	return out, nil
}

// mergeResources sets set's quantities in cur.
func mergeResources(cur, set corev1.ResourceList) corev1.ResourceList {
	if len(set) == 0 {
		return cur
	}
	if cur == nil {
		cur = corev1.ResourceList{}
	}
	for k, v := range set {
		cur[k] = v
	}
	return cur
}
