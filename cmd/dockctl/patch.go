package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/dockctl/dockctl/manifests"
	"github.com/dockctl/dockctl/store"
)

func newPatchCommand(g *globalOptions) *cobra.Command {
	var typ, patch, patchFile string
	cmd := &cobra.Command{
		Use:   "patch KIND NAME (-p PATCH | --patch-file FILE) [--type merge|json]",
		Short: "Change a stored object (deployments, statefulsets, services, ingresses…) with a JSON merge patch or a JSON patch",
		Long: "Apply a patch to the object as the state directory holds it (`get -o json` without the status Docker reports), then\n" +
			"store the result as `apply -f` of it would: validated in full (an invalid result changes nothing), a changed pod template\n" +
			"rolled out, a change of metadata alone not, status and server-set fields ignored. The result is stored whole: a field\n" +
			"the patch removes is removed (spec.paused: resumed; spec.replicas: back to 1), nothing is merged with the stored object.\n\n" +
			"--type merge (the default here) is an RFC 7386 JSON merge patch: lists are replaced whole. --type json is an RFC 6902\n" +
			"JSON patch (a list of operations). kubectl's default, strategic, is refused: dockctl has no strategic merge metadata\n" +
			"(which lists merge by which key), so use merge, or json to change one item of a list.\n\n" + kindsSentence(storeKindWords),
		Example: `  # Scale deployment web with a merge patch
  dockctl patch deployment web -p '{"spec":{"replicas":3}}'

  # Change the image of the first container (a new revision, rolled out)
  dockctl patch deploy/web --type json -p '[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"nginx:1.27"}]'

  # Set a key of configmap cfg in namespace team, the patch read from a file
  dockctl patch cm cfg -n team --patch-file cfg-patch.yaml`,
		Args: cobra.MaximumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			// kubectl's words, in its order: the patch, then the object.
			var p []byte
			var err error
			switch {
			case patch != "" && patchFile != "":
				return errors.New("cannot specify --patch and --patch-file together")
			case patchFile != "":
				if p, err = os.ReadFile(patchFile); err != nil {
					return fmt.Errorf("unable to read patch file: %v", err)
				}
			case patch != "":
				p = []byte(patch)
			default:
				return errors.New("must specify --patch or --patch-file containing the contents of the patch")
			}
			kind, name, err := resourceArg(args, patchKinds...)
			if err != nil {
				return err
			}
			return runPatch(cmd.OutOrStdout(), cmd.ErrOrStderr(), g, g.ref(kind, name), typ, p)
		},
	}
	cmd.Flags().StringVar(&typ, "type", "merge", "the type of patch: merge (RFC 7386 JSON merge patch) or json (RFC 6902 JSON patch); strategic is refused")
	cmd.Flags().StringVarP(&patch, "patch", "p", "", "the patch, JSON or YAML")
	cmd.Flags().StringVar(&patchFile, "patch-file", "", "a file holding the patch, JSON or YAML")
	return cmd
}

// ref names an object of a stored kind (kindAliases' word) in -n's
// namespace (none for a Namespace).
func (g *globalOptions) ref(kind, name string) store.ObjectRef {
	ref := store.ObjectRef{Kind: storeKinds[kind], Namespace: g.namespace, Name: name}
	if ref.Kind == store.KindNamespace {
		ref.Namespace = ""
	}
	return ref
}

// runPatch patches the stored object ref with a patch of type typ and
// stores the result (storeEdited), printing kubectl's line.
func runPatch(out, errOut io.Writer, g *globalOptions, ref store.ObjectRef, typ string, patch []byte) error {
	switch typ {
	case "merge", "json":
	case "strategic":
		return errors.New("--type strategic is not supported: dockctl has no strategic merge metadata; use --type merge (lists replaced whole) or --type json")
	default:
		return fmt.Errorf("--type must be one of [json merge strategic], not %q", typ)
	}
	st, err := g.openStore()
	if err != nil {
		return err
	}
	orig, err := liveJSON(g, st, ref)
	if err != nil {
		return err
	}
	// Like kubectl, a patch may be written in YAML.
	pj, err := yamlToJSON(patch)
	if err != nil {
		if ref.Kind == store.KindSecret {
			// A Secret's patch holds values: never echoed (kubectl would).
			return errors.New("unable to parse the patch: it is neither JSON nor YAML")
		}
		return fmt.Errorf("unable to parse %q: %v", string(patch), err)
	}
	var patched []byte
	if typ == "merge" {
		patched, err = jsonpatch.MergePatch(orig, pj)
	} else {
		var ops jsonpatch.Patch
		if ops, err = jsonpatch.DecodePatch(pj); err == nil {
			patched, err = ops.Apply(orig)
		}
	}
	if err != nil {
		if ref.Kind == store.KindSecret {
			return fmt.Errorf("unable to apply the patch to %s", kubectlName(ref)) // its error may quote a value
		}
		return fmt.Errorf("unable to apply the patch to %s: %v", kubectlName(ref), err)
	}
	act, err := storeEdited(errOut, g, st, ref, patched, "patch")
	if err != nil {
		return err
	}
	if act == store.Unchanged {
		fmt.Fprintf(out, "%s patched (no change)\n", kubectlName(ref))
	} else {
		fmt.Fprintf(out, "%s patched\n", kubectlName(ref))
	}
	return nil
}

// storedObject is the stored object ref names in Kubernetes' shape, as `get
// -o json` shows it less what Docker or the controller report (status,
// allocated addresses): the spec as applied, with the server-set metadata
// (namespace, generation, creationTimestamp), and what the kind's
// storedShape adds. An object with no live record is an error wrapping
// store.ErrNotFound, worded by notFoundIn.
func storedObject(g *globalOptions, st *store.Store, ref store.ObjectRef) (any, error) {
	k := kindByStore(ref.Kind)
	if k == nil {
		return nil, fmt.Errorf("%s cannot be patched", ref.Kind)
	}
	o, err := st.LookupObject(ref)
	if err == nil && o.Deleted {
		err = store.ErrNotFound
	}
	if err != nil {
		return nil, notFoundIn(g, ref.Kind, ref.Namespace, ref.Name, err)
	}
	if apiResourceOf(ref.Kind).namespaced {
		o.Meta.Namespace = o.Meta.NamespaceOrDefault()
	}
	created := o.Created
	o.Meta.CreationTimestamp = &created
	if k.storedShape != nil {
		k.storedShape(o)
	}
	return o.Object, nil
}

// storedShape is what a kind's stored object shows beyond its record
// (storedObject): what the API server defaults or reports of it.
type storedShape func(o *store.StoredObject)

// storedService adds the defaults and the managers `get -o json` shows.
func storedService(o *store.StoredObject) {
	s := o.Object.(*manifests.Service)
	manifests.SetServiceDefaults(s)
	s.Metadata.ManagedFields = o.Entries()
}

// storedNamespace drops the phase a manifest may hold.
func storedNamespace(o *store.StoredObject) { o.Object.(*manifests.Namespace).Status = nil }

// storedSecret shows the type the API server defaults.
func storedSecret(o *store.StoredObject) {
	s := o.Object.(*manifests.Secret)
	s.Type = secretType(s)
}

// liveJSON is storedObject as JSON.
func liveJSON(g *globalOptions, st *store.Store, ref store.ObjectRef) ([]byte, error) {
	obj, err := storedObject(g, st, ref)
	if err != nil {
		return nil, err
	}
	return json.Marshal(obj)
}

// yamlToJSON reads a patch or an edited object written in JSON or YAML.
func yamlToJSON(b []byte) ([]byte, error) { return yaml.YAMLToJSON(bytes.TrimSpace(b)) }

// storeEdited stores data (JSON, the object ref names as changed by patch
// or edit) the way `apply -f` of it would — decoded and validated by the
// manifests decoder, then applied alone — but whole: it is the live object
// as changed, so a field it lacks was removed, and nothing is merged with
// or kept from the live object. It must still be ref's object: kind, name
// and namespace cannot change. It returns what the store did. The change
// is recorded as updater's (patch, edit): the object's manager stays, as a
// Kubernetes Update operation leaves the applier's fields, and so does its
// last-applied configuration.
func storeEdited(errOut io.Writer, g *globalOptions, st *store.Store, ref store.ObjectRef, data []byte, updater string) (store.Action, error) {
	var head struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return "", fmt.Errorf("%s: the object must be a JSON object: %v", kubectlName(ref), err)
	}
	wantNS := manifests.DefaultNamespace
	if ref.Namespace != "" {
		wantNS = ref.Namespace
	}
	if ref.Kind == store.KindNamespace {
		wantNS = ""
	}
	gotNS := head.Metadata.Namespace
	if gotNS == "" && ref.Kind != store.KindNamespace {
		gotNS = manifests.DefaultNamespace
	}
	switch {
	case head.Kind != ref.Kind:
		return "", fmt.Errorf("%s: the kind cannot be changed (to %q)", kubectlName(ref), head.Kind)
	case head.Metadata.Name != ref.Name:
		return "", fmt.Errorf("%s: metadata.name cannot be changed (to %q)", kubectlName(ref), head.Metadata.Name)
	case gotNS != wantNS:
		return "", fmt.Errorf("%s: metadata.namespace cannot be changed (to %q)", kubectlName(ref), head.Metadata.Namespace)
	}
	docs, err := manifests.Decode(kubectlName(ref), data)
	if err != nil {
		return "", invalid(ref, err)
	}
	b, err := g.bundleOf(docs)
	if err != nil {
		return "", err
	}
	if b.empty() {
		return "", fmt.Errorf("%s: no object left to store", kubectlName(ref))
	}
	warnIgnored(errOut, b)
	warnPrivileges(errOut, &b.Bundle, st)
	// The object is whole, the live one as changed: a field it lacks was
	// removed (spec.paused: unpaused; spec.replicas: the default), as the
	// API server takes a patched or edited object.
	results, err := st.Apply(b.Bundle, store.ApplyOptions{Updater: updater})
	if err != nil {
		return "", err
	}
	for _, r := range results {
		if r.Kind == ref.Kind && r.Name == ref.Name {
			return r.Action, nil
		}
	}
	return store.Unchanged, nil
}

// invalid words the decoder's errors about the object ref as the API
// server does (`The Deployment "web" is invalid: spec…: required`), one
// line each: no file nor line, the object being no file.
func invalid(ref store.ObjectRef, err error) error {
	var list manifests.ErrorList
	if !errors.As(err, &list) {
		return err
	}
	lines := make([]string, len(list))
	for i, e := range list {
		fe := *e
		fe.File, fe.Line = "", 0
		lines[i] = fmt.Sprintf("the %s %q is invalid: %s", ref.Kind, ref.Name, fe.Error())
	}
	return errors.New(strings.Join(lines, "\n"))
}
