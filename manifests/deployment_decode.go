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
	w := &walker{file: file, lines: map[string]int{base: n.Line}}
	dep := &Deployment{}
	w.walk(n, reflect.ValueOf(dep).Elem(), k8sDeployment, base)
	errs := w.errs
	for _, fe := range validate(dep, base, w.lines) {
		if !w.overlapsBad(fe.Path) {
			fe.File = file
			errs = append(errs, fe)
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	replicasSet := dep.Spec.Replicas != nil
	_, pausedSet := w.lines[child(base, "spec.paused")]
	SetDefaults(dep)
	return &Document{File: file, Line: n.Line, Deployment: dep, ReplicasSet: replicasSet, PausedSet: pausedSet, nameLine: w.lineOf(child(base, "metadata.name"))}, nil
}
