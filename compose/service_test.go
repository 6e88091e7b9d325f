package compose

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dockctl/dockctl/manifests"
)

func convertText(t *testing.T, text string) (*Result, error) {
	t.Helper()
	return convertIn(t, t.TempDir(), text)
}

// convertIn converts text as dir/compose.yaml: dir is the project
// directory, where a test puts the files the project reads.
func convertIn(t *testing.T, dir, text string) (*Result, error) {
	t.Helper()
	writeFile(t, filepath.Join(dir, "compose.yaml"), []byte(text))
	return Convert(context.Background(), Options{Files: []string{filepath.Join(dir, "compose.yaml")}, Environ: testEnviron})
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// Every converted Service has ports dockctl accepts: protocol TCP or UDP
// (its Service proxy serves no SCTP) and numbers in 1..65535; otherwise
// the conversion warns and drops the port, or fails.
func TestConvertedServicePortsAreValid(t *testing.T) {
	for _, tt := range []struct{ name, text string }{
		{"expose with unknown protocol", "name: n\nservices:\n  web:\n    image: a\n    expose: [\"80/foo\"]\n"},
		{"expose out of range", "name: n\nservices:\n  web:\n    image: a\n    expose: [\"99999\"]\n"},
		{"published out of range", "name: n\nservices:\n  web:\n    image: a\n    ports: [\"70000:80\"]\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := convertText(t, tt.text)
			if err != nil {
				return // refusing is fine
			}
			for _, o := range res.Objects {
				svc, ok := o.Value.(*manifests.Service)
				if !ok {
					continue
				}
				for _, p := range svc.Spec.Ports {
					if p.Protocol != "TCP" && p.Protocol != "UDP" {
						t.Errorf("Service %s port %s: protocol %q", o.Name, p.Name, p.Protocol)
					}
					if p.Port < 1 || p.Port > 65535 {
						t.Errorf("Service %s port %s: port %d", o.Name, p.Name, p.Port)
					}
					if len(p.Name) > 15 || strings.ToLower(p.Name) != p.Name {
						t.Errorf("Service %s: invalid port name %q", o.Name, p.Name)
					}
				}
			}
		})
	}
}

// An SCTP port, valid on a cluster, is one dockctl's Service proxy does
// not serve and apply refuses: it is warned and left out, so that the
// rest of the set applies.
func TestSCTPPortsAreWarned(t *testing.T) {
	for _, tt := range []struct{ name, ports, key, want string }{
		{"published", "ports: [\"6000:6000/sctp\"]", "ports[0]", "protocol \"sctp\" not converted"},
		{"exposed", "expose: [\"5000/sctp\"]", "expose[0]", "\"5000/sctp\" not converted"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := convertAccepted(t, "name: n\nservices:\n  web:\n    image: a\n    "+tt.ports+"\n")
			warned(t, res, "web", tt.key, tt.want)
		})
	}
}

// A published port 0 is Docker's "pick a free one", as an absent one is:
// the LoadBalancer port is the container's, warned, never a port 0 that
// apply refuses.
func TestPublishedPortZeroIsPublishedOnTheContainersPort(t *testing.T) {
	for _, tt := range []struct{ name, ports string }{
		{"absent", "[\"80\"]"},
		{"zero", "[\"0:80\"]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := convertAccepted(t, "name: n\nservices:\n  web:\n    image: a\n    ports: "+tt.ports+"\n")
			warned(t, res, "web", "ports[0]", "no published port (Docker would pick one): published on 80")
		})
	}
}

// Two services whose objects would share a name are refused, not merged.
func TestServiceNameCollisionsAreRefused(t *testing.T) {
	for _, tt := range []struct{ name, text string }{
		{"web published and web-published", "name: n\nservices:\n  web:\n    image: a\n    ports: [\"80:80\"]\n  web-published:\n    image: b\n"},
		{"web_1 and web-1", "name: n\nservices:\n  web_1:\n    image: a\n  web-1:\n    image: b\n"},
		{"web env and web-env config", "name: n\nservices:\n  web:\n    image: a\n    environment: {A: b}\n  web-env:\n    image: b\n    environment: {A: b}\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := convertText(t, tt.text)
			if err != nil {
				return
			}
			seen := map[string]bool{}
			for _, o := range res.Objects {
				k := o.Kind + "/" + o.Name
				if seen[k] {
					t.Errorf("two objects %s", k)
				}
				seen[k] = true
			}
		})
	}
}

// decodes fails the test unless the converted objects are what `dockctl
// apply -f` accepts: manifests.DecodeAll validates them as the API server
// would.
func decodes(t *testing.T, res *Result) {
	t.Helper()
	y, err := res.YAML()
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := manifests.DecodeAll("converted.yaml", y, manifests.LoadOptions{}); err != nil {
		t.Fatalf("converted manifests are refused: %v\n%s", err, y)
	}
}

// convertAccepted converts text, failing the test unless that succeeds
// and the objects are what `dockctl apply -f` accepts (decodes).
func convertAccepted(t *testing.T, text string) *Result {
	t.Helper()
	res, err := convertText(t, text)
	if err != nil {
		t.Fatal(err)
	}
	decodes(t, res)
	return res
}

// warned fails the test unless a warning of service about key contains
// want.
func warned(t *testing.T, res *Result, service, key, want string) {
	t.Helper()
	for _, w := range res.Warnings {
		if w.Service == service && w.Key == key && strings.Contains(w.Msg, want) {
			return
		}
	}
	t.Fatalf("no warning of service %q, key %q containing %q in %v", service, key, want, res.Warnings)
}

// A variable whose name Kubernetes refuses (since 1.34 only a name with
// '=' or a character that is not printable ASCII) is warned and left out,
// never a manifest the API server refuses nor a variable dropped unsaid.
func TestEnvironmentNamesKubernetesRefusesAreWarned(t *testing.T) {
	for _, tt := range []struct{ name, variable string }{
		{"a tab in the name", "A\tB"},
		{"a letter that is not ASCII", "ÉTÉ"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := convertAccepted(t, "name: n\nservices:\n  a:\n    image: x\n    environment:\n      - \""+strings.ReplaceAll(tt.variable, "\t", `\t`)+"=v\"\n      - GOOD=v\n")
			warned(t, res, "a", "environment", strconv.Quote(tt.variable))
			for _, o := range res.Objects {
				if cm, ok := o.Value.(*manifests.ConfigMap); ok && cm.Data["GOOD"] != "v" {
					t.Errorf("ConfigMap %s lost GOOD: %v", o.Name, cm.Data)
				}
			}
		})
	}
}

// TestEnvironmentNamesKubernetesTakesAreConverted: a name Kubernetes 1.34
// takes (any printable ASCII but '=') is converted, unwarned: a ConfigMap
// key ("1BAD", "log.level") in the service's ConfigMap, any other name
// ("A B", "a:b") in the container's env, its '$' doubled so that the
// kubelet's $(VAR) expansion leaves the value as Compose passes it.
func TestEnvironmentNamesKubernetesTakesAreConverted(t *testing.T) {
	for _, tt := range []struct {
		name, variable, value string
		inConfigMap           bool
		envValue              string // the container env's value when not in the ConfigMap
	}{
		{"a digit first", "1BAD", "v", true, ""},
		{"a dot", "log.level", "debug", true, ""},
		{"a space", "A B", "v", false, "v"},
		{"a colon, a value with $(VAR)", "a:b", "$(HOME)-$$", false, "$$(HOME)-$$$$"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := convertAccepted(t, "name: n\nservices:\n  a:\n    image: x\n    environment:\n      "+strconv.Quote(tt.variable)+": '"+strings.ReplaceAll(tt.value, "$", "$$")+"'\n")
			for _, w := range res.Warnings {
				if w.Key == "environment" {
					t.Errorf("warned: %v", w)
				}
			}
			var cmValue, envValue string
			var inCM, inEnv bool
			for _, o := range res.Objects {
				switch v := o.Value.(type) {
				case *manifests.ConfigMap:
					cmValue, inCM = v.Data[tt.variable]
				case *manifests.Deployment:
					for _, e := range v.Spec.Template.Spec.Containers[0].Env {
						if e.Name == tt.variable {
							envValue, inEnv = e.Value, true
						}
					}
				}
			}
			switch {
			case tt.inConfigMap && (!inCM || cmValue != tt.value || inEnv):
				t.Errorf("ConfigMap value %q (present %v), in env %v; want %q in the ConfigMap only", cmValue, inCM, inEnv, tt.value)
			case !tt.inConfigMap && (!inEnv || envValue != tt.envValue || inCM):
				t.Errorf("env value %q (present %v), in ConfigMap %v; want %q in the env only", envValue, inEnv, inCM, tt.envValue)
			}
		})
	}
}

// Every name made is one Kubernetes takes, whatever the Compose names: a
// depends_on wait's init container is a DNS-1123 label of at most 63
// characters, unique among the pod's containers; a service, volume,
// secret or config without a letter or digit ("_", "--") still names a
// valid object.
func TestConvertedNamesAreValid(t *testing.T) {
	long := strings.Repeat("d", 60)
	for _, tt := range []struct{ name, text string }{
		{"a dependency with a long name", "name: n\nservices:\n  " + long + ":\n    image: x\n    expose: [\"80\"]\n  b:\n    image: x\n    depends_on: [" + long + "]\n"},
		{"two long dependencies alike but their ends", "name: n\nservices:\n  " + long + "1:\n    image: x\n    expose: [\"80\"]\n  " + long + "2:\n    image: x\n    expose: [\"80\"]\n  b:\n    image: x\n    depends_on: [" + long + "1, " + long + "2]\n"},
		{"a service called _", "name: n\nservices:\n  _:\n    image: x\n"},
		{"a volume called __", "name: n\nservices:\n  a:\n    image: x\n    volumes: [\"__:/data\"]\nvolumes:\n  __: {}\n"},
		{"a secret called _", "name: n\nservices:\n  a:\n    image: x\n    secrets: [\"_\"]\nsecrets:\n  _:\n    environment: PATH\n"},
		{"a config called --", "name: n\nservices:\n  a:\n    image: x\n    configs: [\"--\"]\nconfigs:\n  \"--\":\n    content: x\n"},
		{"the service named as its wait", "name: n\nservices:\n  db:\n    image: x\n    expose: [\"80\"]\n  wait-for-db:\n    image: x\n    depends_on: [db]\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			convertAccepted(t, tt.text)
		})
	}
}

// An extra_hosts entry becomes a hostAlias only with an IP address, which
// Kubernetes requires, for a DNS-1123 host name; Docker's host-gateway (the
// daemon's own address), a name for the address or another host name is
// warned.
func TestExtraHostsWithoutAnIPAreWarned(t *testing.T) {
	for _, tt := range []struct{ name, entry, host string }{
		{"host-gateway", "host.docker.internal:host-gateway", "host.docker.internal"},
		{"a name, not an address", "db.local=db.example.com", "db.local"},
		{"a host name that is no DNS-1123 subdomain", "My_Host=10.0.0.2", "My_Host"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := convertAccepted(t, "name: n\nservices:\n  a:\n    image: x\n    extra_hosts:\n      - \""+tt.entry+"\"\n      - \"ok.local=10.0.0.1\"\n")
			warned(t, res, "a", "extra_hosts", tt.host)
			d := res.Objects[len(res.Objects)-1].Value.(*manifests.Deployment)
			if ha := d.Spec.Template.Spec.HostAliases; len(ha) != 1 || ha[0].IP != "10.0.0.1" {
				t.Errorf("hostAliases %+v, want ok.local's alone", ha)
			}
		})
	}
}

// A hostname becomes the pod's only when Kubernetes takes it (a DNS-1123
// label); a name with dots or capitals, which Docker takes, is warned.
func TestHostnameKubernetesRefusesIsWarned(t *testing.T) {
	for _, tt := range []struct{ name, hostname, want string }{
		{"a fully qualified name", "web.example.com", ""},
		{"capitals and an underscore", "My_Host", ""},
		{"a DNS-1123 label", "web-1", "web-1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := convertAccepted(t, "name: n\nservices:\n  a:\n    image: x\n    hostname: "+tt.hostname+"\n")
			d := res.Objects[len(res.Objects)-1].Value.(*manifests.Deployment)
			if got := d.Spec.Template.Spec.Hostname; got != tt.want {
				t.Errorf("hostname %q, want %q", got, tt.want)
			}
			if tt.want == "" {
				warned(t, res, "a", "hostname", tt.hostname)
			}
		})
	}
}

// A healthcheck's zero interval, timeout or retries means Docker's default
// (the Engine API: "0 means inherit"), so the probe has Docker's 30s, 30s
// and 3, not a check every second that fails after one.
func TestHealthcheckZeroMeansDockersDefault(t *testing.T) {
	for _, tt := range []struct{ name, hc string }{
		{"all zero", "      interval: 0s\n      timeout: 0s\n      retries: 0\n"},
		{"unset", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := convertText(t, "name: n\nservices:\n  a:\n    image: x\n    healthcheck:\n      test: [\"CMD\", \"true\"]\n"+tt.hc)
			if err != nil {
				t.Fatal(err)
			}
			d := res.Objects[len(res.Objects)-1].Value.(*manifests.Deployment)
			p := d.Spec.Template.Spec.Containers[0].ReadinessProbe
			if p == nil || p.PeriodSeconds != 30 || p.TimeoutSeconds != 30 || p.FailureThreshold != 3 {
				t.Fatalf("probe %+v, want period 30, timeout 30, failureThreshold 3", p)
			}
		})
	}
}

// A tmpfs mount's size is the emptyDir's sizeLimit, in the short syntax
// (tmpfs: /run:size=64m) as in the long one; an option an emptyDir has no
// equivalent of (mode, uid, noexec...) is warned, never dropped unsaid.
func TestTmpfsOptionsAreKeptOrWarned(t *testing.T) {
	for _, tt := range []struct {
		name, mounts string
		size         string // the sizeLimit wanted, "" for none
		key, warn    string // the warning wanted, "" for none
	}{
		{"short syntax size", "    tmpfs: /run:size=64m\n", "64Mi", "", ""},
		{"short syntax mode", "    tmpfs: /run:mode=1777\n", "", "tmpfs", "mode=1777"},
		{"short syntax size and noexec", "    tmpfs: [\"/run:size=1g,noexec\"]\n", "1Gi", "tmpfs", "noexec"},
		{"long syntax mode", "    volumes:\n      - type: tmpfs\n        target: /run\n        tmpfs:\n          size: 1024\n          mode: 0o1777\n", "1Ki", "volumes[0]", "mode"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := convertAccepted(t, "name: n\nservices:\n  a:\n    image: x\n"+tt.mounts)
			d := res.Objects[len(res.Objects)-1].Value.(*manifests.Deployment)
			vols := d.Spec.Template.Spec.Volumes
			if len(vols) != 1 || vols[0].EmptyDir == nil || vols[0].EmptyDir.Medium != "Memory" {
				t.Fatalf("volumes %+v, want one memory emptyDir", vols)
			}
			got := ""
			if q := vols[0].EmptyDir.SizeLimit; q != nil {
				got = q.String()
			}
			if got != tt.size {
				t.Errorf("sizeLimit %q, want %q", got, tt.size)
			}
			if tt.warn != "" {
				warned(t, res, "a", tt.key, tt.warn)
			} else if len(res.Warnings) > 0 {
				t.Errorf("warnings %v", res.Warnings)
			}
		})
	}
}

// An empty entrypoint clears the image's, so that Docker runs the command
// itself: Kubernetes' command (which replaces ENTRYPOINT and drops CMD) is
// that command. Only without a command is nothing left to say it.
func TestEmptyEntrypointRunsTheCommand(t *testing.T) {
	for _, tt := range []struct {
		name, keys      string
		command, args   []string
		warnKey, warned string
	}{
		{"empty entrypoint and a command", "    entrypoint: []\n    command: [\"/bin/app\", \"-v\"]\n", []string{"/bin/app", "-v"}, nil, "", ""},
		{"empty entrypoint as a string and a command", "    entrypoint: \"\"\n    command: /bin/app -v\n", []string{"/bin/app", "-v"}, nil, "", ""},
		{"empty entrypoint alone", "    entrypoint: []\n", nil, nil, "entrypoint", "empty entrypoint"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := convertText(t, "name: n\nservices:\n  a:\n    image: x\n"+tt.keys)
			if err != nil {
				t.Fatal(err)
			}
			d := res.Objects[len(res.Objects)-1].Value.(*manifests.Deployment)
			ctr := d.Spec.Template.Spec.Containers[0]
			if !slices.Equal(ctr.Command, tt.command) || !slices.Equal(ctr.Args, tt.args) {
				t.Errorf("command %q args %q, want %q %q", ctr.Command, ctr.Args, tt.command, tt.args)
			}
			if tt.warned != "" {
				warned(t, res, "a", tt.warnKey, tt.warned)
			} else if len(res.Warnings) > 0 {
				t.Errorf("warnings %v", res.Warnings)
			}
		})
	}
}

// A secret's or config's file outside the project directory (an absolute
// path, ../, or a link leading out) is read, as Compose reads it, and
// warned: its content is copied into the manifest and the store, where
// Compose only mounts the file.
func TestFileObjectsOutsideTheProjectAreWarned(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "id_key")
	writeFile(t, outside, []byte("private\n"))
	for _, tt := range []struct {
		name, file string
		link       bool // file is a link in the project to outside
		warn       bool
	}{
		{"an absolute path outside", outside, false, true},
		{"a link in the project leading out", "./key", true, true},
		{"a file in the project", "./key", false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			switch {
			case tt.link:
				if err := os.Symlink(outside, filepath.Join(dir, "key")); err != nil {
					t.Fatal(err)
				}
			default:
				writeFile(t, filepath.Join(dir, "key"), []byte("k\n"))
			}
			res, err := convertIn(t, dir, "name: n\nservices:\n  a:\n    image: x\n    secrets: [s]\n    configs: [c]\nsecrets:\n  s:\n    file: "+tt.file+"\nconfigs:\n  c:\n    file: "+tt.file+"\n")
			if err != nil {
				t.Fatal(err)
			}
			if tt.warn {
				warned(t, res, "", "secrets.s", "outside the project directory")
				warned(t, res, "", "configs.c", "outside the project directory")
			} else if len(res.Warnings) > 0 {
				t.Errorf("warnings %v", res.Warnings)
			}
		})
	}
}

// In the host's network (network_mode: host) Docker discards published
// ports: the container's ports are the host's. No LoadBalancer Service is
// made for them (its proxy would take the host port the container binds);
// each is warned.
func TestHostNetworkPortsAreNotPublished(t *testing.T) {
	for _, tt := range []struct{ name, ports string }{
		{"same port", "[\"80:80\"]"},
		{"another port", "[\"8080:80\"]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := convertAccepted(t, "name: n\nservices:\n  a:\n    image: x\n    network_mode: host\n    ports: "+tt.ports+"\n")
			for _, o := range res.Objects {
				if svc, ok := o.Value.(*manifests.Service); ok && svc.Spec.Type == manifests.ServiceTypeLoadBalancer {
					t.Errorf("LoadBalancer Service %s made for a host-network service", o.Name)
				}
			}
			warned(t, res, "a", "ports[0]", "host")
		})
	}
}

// A secret or config larger than a Secret or ConfigMap holds (1 MiB, the
// API server's limit) is refused by name at conversion, with the way out
// (a bind mount), not made into an object apply refuses.
func TestFileObjectsOverTheSizeLimitAreRefused(t *testing.T) {
	for _, tt := range []struct{ name, section, key string }{
		{"secret", "secrets", "secrets.big"},
		{"config", "configs", "configs.big"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "big.bin"), bytes.Repeat([]byte("a"), manifests.MaxConfigSize+1))
			_, err := convertIn(t, dir, "name: n\nservices:\n  a:\n    image: x\n    "+tt.section+": [big]\n"+tt.section+":\n  big:\n    file: ./big.bin\n")
			if err == nil || !strings.Contains(err.Error(), tt.key) || !strings.Contains(err.Error(), "bind mount") {
				t.Fatalf("err %v, want a refusal naming %s and the bind mount", err, tt.key)
			}
		})
	}
}

// pid: host is Kubernetes' hostPID, as kompose maps it, which the
// controller's gate refuses without its flag (warned); another pid mode
// has no equivalent and is warned.
func TestPidHostIsHostPID(t *testing.T) {
	for _, tt := range []struct {
		name, pid string
		hostPID   bool
		warn      string
	}{
		{"host", "host", true, "--allow-host-namespaces"},
		{"a service's", "service:b", false, "not converted"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := convertAccepted(t, "name: n\nservices:\n  a:\n    image: x\n    pid: \""+tt.pid+"\"\n  b:\n    image: x\n")
			for _, o := range res.Objects {
				if d, ok := o.Value.(*manifests.Deployment); ok && o.Name == "a" && d.Spec.Template.Spec.HostPID != tt.hostPID {
					t.Errorf("hostPID %v, want %v", d.Spec.Template.Spec.HostPID, tt.hostPID)
				}
			}
			warned(t, res, "a", "pid", tt.warn)
		})
	}
}

// A service run by a provider (provider:, no image: Docker Model Runner,
// a cloud resource) has no container to convert: it is warned and makes
// no workload, never a Deployment without an image that apply refuses.
func TestProviderServicesAreWarnedNotConverted(t *testing.T) {
	for _, tt := range []struct{ name, text string }{
		{"a model provider", "name: n\nservices:\n  ai:\n    provider:\n      type: model\n      options:\n        model: ai/smollm2\n  app:\n    image: x\n    depends_on: [ai]\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := convertAccepted(t, tt.text)
			warned(t, res, "ai", "provider", "not converted")
			for _, o := range res.Objects {
				if o.Name == "ai" && (o.Kind == manifests.Kind || o.Kind == manifests.KindPod) {
					t.Errorf("%s/%s made for a provider service", o.Kind, o.Name)
				}
			}
		})
	}
}

// Two services published on one host port collide: Compose picks a free
// port for a port without a published one, the converted LoadBalancer
// takes the container's. The second service's port is warned, naming the
// first.
func TestHostPortPublishedTwiceIsWarned(t *testing.T) {
	for _, tt := range []struct{ name, a, b string }{
		{"two ports without a published one", "[\"80\"]", "[\"80\"]"},
		{"an explicit and an implicit one", "[\"8080:80\"]", "[\"8080\"]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := convertAccepted(t, "name: n\nservices:\n  a:\n    image: x\n    ports: "+tt.a+"\n  b:\n    image: x\n    ports: "+tt.b+"\n")
			warned(t, res, "b", "ports[0]", "also published by service a")
		})
	}
}

// service_healthy on a dependency without a healthcheck in the Compose
// file waits, in Compose, for the image's HEALTHCHECK, which no manifest
// sees: the wait is then only for the port, and that is warned.
func TestServiceHealthyWithoutHealthcheckIsWarned(t *testing.T) {
	for _, tt := range []struct {
		name, db string
		warn     bool
	}{
		{"no healthcheck: the image's", "    image: db\n    expose: [\"5432\"]\n", true},
		{"a healthcheck", "    image: db\n    expose: [\"5432\"]\n    healthcheck:\n      test: [\"CMD\", \"true\"]\n", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := convertAccepted(t, "name: n\nservices:\n  db:\n"+tt.db+"  app:\n    image: x\n    depends_on:\n      db:\n        condition: service_healthy\n")
			if tt.warn {
				warned(t, res, "app", "depends_on.db", "HEALTHCHECK")
			} else if i := slices.IndexFunc(res.Warnings, func(w Warning) bool { return w.Service != "" }); i >= 0 {
				t.Errorf("warning %v", res.Warnings[i])
			}
		})
	}
}

// A value Kubernetes refuses, or has no place for, is warned naming the
// key, and the rest converts to objects apply accepts:
//   - a secret's or config's mode beyond the permission bits (setuid,
//     sticky): defaultMode takes 0 to 0777, the permission bits are kept;
//   - a port's name and app_protocol: the Services' port names are
//     PROTO-PORT, and dockctl has no appProtocol;
//   - a healthcheck test naming no command (["CMD"]): an exec probe needs
//     one, so no probe is made;
//   - a numeric user or group outside 0..2147483647 (runAsUser's range);
//   - a reservation above its limit (Compose runs it: Docker applies no
//     CPU reservation outside a swarm): Kubernetes refuses a request above
//     the limit, and one left out defaults to the limit.
func TestValuesKubernetesRefusesAreWarned(t *testing.T) {
	const svc = "name: n\nservices:\n  a:\n    image: x\n"
	for _, tt := range []struct{ name, text, key, want string }{
		{"a secret's setuid mode", svc + "    secrets:\n      - source: s\n        mode: 0o4755\nsecrets:\n  s:\n    environment: PATH\n", "secrets[0]", "mode"},
		{"a config's sticky mode", svc + "    configs:\n      - source: c\n        mode: 0o1777\nconfigs:\n  c:\n    content: x\n", "configs[0]", "mode"},
		{"a port's name", svc + "    ports:\n      - name: web-interface\n        target: 80\n        published: \"8080\"\n", "ports[0]", "web-interface"},
		{"a port's app_protocol", svc + "    ports:\n      - target: 80\n        published: \"8080\"\n        app_protocol: http\n", "ports[0]", "http"},
		{"a healthcheck of CMD alone", svc + "    healthcheck:\n      test: [\"CMD\"]\n", "healthcheck.test", "no command"},
		{"a negative uid", svc + "    user: \"-5\"\n", "user", "not converted"},
		{"a uid past 2^31-1", svc + "    user: \"4294967295\"\n", "user", "not converted"},
		{"a negative gid", svc + "    user: \"1000:-1\"\n", "user", "not converted"},
		{"cpus reserved above the limit", svc + "    deploy:\n      resources:\n        limits: {cpus: \"0.5\"}\n        reservations: {cpus: \"2\"}\n", "deploy.resources.reservations", "cpu"},
		{"memory reserved above the limit", svc + "    deploy:\n      resources:\n        limits: {memory: 100M}\n        reservations: {memory: 200M}\n", "deploy.resources.reservations", "memory"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			warned(t, convertAccepted(t, tt.text), "a", tt.key, tt.want)
		})
	}
}

// A variable whose value is not UTF-8 (an env_file in Latin-1) is warned:
// a ConfigMap holds text, and the bytes Docker would pass as they are
// would reach the container as U+FFFD.
func TestEnvironmentValuesNotUTF8AreWarned(t *testing.T) {
	for _, tt := range []struct{ name, value string }{
		{"Latin-1", "caf\xe9"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "app.env"), []byte("NAME="+tt.value+"\n"))
			res, err := convertIn(t, dir, "name: n\nservices:\n  a:\n    image: x\n    env_file: app.env\n")
			if err != nil {
				t.Fatal(err)
			}
			warned(t, res, "a", "environment", "NAME")
		})
	}
}

// A dependency Compose runs once (restart: "no" or on-failure, a Pod) is
// ready only while it runs: a wait for it that starts after it has ended
// never ends. That is warned, naming the dependency.
func TestWaitForARunOnceDependencyIsWarned(t *testing.T) {
	for _, tt := range []struct{ name, restart string }{
		{"restart no", "\"no\""},
		{"restart on-failure", "on-failure"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := convertAccepted(t, "name: n\nservices:\n  init:\n    image: x\n    restart: "+tt.restart+"\n    expose: [\"80\"]\n  app:\n    image: x\n    depends_on: [init]\n")
			warned(t, res, "app", "depends_on.init", "runs once")
		})
	}
}

// An env_file outside the project directory (an absolute path, ../, or a
// link leading out) is read, as Compose reads it, and warned: its
// variables are copied into the NAME-env ConfigMap, text anyone who reads
// ConfigMaps can read. A missing optional one is nothing to say.
func TestEnvFilesOutsideTheProjectAreWarned(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "secrets.env")
	writeFile(t, outside, []byte("TOKEN=t\n"))
	for _, tt := range []struct {
		name, envFile string
		warn          bool
	}{
		{"an absolute path outside", outside, true},
		{"a file in the project", "./app.env", false},
		{"a missing optional file", "{path: ./none.env, required: false}", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "app.env"), []byte("A=b\n"))
			res, err := convertIn(t, dir, "name: n\nservices:\n  a:\n    image: x\n    env_file: ["+tt.envFile+"]\n")
			if err != nil {
				t.Fatal(err)
			}
			if tt.warn {
				warned(t, res, "a", "env_file", "outside the project directory")
			} else if len(res.Warnings) > 0 {
				t.Errorf("warnings %v", res.Warnings)
			}
		})
	}
}

// The depends_on waits' image, the one image convert adds that the user
// did not name, is warned once, so that an offline host is told what it
// needs before its pods wait in ImagePullBackOff; an image given with
// --wait-image is the user's and is not warned.
func TestDefaultWaitImageIsNamedOnce(t *testing.T) {
	const project = "name: n\nservices:\n  db:\n    image: db\n    expose: [\"5432\"]\n  a:\n    image: x\n    depends_on: [db]\n  b:\n    image: x\n    depends_on: [db]\n"
	res := convertAccepted(t, project)
	n := 0
	for _, w := range res.Warnings {
		if w.Key == "depends_on" && strings.Contains(w.Msg, DefaultWaitImage) && strings.Contains(w.Msg, "--wait-image") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d warnings name the wait image, want 1: %v", n, res.Warnings)
	}
}
