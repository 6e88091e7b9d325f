package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

// metaVerb is what tells `label` from `annotate`.
type metaVerb struct {
	verb, noun string // "label", "label"; "annotate", "annotation"
	field      func(*manifests.ObjectMeta) *map[string]string
}

var (
	labelVerb = metaVerb{"label", "label", func(m *manifests.ObjectMeta) *map[string]string { return &m.Labels }}
	annotVerb = metaVerb{"annotate", "annotation", func(m *manifests.ObjectMeta) *map[string]string { return &m.Annotations }}
)

func newLabelCommand(g *globalOptions) *cobra.Command {
	return newMetaCommand(g, labelVerb, `  # Label deployment web (its metadata, not its pod template: no rollout)
  dockctl label deployment web tier=front

  # Change a label's value: --overwrite is required
  dockctl label svc/web tier=back --overwrite

  # Remove label tier of namespace team
  dockctl label ns team tier-`)
}

func newAnnotateCommand(g *globalOptions) *cobra.Command {
	return newMetaCommand(g, annotVerb, `  # Annotate deployment web (its metadata, not its pod template: no rollout)
  dockctl annotate deployment web owner=team-a

  # Change an annotation's value: --overwrite is required
  dockctl annotate configmap/cfg description='the settings of web' --overwrite

  # Remove annotation owner of secret creds in namespace team
  dockctl annotate secret creds owner- -n team`)
}

func newMetaCommand(g *globalOptions, v metaVerb, example string) *cobra.Command {
	var overwrite bool
	cmd := &cobra.Command{
		Use: v.verb + " KIND NAME KEY=VAL… [KEY-…] [--overwrite]",
		Short: fmt.Sprintf("Add, change (--overwrite) or remove (KEY-) %ss of a stored object's metadata (deployments, statefulsets, services, ingresses…)",
			v.noun),
		Long: fmt.Sprintf("Add, change (--overwrite) or remove (KEY-) %ss of a stored object's metadata, as kubectl %s. ", v.noun, v.verb) +
			kindsSentence(storeKindWords),
		Example: example,
		RunE: func(cmd *cobra.Command, args []string) error {
			var resource, pairs []string
			for _, a := range args {
				if strings.Contains(a, "=") || (strings.HasSuffix(a, "-") && a != "-") {
					pairs = append(pairs, a)
				} else {
					resource = append(resource, a)
				}
			}
			if len(resource) == 0 {
				return errors.New("one or more resources must be specified as <resource> <name> or <resource>/<name>") // kubectl's words
			}
			set, remove, err := parseMetaPairs(v, pairs)
			if err != nil {
				return err
			}
			kind, name, err := resourceArg(resource, patchKinds...)
			if err != nil {
				return err
			}
			ref := g.ref(kind, name)
			st, err := g.openStore()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			var absent []string
			shrunk := false
			act, err := st.UpdateMetadataAs(v.verb, ref, func(m *manifests.ObjectMeta) error {
				absent, shrunk = absent[:0], false
				field := v.field(m)
				if !overwrite {
					if err := noOverwrites(v, *field, set); err != nil {
						return err
					}
				}
				before, _ := json.Marshal(*field)
				next := make(map[string]string, len(*field)+len(set))
				for k, val := range *field {
					next[k] = val
				}
				for _, k := range remove {
					if _, ok := next[k]; !ok {
						absent = append(absent, k)
					}
					delete(next, k)
				}
				for k, val := range set {
					next[k] = val
				}
				if len(next) == 0 {
					next = nil
				}
				*field = next
				after, _ := json.Marshal(next)
				shrunk = len(after) < len(before)
				return nil
			})
			if err != nil {
				return notFoundIn(g, ref.Kind, ref.Namespace, ref.Name, err)
			}
			if v.verb == "label" {
				// As kubectl: a removed label that was not there is
				// named; the verb says what happened.
				for _, k := range absent {
					fmt.Fprintf(out, "label %q not found.\n", k)
				}
				msg := "labeled"
				switch {
				case act == store.Unchanged:
					msg = "not labeled"
				case !overwrite && shrunk:
					msg = "unlabeled"
				}
				fmt.Fprintf(out, "%s %s\n", kubectlName(ref), msg)
				return nil
			}
			fmt.Fprintf(out, "%s annotated\n", kubectlName(ref))
			return nil
		},
	}
	cmd.Flags().BoolVar(&overwrite, "overwrite", false, fmt.Sprintf("allow changing the value of an existing %s", v.noun))
	return cmd
}

// parseMetaPairs parses KEY=VAL and KEY- as kubectl's label and annotate
// do, with their messages: a label's value is checked here (kubectl does
// it before asking the server); keys are checked by the store's
// validation of the object.
func parseMetaPairs(v metaVerb, pairs []string) (map[string]string, []string, error) {
	if len(pairs) == 0 {
		return nil, nil, fmt.Errorf("at least one %s update is required", v.noun)
	}
	set := map[string]string{}
	var remove, invalid []string
	for _, p := range pairs {
		switch {
		case strings.Contains(p, "=") && p[0] != '=':
			k, val, _ := strings.Cut(p, "=")
			if v.verb == "label" {
				if strings.Contains(val, "=") {
					return nil, nil, fmt.Errorf("invalid label spec: %s", p)
				}
				if msgs := validation.IsValidLabelValue(val); len(msgs) > 0 {
					return nil, nil, fmt.Errorf("invalid label value: %q: %s", p, strings.Join(msgs, ";"))
				}
			}
			set[k] = val
		case strings.HasSuffix(p, "-") && p != "-":
			remove = append(remove, strings.TrimSuffix(p, "-"))
		default:
			invalid = append(invalid, p)
		}
	}
	if len(invalid) > 0 {
		if v.verb == "label" {
			return nil, nil, fmt.Errorf("unknown label spec: %s", invalid[0])
		}
		return nil, nil, fmt.Errorf("invalid annotation format: %s", strings.Join(invalid, ", "))
	}
	for _, k := range remove {
		if _, ok := set[k]; ok {
			article := "a"
			if v.verb == "annotate" {
				article = "an"
			}
			return nil, nil, fmt.Errorf("can not both modify and remove %s %s in the same command", article, v.noun)
		}
	}
	return set, remove, nil
}

// noOverwrites refuses to change an existing value without --overwrite,
// in kubectl's words (the same value is no change, and allowed).
func noOverwrites(v metaVerb, cur, set map[string]string) error {
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var msgs []string
	for _, k := range keys {
		if old, ok := cur[k]; ok && old != set[k] {
			if v.verb == "annotate" && k == manifests.AnnotationChangeCause {
				continue // kubectl: the change cause can always be overwritten
			}
			msgs = append(msgs, fmt.Sprintf("'%s' already has a value (%s)", k, old))
		}
	}
	switch {
	case len(msgs) == 0:
		return nil
	case v.verb == "annotate":
		return fmt.Errorf("--overwrite is false but found the following declared annotation(s): %s", strings.Join(msgs, "; "))
	default:
		errs := make([]error, len(msgs))
		for i, m := range msgs {
			errs[i] = errors.New(m + ", and --overwrite is false")
		}
		return errors.Join(errs...)
	}
}

// kubectlName names an object as kubectl's output does
// (deployment.apps/web, service/web, persistentvolumeclaim/data).
func kubectlName(ref store.ObjectRef) string {
	if ref.Kind == store.KindDeployment {
		return "deployment.apps/" + ref.Name
	}
	return ref.String()
}
