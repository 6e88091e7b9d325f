package manifests

import (
	"fmt"
	"reflect"

	"gopkg.in/yaml.v3"
	appsv1 "k8s.io/api/apps/v1"
)

var (
	deploymentType = reflect.TypeOf(Deployment{})
	k8sDeployment  = reflect.TypeOf(appsv1.Deployment{})
)

// decodeDeployment walks one Deployment mapping. base is its path inside the
// document ("" or items[i]).
func decodeDeployment(file string, n *yaml.Node, base string) (*Document, ErrorList) {
	var errs ErrorList
	for _, want := range []struct{ field, value string }{{"apiVersion", APIVersion}, {"kind", Kind}} {
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
		// Checking the fields of some other kind against a Deployment
		// would only bury the one error that matters.
		return nil, errs
	}
	w := &walker{file: file, lines: map[string]int{base: n.Line}}
	dep := &Deployment{}
	w.walk(n, reflect.ValueOf(dep).Elem(), k8sDeployment, base)
	errs = w.errs
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
