package main

import (
	"testing"

	"github.com/dockctl/dockctl/manifests"
)

// An imagePullSecret is a use of its Secret (describe secret's Used By).
func TestTemplateRefsImagePullSecrets(t *testing.T) {
	ps := &manifests.PodSpec{
		ImagePullSecrets: []manifests.LocalObjectReference{{Name: "regcred"}},
		Containers:       []manifests.Container{{Name: "app", Image: "reg.example.com/app:1"}},
	}
	cms, secrets := templateRefs(ps)
	if !secrets["regcred"] || len(secrets) != 1 || len(cms) != 0 {
		t.Fatalf("templateRefs = %v, %v; want the Secret regcred only", cms, secrets)
	}
}
