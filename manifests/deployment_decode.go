package manifests

import (
	"reflect"

	"gopkg.in/yaml.v3"
	appsv1 "k8s.io/api/apps/v1"
)

var (
	deploymentType = reflect.TypeOf(Deployment{})
	k8sDeployment  = reflect.TypeOf(appsv1.Deployment{})
)

// decodeDeployment walks one Deployment mapping, whose apiVersion and kind
// decodeObject has checked. base is its path inside the document ("" or
// items[i]).
func decodeDeployment(file string, n *yaml.Node, base string) (*Document, ErrorList) {
	dep := &Deployment{}
	w, errs := decodeInto(file, n, base, dep, k8sDeployment, func(lines map[string]int) ErrorList {
		return validate(dep, base, lines)
	})
	if len(errs) > 0 {
		return nil, errs
	}
	replicasSet := dep.Spec.Replicas != nil
	_, pausedSet := w.lines[child(base, "spec.paused")]
	SetDefaults(dep)
	return &Document{File: file, Line: n.Line, Deployment: dep, ReplicasSet: replicasSet, PausedSet: pausedSet, Ignored: w.ignored, Zeros: w.explicitZeros(base), nameLine: w.lineOf(child(base, "metadata.name"))}, nil
}

// decodeInto walks the object mapping n into obj (a pointer to one of
// dockctl's kinds), checking every key against Kubernetes' type k8s, then
// runs check (the kind's validation, given the line of every path seen) on
// the value as written. It returns the walker, for the lines, and every
// error: a validation error on a path that could not be decoded is left
// out, as it would only echo the decode error.
func decodeInto(file string, n *yaml.Node, base string, obj any, k8s reflect.Type, check func(lines map[string]int) ErrorList) (*walker, ErrorList) {
	w := &walker{file: file, lines: map[string]int{base: n.Line}}
	w.walk(n, reflect.ValueOf(obj).Elem(), k8s, base)
	errs := w.errs
	for _, fe := range check(w.lines) {
		if !w.overlapsBad(fe.Path) {
			fe.File = file
			errs = append(errs, fe)
		}
	}
	return w, errs
}
