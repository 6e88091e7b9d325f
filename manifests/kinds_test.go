package manifests

import (
	"testing"

	"gopkg.in/yaml.v3"
)

// TestDecodeDispatchesOnKind checks that a kind is decoded by the decoder
// registered for it, as a document and as a List item, after its
// apiVersion is checked against that registration, and that the
// Deployment decoder still serves Deployments.
func TestDecodeDispatchesOnKind(t *testing.T) {
	var got []string
	kinds["Widget"] = kindDecoder{apiVersion: "example.com/v1", decode: func(file string, n *yaml.Node, base string) (*Document, ErrorList) {
		name, _ := scalarField(n, "name")
		got = append(got, base+"="+name)
		return &Document{File: file, Line: n.Line, Deployment: &Deployment{Metadata: ObjectMeta{Name: name}}}, nil
	}}
	t.Cleanup(func() { delete(kinds, "Widget") })

	in := "apiVersion: example.com/v1\nkind: Widget\nname: a\n---\n" +
		"apiVersion: v1\nkind: List\nitems:\n- {apiVersion: example.com/v1, kind: Widget, name: b}\n---\n" + base
	docs, err := Decode("w.yaml", []byte(in))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if len(docs) != 3 || docs[2].Deployment.Metadata.Name != "web" {
		t.Fatalf("got %d documents, want two widgets and the Deployment", len(docs))
	}
	if want := []string{"=a", "items[0]=b"}; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("widget decoder saw %q, want %q", got, want)
	}

	_, err = Decode("w.yaml", []byte("apiVersion: apps/v1\nkind: Widget\nname: c\n"))
	if want := `w.yaml:1: apiVersion: must be "example.com/v1", got "apps/v1"`; err == nil || err.Error() != want {
		t.Errorf("wrong apiVersion: got %v, want %s", err, want)
	}
}
