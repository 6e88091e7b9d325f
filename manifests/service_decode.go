package manifests

import (
	"reflect"

	"gopkg.in/yaml.v3"
	corev1 "k8s.io/api/core/v1"
)

var (
	serviceType       = reflect.TypeOf(Service{})
	namespaceType     = reflect.TypeOf(Namespace{})
	namespaceSpecType = reflect.TypeOf(NamespaceSpec{})
	k8sService        = reflect.TypeOf(corev1.Service{})
	k8sNamespace      = reflect.TypeOf(corev1.Namespace{})
)

// decodeService walks one Service mapping, whose apiVersion and kind
// decodeObject has checked, validates it as written and defaults it.
func decodeService(file string, n *yaml.Node, base string) (*Document, ErrorList) {
	svc := &Service{}
	w, errs := decodeInto(file, n, base, svc, k8sService, func(lines map[string]int) ErrorList {
		return validateService(svc, base, lines)
	})
	if len(errs) > 0 {
		return nil, errs
	}
	SetServiceDefaults(svc)
	return &Document{File: file, Line: n.Line, Service: svc, Zeros: w.explicitZeros(base), nameLine: w.lineOf(child(base, "metadata.name"))}, nil
}

// decodeNamespace walks one Namespace mapping. spec.finalizers and status
// are skipped by the walk (ignoredKeys); metadata.namespace is dropped, as
// the API server drops it from a cluster-scoped object.
func decodeNamespace(file string, n *yaml.Node, base string) (*Document, ErrorList) {
	ns := &Namespace{}
	w, errs := decodeInto(file, n, base, ns, k8sNamespace, func(lines map[string]int) ErrorList {
		return validateNamespace(ns, base, lines)
	})
	if len(errs) > 0 {
		return nil, errs
	}
	ns.Spec = nil
	ns.Metadata.Namespace = ""
	return &Document{File: file, Line: n.Line, Namespace: ns, Zeros: w.explicitZeros(base), nameLine: w.lineOf(child(base, "metadata.name"))}, nil
}
