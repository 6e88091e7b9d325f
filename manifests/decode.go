package manifests

import (
	"fmt"
	"reflect"
	"strconv"

	"gopkg.in/yaml.v3"
)

// MaxDepth is the deepest nesting accepted. A Deployment needs about a
// dozen levels; the cap is far above that and far below anything that
// could exhaust the stack.
const MaxDepth = 64

// Document is one decoded, validated and defaulted object and where it
// came from. Each kind has a field of its own for its typed object (see
// kinds); exactly one of Deployment, Service, Namespace, ConfigMap, Secret,
// PVC and the workload kinds' fields is set.
type Document struct {
	File       string
	Line       int
	Deployment *Deployment
	Service    *Service
	Namespace  *Namespace
	ConfigMap  *ConfigMap
	Secret     *Secret
	PVC        *PersistentVolumeClaim
	// The workload kinds DecodeWorkloads decodes (workload_types.go).
	StatefulSet *StatefulSet
	DaemonSet   *DaemonSet
	ReplicaSet  *ReplicaSet
	Job         *Job
	CronJob     *CronJob
	Pod         *Pod
	// The routing kinds DecodeRouting decodes (routing_types.go).
	Ingress        *Ingress
	IngressClass   *IngressClass
	GatewayClass   *GatewayClass
	Gateway        *Gateway
	HTTPRoute      *HTTPRoute
	ReferenceGrant *ReferenceGrant
	// ReplicasSet tells whether the document set spec.replicas (null is
	// unset). Deployment is defaulted either way; apply keeps the live count
	// when it is false, as kubectl apply does, so that re-applying a file
	// without replicas does not undo a `scale`.
	ReplicasSet bool
	// PausedSet tells whether the document set spec.paused: apply keeps
	// the live value when it is false, as kubectl apply keeps a `rollout
	// pause` made since.
	PausedSet bool
	// Ignored are the paths of the fields with no meaning on one host the
	// document set (ignored.go): decoded, never stored.
	Ignored []string
	// Zeros are the boolean and integer fields the document set to false
	// or 0, by path in the object (spec.template.spec.hostNetwork), with
	// that value: the object's JSON leaves them out as if unset, and apply
	// must store them over the live values as kubectl apply does.
	Zeros map[string]any

	nameLine int // line of metadata.name, for duplicate reports
}

// Kind returns the kind of the document's object.
func (d *Document) Kind() string {
	switch {
	case d.Service != nil:
		return KindService
	case d.Namespace != nil:
		return KindNamespace
	case d.ConfigMap != nil, d.Secret != nil, d.PVC != nil:
		return d.configKind()
	}
	if w := d.workload(); w != nil {
		return w.WorkloadKind()
	}
	if k, _ := d.routing(); k != "" {
		return k
	}
	return Kind
}

// Meta returns the metadata of the document's object.
func (d *Document) Meta() *ObjectMeta {
	switch {
	case d.Service != nil:
		return &d.Service.Metadata
	case d.Namespace != nil:
		return &d.Namespace.Metadata
	case d.ConfigMap != nil, d.Secret != nil, d.PVC != nil:
		return d.configMeta()
	}
	if w := d.workload(); w != nil {
		return w.ObjectMeta()
	}
	if _, m := d.routing(); m != nil {
		return m
	}
	return &d.Deployment.Metadata
}

// Source returns "file:line", for messages that point at the document.
func (d *Document) Source() string { return d.File + ":" + strconv.Itoa(d.Line) }

func decodeDocument(file string, n *yaml.Node, st *decodeState) ([]*Document, ErrorList) {
	if n.Kind != yaml.DocumentNode || len(n.Content) == 0 {
		return nil, nil
	}
	root := n.Content[0]
	if isNull(root) {
		return nil, nil
	}
	if fe := precheck(root); fe != nil {
		fe.File = file
		return nil, ErrorList{fe}
	}
	if root.Kind != yaml.MappingNode {
		return nil, ErrorList{{File: file, Line: root.Line, Msg: "document must be a mapping, got " + describe(root)}}
	}
	if kind, _ := scalarField(root, "kind"); kind == "List" {
		return decodeList(file, root, st)
	}
	d, errs := decodeObject(file, root, "", st)
	if d == nil {
		return nil, errs
	}
	return []*Document{d}, errs
}

// kindDecoder decodes the objects of one kind.
type kindDecoder struct {
	apiVersion string
	// typ is dockctl's type of the kind, k8s Kubernetes': decode walks
	// into the first, checking keys against the second.
	typ, k8s reflect.Type
	// decode walks one object mapping n, whose apiVersion and kind are
	// already checked; base is its path inside the document ("" or
	// items[i]). It returns the validated and defaulted object in a
	// Document, or nil and every error found.
	decode func(file string, n *yaml.Node, base string) (*Document, ErrorList)
}

// kinds maps each kind dockctl accepts to its decoder; adding a kind is one
// entry here, returning a Document that carries it in a field of its own
// (and one in kindOrder).
var kinds = map[string]kindDecoder{
	Kind:          {apiVersion: APIVersion, typ: deploymentType, k8s: k8sDeployment, decode: decodeDeployment},
	KindService:   {apiVersion: CoreAPIVersion, typ: serviceType, k8s: k8sService, decode: decodeService},
	KindNamespace: {apiVersion: CoreAPIVersion, typ: namespaceType, k8s: k8sNamespace, decode: decodeNamespace},
	// Configuration and storage kinds (config_decode.go).
	KindConfigMap:             {apiVersion: CoreAPIVersion, typ: configMapType, k8s: k8sConfigMap, decode: decodeConfigMap},
	KindSecret:                {apiVersion: CoreAPIVersion, typ: secretType, k8s: k8sSecret, decode: decodeSecret},
	KindPersistentVolumeClaim: {apiVersion: CoreAPIVersion, typ: pvcType, k8s: k8sPVC, decode: decodePVC},
}

// fallbackKind is the kind an object of a missing or unknown kind is
// checked against, so that the error names what dockctl expects
// (`kind: must be "Deployment", got "Pod"`).
const fallbackKind = Kind

// decodeObject decodes one object (a document or an item of a List) with
// the decoder of its kind, after checking its apiVersion and kind.
func decodeObject(file string, n *yaml.Node, base string, st *decodeState) (*Document, ErrorList) {
	kind, kindLine := scalarField(n, "kind")
	dec, ok := kinds[kind]
	if !ok {
		dec, ok = st.extra[kind]
	}
	if !ok && kind != "" {
		return nil, st.otherKind(file, n, base, kind, kindLine)
	}
	if !ok {
		kind, dec = fallbackKind, kinds[fallbackKind]
	}
	var errs ErrorList
	for _, want := range []struct{ field, value string }{{"apiVersion", dec.apiVersion}, {"kind", kind}} {
		got, line := scalarField(n, want.field)
		switch {
		case line == 0:
			errs = append(errs, &FieldError{File: file, Line: n.Line, Path: child(base, want.field), Msg: "required"})
		case got != want.value:
			errs = append(errs, &FieldError{File: file, Line: line, Path: child(base, want.field),
				Msg: fmt.Sprintf("must be %q, got %q", want.value, got)})
		}
	}
	if len(errs) > 0 {
		// Checking the fields of some other kind against this one
		// would only bury the one error that matters.
		return nil, errs
	}
	return dec.decode(file, n, base)
}

// scalarField returns the value and line of a scalar key in a mapping (line 0
// when absent or not a scalar).
func scalarField(m *yaml.Node, name string) (string, int) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k, v := m.Content[i], m.Content[i+1]; k.Value == name && v.Kind == yaml.ScalarNode {
			return v.Value, k.Line
		}
	}
	return "", 0
}

// precheck refuses aliases and excessive nesting before anything interprets
// the tree. Aliases are refused outright rather than expanded under a cap:
// Kubernetes manifests do not need them and it removes alias bombs (a few
// hundred bytes expanding to gigabytes) as a class. The walk is iterative so
// that the check itself cannot overflow the stack.
func precheck(root *yaml.Node) *FieldError {
	type item struct {
		n     *yaml.Node
		depth int
	}
	stack := []item{{root, 1}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if it.n.Kind == yaml.AliasNode {
			return &FieldError{Line: it.n.Line, Msg: fmt.Sprintf("YAML aliases (*%s) are not supported", it.n.Value)}
		}
		if it.n.Kind == yaml.MappingNode && hasMergeKey(it.n) {
			return &FieldError{Line: it.n.Line, Msg: "YAML merge keys (<<) are not supported"}
		}
		if it.depth > MaxDepth {
			return &FieldError{Line: it.n.Line, Msg: fmt.Sprintf("nesting is deeper than %d levels", MaxDepth)}
		}
		// Pushed in reverse so that the first problem in document order
		// is the one reported.
		for i := len(it.n.Content) - 1; i >= 0; i-- {
			stack = append(stack, item{it.n.Content[i], it.depth + 1})
		}
	}
	return nil
}

func hasMergeKey(m *yaml.Node) bool {
	for i := 0; i < len(m.Content); i += 2 {
		if m.Content[i].Kind == yaml.ScalarNode && m.Content[i].ShortTag() == "!!merge" {
			return true
		}
	}
	return false
}
