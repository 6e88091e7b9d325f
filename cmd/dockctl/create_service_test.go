package main

import (
	"strings"
	"testing"
)

// create service TYPE prints, with --dry-run=client -o yaml, the Service
// kubectl's generator makes (golden files), and stores nothing.
func TestCreateServiceDryRunPrintsKubectlsService(t *testing.T) {
	for _, tt := range []struct {
		golden string
		args   []string
	}{
		{"create-service-clusterip", []string{"create", "service", "clusterip", "web", "--tcp=80:8080", "--tcp=443:https"}},
		{"create-service-clusterip-headless", []string{"create", "svc", "clusterip", "db", "--clusterip=None"}},
		{"create-service-nodeport", []string{"create", "service", "nodeport", "web", "--tcp=80", "--node-port=30080", "-n", "team"}},
		{"create-service-loadbalancer", []string{"create", "service", "loadbalancer", "lb", "--tcp=5678:8080"}},
	} {
		t.Run(tt.golden, func(t *testing.T) {
			dir := t.TempDir()
			out, errOut, err := run(t, "", append([]string{"--state-dir", dir}, withFlags(tt.args, "--dry-run=client", "-o", "yaml")...)...)
			if err != nil {
				t.Fatalf("%v stderr %q", err, errOut)
			}
			golden(t, tt.golden, []byte(out))
			if got, _, _ := run(t, "", "--state-dir", dir, "get", "svc", "-A", "-o", "name"); strings.TrimSpace(got) != "" {
				t.Fatalf("a dry run stored %q", got)
			}
		})
	}
}

// Without --dry-run the Service is stored as apply -f of its YAML would
// store it; a second create of its name is kubectl's AlreadyExists.
func TestCreateServiceStoresAndRefusesAnExistingName(t *testing.T) {
	dir := t.TempDir()
	out, errOut, err := run(t, "", "--state-dir", dir, "create", "service", "nodeport", "web", "--tcp=80:8080", "--node-port=30080")
	if err != nil || out != "service/web created\n" {
		t.Fatalf("%q %v %s", out, err, errOut)
	}
	got, _, err := run(t, "", "--state-dir", dir, "get", "svc", "web", "-o", `jsonpath={.spec.type} {.spec.ports[0].nodePort} {.spec.ports[0].targetPort} {.spec.selector.app}`)
	if err != nil || got != "NodePort 30080 8080 web" {
		t.Fatalf("stored Service: %q %v", got, err)
	}
	_, _, err = run(t, "", "--state-dir", dir, "create", "service", "clusterip", "web", "--tcp=80")
	if err == nil || !strings.Contains(err.Error(), `services "web" already exists`) {
		t.Fatalf("second create: %v, want AlreadyExists", err)
	}
}

// The flags' mistakes are kubectl's errors; an ExternalName Service is
// refused as its manifest is.
func TestCreateServiceErrors(t *testing.T) {
	for _, tt := range []struct {
		situation string
		args      []string
		want      string
	}{
		{"no port", []string{"clusterip", "web"}, "at least one tcp port specifier must be provided"},
		{"no port of a load balancer", []string{"loadbalancer", "web"}, "at least one tcp port specifier must be provided"},
		{"a port that is no number", []string{"clusterip", "web", "--tcp=http"}, `invalid port "http"`},
		{"a port out of range", []string{"clusterip", "web", "--tcp=70000"}, `invalid port "70000"`},
		{"a target port out of range", []string{"clusterip", "web", "--tcp=80:0"}, "must be between 1 and 65535, inclusive"},
		{"a bad target port name", []string{"clusterip", "web", "--tcp=80:Bad_Name"}, "must contain only alpha-numeric characters"},
		{"no name", []string{"clusterip", "--tcp=80"}, "exactly one NAME is required, got 0"},
		{"externalname without its name", []string{"externalname", "x"}, `required flag(s) "external-name" not set`},
		{"externalname of a bad name", []string{"externalname", "x", "--external-name=Bad_Name"}, "invalid service external name Bad_Name"},
		{"externalname, unsupported", []string{"externalname", "x", "--external-name=bar.com"}, `unsupported value "ExternalName"`},
	} {
		t.Run(tt.situation, func(t *testing.T) {
			_, _, err := run(t, "", append([]string{"--state-dir", t.TempDir(), "create", "service"}, tt.args...)...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want %q", err, tt.want)
			}
		})
	}
}
